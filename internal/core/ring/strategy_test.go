package ring

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// mixedRing has six evenly spaced nodes, walking from token 0 in the order
// n1(a) n2(a) n3(b) n4(a) n5(b) n6(c).
func mixedRing(t testing.TB) *Ring {
	return evenRing(t, "a", "a", "b", "a", "b", "c")
}

func TestSimpleReplicas(t *testing.T) {
	r := smallRing(t) // n1:{100} n2:{200,400} n3:{300}
	tests := []struct {
		name  string
		rf    int
		token Token
		want  []string
	}{
		{"primary is the successor", 1, 150, []string{"n2"}},
		{"primary owns a token equal to t", 1, 300, []string{"n3"}},
		{"distinct members in ring order", 2, 150, []string{"n2", "n3"}},
		{"skips a member's second vnode", 3, 250, []string{"n3", "n2", "n1"}},
		{"wraps past the top", 2, 401, []string{"n1", "n2"}},
		{"rf above member count gives all members", 5, 0, []string{"n1", "n2", "n3"}},
		{"rf zero gives none", 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(Simple(tt.rf).Replicas(r, tt.token)); !slices.Equal(got, tt.want) {
				t.Errorf("Simple(%d).Replicas(%d) = %v, want %v", tt.rf, tt.token, got, tt.want)
			}
		})
	}
}

func TestEachReplicas(t *testing.T) {
	r := mixedRing(t) // n1 a, n2 a, n3 b, n4 a, n5 b, n6 c, in token order
	tokens := EvenTokens(6)
	tests := []struct {
		name  string
		rf    int
		token Token
		want  []string
	}{
		{"one in every dc", 1, 0, []string{"n1", "n3", "n6"}},
		{"two in every dc, all of a dc that has fewer", 2, 0, []string{"n1", "n2", "n3", "n5", "n6"}},
		{"more than any dc has gives every node", 5, 0, []string{"n1", "n2", "n3", "n4", "n5", "n6"}},
		{"primary is the token's successor", 1, tokens[3] + 1, []string{"n5", "n6", "n1"}},
		{"rf zero gives none", 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(Each(tt.rf).Replicas(r, tt.token)); !slices.Equal(got, tt.want) {
				t.Errorf("Each(%d).Replicas(%d) = %v, want %v", tt.rf, tt.token, got, tt.want)
			}
			if err := Each(tt.rf).Validate(r); (err != nil) != (tt.rf <= 0) {
				t.Errorf("Each(%d).Validate = %v", tt.rf, err)
			}
		})
	}
}

func TestWants(t *testing.T) {
	tests := []struct {
		strategy    Strategy
		dc          string
		inDC, total int
		want        bool
	}{
		{Simple(2), "a", 0, 1, true},
		{Simple(2), "a", 0, 2, false},
		{Network(map[string]int{"a": 2}), "a", 1, 5, true},
		{Network(map[string]int{"a": 2}), "a", 2, 2, false},
		{Network(map[string]int{"a": 2}), "b", 0, 0, false},
		{Each(2), "z", 1, 9, true},
		{Each(2), "z", 2, 2, false},
	}
	for _, tt := range tests {
		if got := tt.strategy.Wants(tt.dc, tt.inDC, tt.total); got != tt.want {
			t.Errorf("%s.Wants(%q, %d, %d) = %t, want %t", tt.strategy, tt.dc, tt.inDC, tt.total, got, tt.want)
		}
	}
}

