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

// TestEncodeNodeRoundTrip: an entry reads back as it was stored, its born generation
// included.
func TestEncodeNodeRoundTrip(t *testing.T) {
	n := Node{ID: "a", DC: "x", Addr: "a:1", Tokens: []uint64{3}, Status: StatusJoining, Generation: 9, Born: 7, Tier: 1}
	raw, err := EncodeNode(n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeNode([]byte("a"), raw)
	if err != nil || !got.Equal(n) {
		t.Errorf("decoded %+v, %v; want %+v", got, err, n)
	}
	if n.Equal(Node{ID: "a", DC: "x", Addr: "a:1", Tokens: []uint64{3}, Status: StatusJoining, Generation: 9, Tier: 1}) {
		t.Error("entries of different born generations are equal")
	}
}
