package transport

import (
	"reflect"
	"sync"
	"testing"
)

func TestStats(t *testing.T) {
	mutate := RegisterKind(207, "test_stats_mutate")
	read := RegisterKind(208, "test_stats_read")
	var stats Stats // the zero value must be usable
	adds := []struct {
		from, to string
		kind     Kind
		bytes    int
	}{
		{"a", "b", mutate, 100},
		{"a", "b", mutate, 50},
		{"a", "b", read, 10},
		{"b", "a", mutate, 7},
		{"a", "a", read, 1000},
	}
	for _, add := range adds {
		stats.counters(add.from, add.to).add(add.kind, add.bytes)
	}
	want := map[Flow]Counter{
		{"a", "b", mutate}: {Messages: 2, Bytes: 150},
		{"a", "b", read}:   {Messages: 1, Bytes: 10},
		{"b", "a", mutate}: {Messages: 1, Bytes: 7},
		{"a", "a", read}:   {Messages: 1, Bytes: 1000},
	}
	if got := stats.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot() = %v, want %v", got, want)
	}
	if got := stats.InterDCBytes(); got != 167 {
		t.Errorf("InterDCBytes() = %d, want 167", got)
	}
	if got := stats.Total(); got != (Counter{Messages: 5, Bytes: 1167}) {
		t.Errorf("Total() = %+v", got)
	}
}

func TestStatsConcurrent(t *testing.T) {
	kind := RegisterKind(209, "test_stats_concurrent")
	stats := NewStats()
	const goroutines, perGoroutine = 8, 500
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perGoroutine {
				stats.counters("x", "y").add(kind, 3)
			}
		})
	}
	wg.Wait()
	want := Counter{Messages: goroutines * perGoroutine, Bytes: 3 * goroutines * perGoroutine}
	if got := stats.Snapshot()[Flow{"x", "y", kind}]; got != want {
		t.Errorf("counter = %+v, want %+v", got, want)
	}
}
