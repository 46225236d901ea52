package sim

import (
	"reflect"
	"testing"
)

func TestCountersWindowAndSums(t *testing.T) {
	earlier := Counters{
		{"a", "a", "syn"}: {Messages: 1, Bytes: 100, PayloadBytes: 48},
		{"a", "b", "syn"}: {Messages: 2, Bytes: 200, PayloadBytes: 96},
	}
	later := Counters{
		{"a", "a", "syn"}: {Messages: 1, Bytes: 100, PayloadBytes: 48},
		{"a", "b", "syn"}: {Messages: 5, Bytes: 500, PayloadBytes: 240, DroppedMessages: 1, DroppedBytes: 100},
		{"b", "a", "ack"}: {Messages: 1, Bytes: 60, PayloadBytes: 8},
	}
	window := later.Sub(earlier)
	wantWindow := Counters{
		{"a", "b", "syn"}: {Messages: 3, Bytes: 300, PayloadBytes: 144, DroppedMessages: 1, DroppedBytes: 100},
		{"b", "a", "ack"}: {Messages: 1, Bytes: 60, PayloadBytes: 8},
	}
	if !reflect.DeepEqual(window, wantWindow) {
		t.Fatalf("window = %v, want %v", window, wantWindow)
	}
	tests := []struct {
		name string
		got  Counter
		want Counter
	}{
		{"total", later.Total(), Counter{Messages: 7, Bytes: 660, PayloadBytes: 296, DroppedMessages: 1, DroppedBytes: 100}},
		{"interdc", later.InterDC(), Counter{Messages: 6, Bytes: 560, PayloadBytes: 248, DroppedMessages: 1, DroppedBytes: 100}},
		{"kind syn", later.Sum(func(k CounterKey) bool { return k.Kind == "syn" }), Counter{Messages: 6, Bytes: 600, PayloadBytes: 288, DroppedMessages: 1, DroppedBytes: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
	wantKeys := []CounterKey{{"a", "a", "syn"}, {"a", "b", "syn"}, {"b", "a", "ack"}}
	if got := later.Keys(); !reflect.DeepEqual(got, wantKeys) {
		t.Fatalf("keys = %v, want %v", got, wantKeys)
	}
}
