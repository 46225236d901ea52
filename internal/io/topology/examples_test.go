package topology

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestExampleNames(t *testing.T) {
	want := []string{"lan-3", "power-16", "three-dc", "tokyo-saopaulo", "two-dc-6"}
	if got := ExampleNames(); !reflect.DeepEqual(got, want) {
		t.Errorf("ExampleNames() = %v, want %v", got, want)
	}
}

func TestExamples(t *testing.T) {
	tests := []struct {
		name       string
		nodesPerDC map[string]int
		from, to   string
		want       LinkSpec
	}{
		{"tokyo-saopaulo", map[string]int{"tokyo": 2, "saopaulo": 1}, "saopaulo", "tokyo",
			LinkSpec{Latency: 192 * time.Millisecond, BandwidthBps: 3.29e6}},
		{"tokyo-saopaulo", map[string]int{"tokyo": 2, "saopaulo": 1}, "tokyo", "tokyo",
			LinkSpec{Latency: 195500 * time.Nanosecond, BandwidthBps: 147e6}},
		{"three-dc", map[string]int{"tokyo": 3, "frankfurt": 3, "virginia": 3}, "tokyo", "frankfurt",
			LinkSpec{Latency: 60 * time.Millisecond, BandwidthBps: 1e9}},
		{"three-dc", map[string]int{"tokyo": 3, "frankfurt": 3, "virginia": 3}, "virginia", "virginia",
			LinkSpec{Latency: 250 * time.Microsecond, BandwidthBps: 10e9}},
		{"lan-3", map[string]int{"lan": 3}, "lan", "lan", LinkSpec{}},
		{"power-16", map[string]int{"lan": 16}, "lan", "lan", LinkSpec{Latency: 50 * time.Microsecond, BandwidthBps: 1e9}},
		{"two-dc-6", map[string]int{"dc1": 3, "dc2": 3}, "dc1", "dc2", LinkSpec{Latency: 4 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.from+"-"+tt.to, func(t *testing.T) {
			topo, err := Example(tt.name)
			if err != nil {
				t.Fatalf("Example(%q): %v", tt.name, err)
			}
			if topo.Name != tt.name || topo.Description == "" {
				t.Errorf("name %q, description %q: want name %q and a description", topo.Name, topo.Description, tt.name)
			}
			nodesPerDC := make(map[string]int)
			for _, node := range topo.Nodes() {
				nodesPerDC[node.DC]++
			}
			if !reflect.DeepEqual(nodesPerDC, tt.nodesPerDC) {
				t.Errorf("nodes per DC = %v, want %v", nodesPerDC, tt.nodesPerDC)
			}
			got, err := topo.Link(tt.from, tt.to)
			if err != nil || got != tt.want {
				t.Errorf("Link(%s, %s) = %+v, %v; want %+v", tt.from, tt.to, got, err, tt.want)
			}
		})
	}
}

func TestExampleUnknown(t *testing.T) {
	if _, err := Example("nowhere"); !errors.Is(err, ErrUnknownExample) {
		t.Errorf("Example(nowhere) error = %v, want ErrUnknownExample", err)
	}
}
