package power

import (
	"strings"
	"testing"
)

func TestStateNames(t *testing.T) {
	tests := []struct {
		state State
		name  string
		awake bool
	}{
		{Active, "active", true},
		{Draining, "draining", true},
		{Asleep, "asleep", false},
		{Waking, "waking", true},
	}
	for _, tt := range tests {
		if got := tt.state.String(); got != tt.name {
			t.Errorf("State(%d).String() = %q, want %q", uint8(tt.state), got, tt.name)
		}
		if got := tt.state.Awake(); got != tt.awake {
			t.Errorf("%v.Awake() = %v, want %v", tt.state, got, tt.awake)
		}
		parsed, err := ParseState(tt.name)
		if err != nil || parsed != tt.state {
			t.Errorf("ParseState(%q) = %v, %v; want %v", tt.name, parsed, err, tt.state)
		}
	}
	if got := State(0); got != Active {
		t.Errorf("the zero State is %v, want active", got)
	}
	if got := State(9).String(); got != "state(9)" {
		t.Errorf("State(9).String() = %q, want state(9)", got)
	}
}

func TestParseStateRefusesUnknownNames(t *testing.T) {
	for _, name := range []string{"", "Active", "sleeping", "state(2)"} {
		_, err := ParseState(name)
		if err == nil || !strings.Contains(err.Error(), "active, draining, asleep, waking") {
			t.Errorf("ParseState(%q) error = %v, want one listing the valid names", name, err)
		}
	}
}
