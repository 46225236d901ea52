package power

import "fmt"

// State is where a node stands in its power cycle.
type State uint8

// The power states.
const (
	Active State = iota
	Draining
	Asleep
	Waking
)

var stateNames = [...]string{"active", "draining", "asleep", "waking"}

// String names the state.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("power(%d)", uint8(s))
}

// ParseState reads a state name.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("unknown power state %q (want active, draining, asleep or waking)", name)
}
