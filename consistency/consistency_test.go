package consistency

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, l := range append(Levels(), SerialLevels()...) {
		got, err := Parse(l.String())
		if err != nil || got != l {
			t.Errorf("Parse(%q) = %v, %v; want %v", l.String(), got, err, l)
		}
	}
	if got, err := Parse(" local_quorum "); err != nil || got != LocalQuorum {
		t.Errorf("Parse lower case = %v, %v", got, err)
	}
	if _, err := Parse("MOST"); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("Parse(MOST) error = %v, want ErrUnknownLevel", err)
	}
}

func TestRequire(t *testing.T) {
	twoDCs := map[string]int{"a": 3, "b": 2}
	tests := []struct {
		level Level
		rf    map[string]int
		want  Requirement
	}{
		{Any, twoDCs, Requirement{Total: 1, Hinted: true}},
		{One, twoDCs, Requirement{Total: 1}},
		{Two, twoDCs, Requirement{Total: 2}},
		{Quorum, twoDCs, Requirement{Total: 3}},
		{Quorum, map[string]int{"a": 1}, Requirement{Total: 1}},
		{Quorum, map[string]int{"a": 2}, Requirement{Total: 2}},
		{Quorum, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, Requirement{Total: 3}},
		{LocalOne, twoDCs, Requirement{Total: 1, PerDC: map[string]int{"a": 1}}},
		{LocalQuorum, twoDCs, Requirement{Total: 2, PerDC: map[string]int{"a": 2}}},
		{EachQuorum, twoDCs, Requirement{Total: 4, PerDC: map[string]int{"a": 2, "b": 2}}},
		{All, twoDCs, Requirement{Total: 5, PerDC: map[string]int{"a": 3, "b": 2}}},
		{Serial, twoDCs, Requirement{Total: 3}},
		{LocalSerial, twoDCs, Requirement{Total: 2, PerDC: map[string]int{"a": 2}}},
		{LocalSerial, map[string]int{"a": 1, "b": 3}, Requirement{Total: 1, PerDC: map[string]int{"a": 1}}},
	}
	for _, tt := range tests {
		got := tt.level.Require(tt.rf, "a")
		if got.String() != tt.want.String() || got.Hinted != tt.want.Hinted {
			t.Errorf("%v.Require(%v) = %v (hinted %v), want %v (hinted %v)", tt.level, tt.rf, got, got.Hinted, tt.want, tt.want.Hinted)
		}
	}
}

func TestSatisfied(t *testing.T) {
	rf := map[string]int{"a": 3, "b": 3}
	tests := []struct {
		level Level
		acks  map[string]int
		want  bool
	}{
		{One, map[string]int{"b": 1}, true},
		{One, map[string]int{}, false},
		{Quorum, map[string]int{"a": 2, "b": 1}, false},
		{Quorum, map[string]int{"a": 2, "b": 2}, true},
		{Quorum, map[string]int{"a": 3}, false},
		{Quorum, map[string]int{"a": 3, "b": 1}, true},
		{LocalOne, map[string]int{"b": 3}, false},
		{LocalOne, map[string]int{"a": 1}, true},
		{LocalQuorum, map[string]int{"a": 1, "b": 3}, false},
		{LocalQuorum, map[string]int{"a": 2}, true},
		{EachQuorum, map[string]int{"a": 3, "b": 1}, false},
		{EachQuorum, map[string]int{"a": 2, "b": 2}, true},
		{All, map[string]int{"a": 3, "b": 2}, false},
		{All, map[string]int{"a": 3, "b": 3}, true},
	}
	for _, tt := range tests {
		if got := tt.level.Require(rf, "a").Satisfied(tt.acks); got != tt.want {
			t.Errorf("%v satisfied by %v = %v, want %v", tt.level, tt.acks, got, tt.want)
		}
	}
}

func TestUnsatisfiable(t *testing.T) {
	// A single replica in another DC can never meet LOCAL_ONE or TWO.
	rf := map[string]int{"b": 1}
	for _, l := range []Level{Two, LocalOne} {
		if l.Require(rf, "a").Satisfied(rf) {
			t.Errorf("%v should be unsatisfiable with replicas %v", l, rf)
		}
	}
}

func TestRequirementWithPending(t *testing.T) {
	rf := map[string]int{"a": 3, "b": 2}
	tests := []struct {
		level     Level
		pendingDC string
		want      string
	}{
		{One, "b", Requirement{Total: 2}.String()},
		{Quorum, "a", Requirement{Total: 4}.String()},
		{LocalQuorum, "a", Requirement{Total: 3, PerDC: map[string]int{"a": 3}}.String()},
		{LocalQuorum, "b", Requirement{Total: 2, PerDC: map[string]int{"a": 2}}.String()},
		{EachQuorum, "b", Requirement{Total: 5, PerDC: map[string]int{"a": 2, "b": 3}}.String()},
		{Any, "a", Requirement{Total: 1, Hinted: true}.String()},
	}
	for _, tt := range tests {
		base := tt.level.Require(rf, "a")
		before := base.String()
		if got := base.WithPending(tt.pendingDC).String(); got != tt.want {
			t.Errorf("%v with a pending replica in %s: %s, want %s", tt.level, tt.pendingDC, got, tt.want)
		}
		if base.String() != before {
			t.Errorf("%v: WithPending changed the requirement it was called on", tt.level)
		}
	}
}

func TestSerialLevels(t *testing.T) {
	tests := []struct {
		level  Level
		serial bool
		commit Level
	}{
		{Serial, true, Quorum},
		{LocalSerial, true, LocalQuorum},
		{Quorum, false, Quorum},
		{One, false, One},
	}
	for _, tt := range tests {
		if tt.level.IsSerial() != tt.serial || tt.level.Commit() != tt.commit {
			t.Errorf("%v: serial %v, commit %v; want %v, %v", tt.level, tt.level.IsSerial(), tt.level.Commit(), tt.serial, tt.commit)
		}
	}
}

// TestLocalRequirementShared checks that the local levels hand out one PerDC map per DC
// and count without allocating, and that WithPending leaves the shared map as it was.
func TestLocalRequirementShared(t *testing.T) {
	rf := map[string]int{"a": 3, "b": 2}
	first := LocalQuorum.Require(rf, "a")
	if allocs := testing.AllocsPerRun(100, func() { LocalQuorum.Require(rf, "a") }); allocs > 0 {
		t.Errorf("LOCAL_QUORUM's Require made %v allocations, want none once its map is made", allocs)
	}
	raised := first.WithPending("a")
	if raised.PerDC["a"] != 3 || raised.Total != 3 {
		t.Errorf("WithPending = %v, want 3 (a: 3)", raised)
	}
	again := LocalQuorum.Require(rf, "a")
	if again.PerDC["a"] != 2 || first.PerDC["a"] != 2 || len(again.PerDC) != 1 {
		t.Errorf("after WithPending, Require = %v and the first %v, want 2 (a: 2)", again, first)
	}
	if other := LocalQuorum.Require(rf, "b"); other.PerDC["b"] != 2 || len(other.PerDC) != 1 {
		t.Errorf("LOCAL_QUORUM in b = %v, want 2 (b: 2)", other)
	}
	if one := LocalOne.Require(rf, "a"); one.PerDC["a"] != 1 || len(one.PerDC) != 1 {
		t.Errorf("LOCAL_ONE = %v, want 1 (a: 1)", one)
	}
}
