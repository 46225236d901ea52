package ring

import (
	"math"
	"testing"
)

func TestRangeContains(t *testing.T) {
	tests := []struct {
		name  string
		rg    Range
		token Token
		want  bool
	}{
		{"start is excluded", Range{10, 20}, 10, false},
		{"inside", Range{10, 20}, 15, true},
		{"end is included", Range{10, 20}, 20, true},
		{"past the end", Range{10, 20}, 21, false},
		{"wrapping: above start", Range{math.MaxUint64 - 5, 5}, math.MaxUint64, true},
		{"wrapping: zero", Range{math.MaxUint64 - 5, 5}, 0, true},
		{"wrapping: end", Range{math.MaxUint64 - 5, 5}, 5, true},
		{"wrapping: start is excluded", Range{math.MaxUint64 - 5, 5}, math.MaxUint64 - 5, false},
		{"wrapping: outside", Range{math.MaxUint64 - 5, 5}, 6, false},
		{"whole ring contains its bound", Range{7, 7}, 7, true},
		{"whole ring contains anything", Range{7, 7}, 123456, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rg.Contains(tt.token); got != tt.want {
				t.Errorf("%+v.Contains(%d) = %v, want %v", tt.rg, tt.token, got, tt.want)
			}
		})
	}
}

func TestRangeFraction(t *testing.T) {
	tests := []struct {
		name string
		rg   Range
		want float64
	}{
		{"quarter", Range{0, 1 << 62}, 0.25},
		{"wrapping half", Range{3 << 62, 1 << 62}, 0.5},
		{"whole ring", Range{9, 9}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rg.Fraction(); got != tt.want {
				t.Errorf("%+v.Fraction() = %v, want %v", tt.rg, got, tt.want)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	const top = math.MaxUint64
	tests := []struct {
		name   string
		ranges []Range
		want   bool
	}{
		{"none", nil, false},
		{"whole ring", []Range{{7, 7}}, true},
		{"a ring's ranges, wrapping one included", []Range{{10, 20}, {20, top - 5}, {top - 5, 10}}, true},
		{"in any order", []Range{{top - 5, 10}, {20, top - 5}, {10, 20}}, true},
		{"a gap of one token", []Range{{10, 20}, {21, top - 5}, {top - 5, 10}}, false},
		{"wrapping just below the top", []Range{{top - 1, 5}, {5, top - 1}}, true},
		{"ending at top, then from top", []Range{{0, top}, {top, 0}}, true},
		{"token zero missing", []Range{{0, top}}, false},
		{"a half twice is not the whole", []Range{{0, 1 << 63}, {0, 1 << 63}}, false},
		{"overlapping halves", []Range{{0, 1 << 63}, {1 << 62, 0}}, true},
		{"one ring range of many", []Range{{10, 20}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Covers(tt.ranges); got != tt.want {
				t.Errorf("Covers(%v) = %v, want %v", tt.ranges, got, tt.want)
			}
		})
	}
}