func TestNetworkReplicas(t *testing.T) {
	r := mixedRing(t)
	tokens := EvenTokens(6)
	tests := []struct {
		name    string
		rfPerDC map[string]int
		token   Token
		want    []string
	}{
		{"takes members while their dc needs replicas", map[string]int{"a": 2, "b": 1}, 0, []string{"n1", "n2", "n3"}},
		{"skips dcs already full", map[string]int{"b": 2}, 0, []string{"n3", "n5"}},
		{"one per dc", map[string]int{"a": 1, "b": 1, "c": 1}, 0, []string{"n1", "n3", "n6"}},
		{"primary is the first member of a wanted dc", map[string]int{"a": 2, "b": 1}, tokens[3] + 1, []string{"n5", "n1", "n2"}},
		{"dc without replicas is skipped", map[string]int{"a": 1, "c": 1}, tokens[1] + 1, []string{"n4", "n6"}},
		{"dc lacking nodes gets all it has", map[string]int{"b": 3, "c": 1}, 0, []string{"n3", "n5", "n6"}},
		{"dc absent from the ring gets none", map[string]int{"a": 1, "x": 2}, 0, []string{"n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(Network(tt.rfPerDC).Replicas(r, tt.token))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Network(%v).Replicas(%d) = %v, want %v", tt.rfPerDC, tt.token, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	r := smallRing(t) // dc a: n1, n2; dc b: n3
	tests := []struct {
		name      string
		strategy  Strategy
		wantErr   error
		wantNamed []string // substrings the message must contain
	}{
		{"simple fits", Simple(3), nil, nil},
		{"simple too large", Simple(4), ErrTooFewNodes, []string{"3 nodes", "4"}},
		{"simple zero", Simple(0), ErrBadReplication, nil},
		{"network fits", Network(map[string]int{"a": 2, "b": 1}), nil, nil},
		{"network dc too small", Network(map[string]int{"a": 1, "b": 2}), ErrTooFewNodes, []string{`dc "b"`}},
		{"network dc missing", Network(map[string]int{"x": 1}), ErrTooFewNodes, []string{`dc "x" has 0 nodes`}},
		{"network names every short dc", Network(map[string]int{"a": 3, "b": 2}), ErrTooFewNodes, []string{`dc "a"`, `dc "b"`}},
		{"network zero count", Network(map[string]int{"a": 0}), ErrBadReplication, []string{`dc "a"`}},
		{"network without dcs", Network(nil), ErrBadReplication, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.strategy.Validate(r)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Validate = %v, want %v", err, tt.wantErr)
			}
			for _, s := range tt.wantNamed {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Validate error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestParseReplication(t *testing.T) {
	tests := []struct {
		setting     string
		wantName    string
		wantString  string
		wantRF      int
		wantRFPerDC map[string]int // nil for simple
	}{
		{"3", "simple", "simple=3", 3, nil},
		{" 2 ", "simple", "simple=2", 2, nil},
		{"simple=1", "simple", "simple=1", 1, nil},
		{"dc1=2,dc2=1", "network", "dc1=2,dc2=1", 3, map[string]int{"dc1": 2, "dc2": 1}},
		{"dc2=1, dc1=2", "network", "dc1=2,dc2=1", 3, map[string]int{"dc1": 2, "dc2": 1}},
		{"us-east = 3", "network", "us-east=3", 3, map[string]int{"us-east": 3}},
		{"each=3", "each", "each=3", 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			s, err := ParseReplication(tt.setting)
			if err != nil {
				t.Fatalf("ParseReplication: %v", err)
			}
			if s.Name() != tt.wantName || s.String() != tt.wantString || s.ReplicationFactor() != tt.wantRF {
				t.Errorf("got name %q string %q rf %d, want %q %q %d",
					s.Name(), s.String(), s.ReplicationFactor(), tt.wantName, tt.wantString, tt.wantRF)
			}
			dcs, isDC := s.(DCStrategy)
			if isDC != (tt.wantRFPerDC != nil) {
				t.Fatalf("strategy %q implements DCStrategy = %v", s, isDC)
			}
			if isDC && !maps.Equal(dcs.RFPerDC(), tt.wantRFPerDC) {
				t.Errorf("RFPerDC = %v, want %v", dcs.RFPerDC(), tt.wantRFPerDC)
			}
			again, err := ParseReplication(s.String())
			if err != nil || again.String() != s.String() {
				t.Errorf("String %q does not round-trip: %v, %v", s, again, err)
			}
		})
	}
}

func TestParseReplicationErrors(t *testing.T) {
	for _, setting := range []string{
		"", "  ", "0", "-1", "x", "3.5", "simple=0", "simple=-2",
		"dc1", "dc1=", "=2", " =2", "dc1=two", "dc1=2,", ",", "dc1=0", "dc1=-1",
		"dc1=2,dc1=1", "dc1=2, dc1 =1", "simple=3,dc1=1", "each=0", "each=2,dc1=1", "dc1=1,simple=2", "3,dc1=1", "dc1=1=2",
	} {
		t.Run(setting, func(t *testing.T) {
			s, err := ParseReplication(setting)
			if !errors.Is(err, ErrBadReplication) {
				t.Errorf("ParseReplication(%q) = %v, %v; want ErrBadReplication", setting, s, err)
			}
		})
	}
}

func TestRFPerDCReturnsACopy(t *testing.T) {
	input := map[string]int{"a": 2}
	s := Network(input)
	input["a"] = 9
	s.RFPerDC()["a"] = 7
	if got := s.RFPerDC()["a"]; got != 2 {
		t.Errorf("RFPerDC()[a] = %d after outside changes, want 2", got)
	}
}
