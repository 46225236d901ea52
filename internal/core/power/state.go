package power

import (
	"fmt"
	"strings"
)

// State is a node's power state. A node goes Active -> Draining -> Asleep -> Waking ->
// Active; the zero value is Active, so a node nobody told to sleep serves.
type State uint8

// The power states.
const (
	// Active: the node serves reads and writes.
	Active State = iota
	// Draining: the node is handing its work over before it sleeps (its writes go to
	// an offload target, a stand-in takes its addresses); it still draws full power.
	Draining
	// Asleep: the node is powered down (hibernating or suspended). For the profile's
	// Enter time after it fell asleep it still draws full power.
	Asleep
	// Waking: the node is powering up and replaying the writes offloaded for it; it
	// draws full power and serves nothing yet.
	Waking
)

var stateNames = [...]string{"active", "draining", "asleep", "waking"}

// String names the state as gossip, status pages and flags spell it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseState reads a state name as String writes it.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("power: unknown state %q (want one of %s)", name, strings.Join(stateNames[:], ", "))
}

// Awake reports whether the node is powered: every state but Asleep. A waking or
// draining node is awake but does not serve; callers that route requests check for
// Active.
func (s State) Awake() bool {
	return s != Asleep
}
