package power

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Profile is the energy model of a node that sleeps: what it draws awake and asleep, and
// how long it takes to fall asleep and to wake up. It draws ActiveWatts while it enters
// sleep and while it wakes: a transition saves nothing.
type Profile struct {
	// Name is the sleep state the profile models ("S4", "S1").
	Name string
	// ActiveWatts is the draw of an awake node, and of one entering sleep or waking.
	ActiveWatts float64
	// SleepWatts is the draw of a node once it has entered sleep.
	SleepWatts float64
	// Enter is how long a node takes to fall asleep after it is told to.
	Enter time.Duration
	// Wake is how long a node takes to serve again after it is told to wake.
	Wake time.Duration
}

// The paper's profiles, measured on its Xeon L3110 nodes. The paper gives no wake time:
// Wake is taken equal to Enter.
var (
	// S4 is ACPI S4, hibernation: the memory is written to disk and the node powers off.
	S4 = Profile{Name: "S4", ActiveWatts: 137, SleepWatts: 1.65, Enter: 18 * time.Second, Wake: 18 * time.Second}
	// S1 is ACPI S1, sleep: the processor stops and the memory stays powered.
	S1 = Profile{Name: "S1", ActiveWatts: 137, SleepWatts: 122, Enter: 2 * time.Second, Wake: 2 * time.Second}
)

// profiles are the profiles ProfileByName knows.
var profiles = []Profile{S4, S1}

// ProfileByName returns the profile named name, in any case ("s4" or "S4").
func ProfileByName(name string) (Profile, error) {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
		names[i] = strings.ToLower(p.Name)
	}
	return Profile{}, fmt.Errorf("power: unknown profile %q (want one of %s)", name, strings.Join(names, ", "))
}

// Meter integrates one node's power draw over its power states. It computes the energy
// from the transitions exactly (the draw is a step function of time), so it needs no
// sampling and no clock. It is safe for concurrent use.
type Meter struct {
	profile Profile

	mu     sync.Mutex
	state  State
	since  time.Time // when the node entered state
	joules float64   // drawn from the start until since
}

// NewMeter returns a meter for a node that is Active from start on.
func NewMeter(p Profile, start time.Time) *Meter {
	return &Meter{profile: p, state: Active, since: start}
}

// Set records that the node entered state s at at. A repeat of the current state is
// ignored (the node did not change, so its Enter time does not start again); an at
// before the last transition counts as that transition, since the meter cannot rewrite
// the energy it has already counted.
func (m *Meter) Set(at time.Time, s State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s == m.state {
		return
	}
	at = m.clampLocked(at)
	m.joules += m.segmentLocked(at)
	m.state, m.since = s, at
}

// State returns the node's current power state.
func (m *Meter) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Watts returns the draw at at, which is clamped to the last transition like Set's.
func (m *Meter) Watts(at time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == Asleep && m.clampLocked(at).Sub(m.since) >= m.profile.Enter {
		return m.profile.SleepWatts
	}
	return m.profile.ActiveWatts
}

// Joules returns the energy drawn from the start until at, which is clamped to the last
// transition like Set's.
func (m *Meter) Joules(at time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.joules + m.segmentLocked(m.clampLocked(at))
}

// clampLocked moves at forward to the last transition; m.mu is held.
func (m *Meter) clampLocked(at time.Time) time.Time {
	if at.Before(m.since) {
		return m.since
	}
	return at
}

// segmentLocked returns the energy drawn in the current state from since until at (not
// before since); m.mu is held. A node asleep draws the active power for its first Enter,
// while it falls asleep, and the sleep power after.
func (m *Meter) segmentLocked(at time.Time) float64 {
	elapsed := at.Sub(m.since)
	if m.state != Asleep {
		return m.profile.ActiveWatts * elapsed.Seconds()
	}
	entering := min(elapsed, m.profile.Enter)
	return m.profile.ActiveWatts*entering.Seconds() + m.profile.SleepWatts*(elapsed-entering).Seconds()
}
