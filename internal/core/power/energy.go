package power

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Profile is the energy model of a node that sleeps: what it draws awake and asleep, and
// how long it takes to fall asleep and to wake up. Awake, it draws between ActiveWatts
// (idle) and PeakWatts (fully busy) in proportion to its utilization, the linear model
// of Fan, Weber and Barroso (ISCA 2007); it draws that too while it enters sleep and
// while it wakes: a transition saves nothing.
type Profile struct {
	// Name is the sleep state the profile models ("S4", "S1").
	Name string
	// ActiveWatts is the draw of an awake node at utilization 0, and of one entering
	// sleep or waking with no utilization measured.
	ActiveWatts float64
	// PeakWatts is the draw of an awake node at utilization 1.
	PeakWatts float64
	// SleepWatts is the draw of a node once it has entered sleep.
	SleepWatts float64
	// Enter is how long a node takes to fall asleep after it is told to.
	Enter time.Duration
	// Wake is how long a node takes to serve again after it is told to wake.
	Wake time.Duration
}

// The paper's profiles, measured on its Xeon L3110 nodes. The paper gives no wake time:
// Wake is taken equal to Enter. Its 137 W was measured under its light load (four
// clients, one update each per 100 ms), and is taken as the idle draw; the paper gives
// no busy draw, so PeakWatts adds the L3110's thermal design power, 45 W, as if only the
// processor's draw rose with the load.
var (
	// S4 is ACPI S4, hibernation: the memory is written to disk and the node powers off.
	S4 = Profile{Name: "S4", ActiveWatts: 137, PeakWatts: 137 + l3110TDPWatts, SleepWatts: 1.65, Enter: 18 * time.Second, Wake: 18 * time.Second}
	// S1 is ACPI S1, sleep: the processor stops and the memory stays powered.
	S1 = Profile{Name: "S1", ActiveWatts: 137, PeakWatts: 137 + l3110TDPWatts, SleepWatts: 122, Enter: 2 * time.Second, Wake: 2 * time.Second}
)

// l3110TDPWatts is the thermal design power of the paper's processor, the Xeon L3110
// (Intel's figure).
const l3110TDPWatts = 45

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

// Meter integrates one node's power draw over its power states and its measured
// utilization. It computes the energy from the changes exactly (the draw is a step
// function of time), so it needs no sampling and no clock. It is safe for concurrent use.
type Meter struct {
	profile Profile

	mu     sync.Mutex
	state  State
	since  time.Time // when the node entered state
	joules float64   // drawn from the start until mark
	mark   time.Time // the last change of state or utilization, not before since
	util   float64   // the utilization since mark, in [0, 1]
}

// NewMeter returns a meter for a node that is Active from start on.
func NewMeter(p Profile, start time.Time) *Meter {
	return &Meter{profile: p, state: Active, since: start, mark: start}
}

// Set records that the node entered state s at at. A repeat of the current state is
// ignored (the node did not change, so its Enter time does not start again); an at
// before the last change (of state or utilization) counts as that change, since the meter cannot rewrite
// the energy it has already counted.
func (m *Meter) Set(at time.Time, s State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s == m.state {
		return
	}
	at = m.clampLocked(at)
	m.joules += m.segmentLocked(at)
	m.state, m.since, m.mark = s, at, at
}

// SetUtilization records that from at on the node is busy u of the time (clamped to
// [0, 1]; NaN counts as 0), which sets its awake draw between the profile's ActiveWatts
// and PeakWatts. at is clamped to the last change, as Set's is.
func (m *Meter) SetUtilization(at time.Time, u float64) {
	u = ClampUtilization(u)
	m.mu.Lock()
	defer m.mu.Unlock()
	at = m.clampLocked(at)
	m.joules += m.segmentLocked(at)
	m.mark, m.util = at, u
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
	return m.awakeWattsLocked()
}

// awakeWattsLocked is the draw of the node awake at its utilization; m.mu is held.
func (m *Meter) awakeWattsLocked() float64 {
	return m.profile.ActiveWatts + (m.profile.PeakWatts-m.profile.ActiveWatts)*m.util
}

// Joules returns the energy drawn from the start until at, which is clamped to the last
// transition like Set's.
func (m *Meter) Joules(at time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.joules + m.segmentLocked(m.clampLocked(at))
}

// clampLocked moves at forward to the last change; m.mu is held.
func (m *Meter) clampLocked(at time.Time) time.Time {
	if at.Before(m.mark) {
		return m.mark
	}
	return at
}

// segmentLocked returns the energy drawn from mark until at (not before mark); m.mu is
// held. A node asleep draws its awake power for its first Enter after since, while it
// falls asleep, and the sleep power after.
func (m *Meter) segmentLocked(at time.Time) float64 {
	awake := m.awakeWattsLocked()
	if m.state != Asleep {
		return awake * at.Sub(m.mark).Seconds()
	}
	enterEnd := m.since.Add(m.profile.Enter)
	if at.Before(enterEnd) {
		enterEnd = at
	}
	entering := max(enterEnd.Sub(m.mark), 0)
	return awake*entering.Seconds() + m.profile.SleepWatts*(at.Sub(m.mark)-entering).Seconds()
}

// ClampUtilization returns u within [0, 1]; NaN is 0.
func ClampUtilization(u float64) float64 {
	if !(u > 0) {
		return 0
	}
	return min(u, 1)
}

// Utilization is the share of cores kept busy by cpu of CPU time over wall of time,
// clamped to [0, 1]; 0 when wall or cores is not positive.
func Utilization(cpu, wall time.Duration, cores float64) float64 {
	if wall <= 0 || !(cores > 0) {
		return 0
	}
	return ClampUtilization(cpu.Seconds() / (wall.Seconds() * cores))
}
