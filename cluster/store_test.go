package cluster

import "testing"

func TestNodeEqualComparesTheTier(t *testing.T) {
	tests := []struct {
		a, b Node
		want bool
	}{
		{Node{ID: "a", Tier: 1}, Node{ID: "a", Tier: 1}, true},
		{Node{ID: "a"}, Node{ID: "a", Tier: 1}, false},
	}
	for _, tt := range tests {
		if got := tt.a.Equal(tt.b); got != tt.want {
			t.Errorf("%+v.Equal(%+v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
