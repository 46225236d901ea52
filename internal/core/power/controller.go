package power

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Default hysteresis band of ControllerConfig.
const (
	// DefaultHighUtilization wakes a node above 70 % utilization: below the knee where
	// queueing makes latency climb, with room for the Wake time of the node woken.
	DefaultHighUtilization = 0.7
	// DefaultLowUtilization lets a node sleep only when the others would stay below
	// 40 %: far enough from DefaultHighUtilization that the sleep does not itself call
	// for a wake.
	DefaultLowUtilization = 0.4
)

// ControllerConfig sets up a Controller. Zero thresholds and Hold take the defaults
// documented on each field.
type ControllerConfig struct {
	// Profile is the nodes' sleep profile; its Enter and Wake times pace the
	// controller. Required (S4 or S1).
	Profile Profile
	// CapacityOpsPerSecond is what one awake node serves within the latency target.
	CapacityOpsPerSecond float64
	// LatencyTarget is the p99 latency the cluster must keep; above it a node wakes,
	// and no node sleeps.
	LatencyTarget time.Duration
	// HighUtilization is the utilization (ops / (active nodes × capacity)) above which a
	// node wakes; 0 means DefaultHighUtilization.
	HighUtilization float64
	// LowUtilization is the utilization that the nodes left must stay below for one
	// more node to sleep; 0 means DefaultLowUtilization. It must be below
	// HighUtilization: the band between them is the hysteresis that keeps a sleep from
	// calling for a wake at once, and the other way round.
	LowUtilization float64
	// Hold is how long the conditions to sleep one more node must hold, sample after
	// sample, before it sleeps; 0 means 3 × Profile.Enter (54 s under S4, 6 s under
	// S1). A node draws full power while it enters sleep, so a sleep saves energy only
	// when the lull outlasts Enter by far; a lull that has lasted three times Enter is
	// taken as one that will.
	Hold time.Duration
}

// ErrInvalidConfig marks a ControllerConfig that NewController rejects.
var ErrInvalidConfig = errors.New("power: invalid controller config")

func (c ControllerConfig) withDefaults() ControllerConfig {
	if c.HighUtilization == 0 {
		c.HighUtilization = DefaultHighUtilization
	}
	if c.LowUtilization == 0 {
		c.LowUtilization = DefaultLowUtilization
	}
	if c.Hold == 0 {
		c.Hold = 3 * c.Profile.Enter
	}
	return c
}

func (c ControllerConfig) validate() error {
	switch {
	case c.Profile.Name == "":
		return fmt.Errorf("%w: no Profile (power.S4 or power.S1)", ErrInvalidConfig)
	case c.Profile.Enter < 0 || c.Profile.Wake < 0:
		return fmt.Errorf("%w: profile %s enters sleep in %v and wakes in %v; neither may be negative",
			ErrInvalidConfig, c.Profile.Name, c.Profile.Enter, c.Profile.Wake)
	case !(c.CapacityOpsPerSecond > 0) || math.IsInf(c.CapacityOpsPerSecond, 1):
		return fmt.Errorf("%w: CapacityOpsPerSecond %v is not a positive number", ErrInvalidConfig, c.CapacityOpsPerSecond)
	case c.LatencyTarget <= 0:
		return fmt.Errorf("%w: LatencyTarget %v is not positive", ErrInvalidConfig, c.LatencyTarget)
	case !(0 < c.LowUtilization && c.LowUtilization < c.HighUtilization && c.HighUtilization <= 1):
		return fmt.Errorf("%w: LowUtilization %v and HighUtilization %v must satisfy 0 < low < high <= 1",
			ErrInvalidConfig, c.LowUtilization, c.HighUtilization)
	case c.Hold < 0:
		return fmt.Errorf("%w: Hold %v is negative", ErrInvalidConfig, c.Hold)
	}
	return nil
}

// Sample is what the cluster measured over the last interval.
type Sample struct {
	// At is when the sample was taken; it is the controller's only clock.
	At time.Time
	// OpsPerSecond is the load the cluster served.
	OpsPerSecond float64
	// LatencyP99 is the 99th percentile latency of those operations.
	LatencyP99 time.Duration
}

// Candidate is a node the controller may act on.
type Candidate struct {
	ID    string
	State State
	// Since is when the node entered State.
	Since time.Time
}

// Action is one decision: Node goes to sleep (Sleep) or wakes (!Sleep).
type Action struct {
	Node  string
	Sleep bool
}

// Controller decides, sample after sample, how many nodes sleep and which: the
// controller the paper leaves to future work. It is pure: no goroutine, no clock, no
// I/O, so the node, the simulator and the tests drive it alike. It is not safe for
// concurrent use: one driver calls Decide.
//
// It wakes a node as soon as the active nodes are too busy or too slow, and puts one
// more to sleep only after a lull has held for Hold; it acts one node at a time and
// waits for each action to take effect before the next.
type Controller struct {
	cfg ControllerConfig

	acted      bool
	lastAction time.Time // when the last action was decided; meaningful when acted
	lull       bool
	lullSince  time.Time // when the conditions to sleep one more began; meaningful when lull
}

// NewController returns a controller with cfg, its zero fields set to their defaults.
func NewController(cfg ControllerConfig) (*Controller, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg}, nil
}

// Config returns the configuration with its defaults filled in.
func (c *Controller) Config() ControllerConfig {
	return c.cfg
}

// Decide returns at most one action for sample s over nodes, every node that serves the
// load with its power state. The caller is expected to carry the action out: the
// controller counts it as its last action. canSleep tells whether a node may sleep now
// (its tier, and the coverage rule given the nodes asleep); the controller never puts a
// node to sleep for which it is false.
//
// In order:
//   - While a node is Draining or Waking, or within Profile.Enter + Profile.Wake of the
//     last action, nothing happens: the samples do not show the last action's effect
//     yet (a node put to sleep cannot be woken before it has entered sleep, and one
//     woken serves only after Wake), and acting on them would overshoot.
//   - When the utilization exceeds HighUtilization or the p99 exceeds LatencyTarget,
//     the node asleep longest wakes, at once: latency matters more than energy. A node
//     still entering sleep (asleep for less than Profile.Enter) is not woken: it cannot
//     abort its hibernation, so it would serve no sooner than a node that has finished
//     and must wake too, and it may be the node whose sleep was just decided.
//   - When the utilization with one active node fewer stays below LowUtilization and
//     the p99 within LatencyTarget for Hold, sample after sample, one active node
//     sleeps: the one active longest, the highest id among equals, that canSleep
//     allows. Taking the one active longest spreads the sleeps, and the replays of
//     their offloaded writes, over the nodes instead of cycling one. The time the
//     controller waits (first rule) does not count towards Hold.
func (c *Controller) Decide(s Sample, nodes []Candidate, canSleep func(id string) bool) (Action, bool) {
	active := 0
	for _, n := range nodes {
		switch n.State {
		case Draining, Waking:
			return c.wait()
		case Active:
			active++
		}
	}
	if c.acted && s.At.Before(c.lastAction.Add(c.cfg.Profile.Enter+c.cfg.Profile.Wake)) {
		return c.wait()
	}
	fast := s.LatencyP99 <= c.cfg.LatencyTarget
	if !fast || c.utilization(s.OpsPerSecond, active) > c.cfg.HighUtilization {
		c.lull = false
		if id, ok := c.toWake(s.At, nodes); ok {
			return c.act(s.At, Action{Node: id})
		}
		return Action{}, false
	}
	if c.utilization(s.OpsPerSecond, active-1) >= c.cfg.LowUtilization {
		c.lull = false
		return Action{}, false
	}
	if !c.lull {
		c.lull, c.lullSince = true, s.At
	}
	if s.At.Sub(c.lullSince) < c.cfg.Hold {
		return Action{}, false
	}
	if id, ok := toSleep(nodes, canSleep); ok {
		return c.act(s.At, Action{Node: id, Sleep: true})
	}
	return Action{}, false
}

// wait is Decide's answer while the last action takes effect: nothing, and a lull that
// must start again once it has.
func (c *Controller) wait() (Action, bool) {
	c.lull = false
	return Action{}, false
}

// act records a as the last action, at at.
func (c *Controller) act(at time.Time, a Action) (Action, bool) {
	c.acted, c.lastAction, c.lull = true, at, false
	return a, true
}

// utilization is the share of the capacity of active nodes that ops needs; without
// active nodes it is infinite, so the controller wakes one and never sleeps the last.
func (c *Controller) utilization(ops float64, active int) float64 {
	if active <= 0 {
		return math.Inf(1)
	}
	return ops / (float64(active) * c.cfg.CapacityOpsPerSecond)
}

// toWake returns the node asleep longest that has finished entering sleep at at; the
// lowest id among equals.
func (c *Controller) toWake(at time.Time, nodes []Candidate) (string, bool) {
	var best *Candidate
	for i, n := range nodes {
		if n.State != Asleep || at.Sub(n.Since) < c.cfg.Profile.Enter {
			continue
		}
		if best == nil || cmp.Or(n.Since.Compare(best.Since), strings.Compare(n.ID, best.ID)) < 0 {
			best = &nodes[i]
		}
	}
	if best == nil {
		return "", false
	}
	return best.ID, true
}

// toSleep returns the active node that canSleep allows and that has been active
// longest; the highest id among equals.
func toSleep(nodes []Candidate, canSleep func(id string) bool) (string, bool) {
	var active []Candidate
	for _, n := range nodes {
		if n.State == Active {
			active = append(active, n)
		}
	}
	slices.SortFunc(active, func(a, b Candidate) int {
		return cmp.Or(a.Since.Compare(b.Since), strings.Compare(b.ID, a.ID))
	})
	for _, n := range active {
		if canSleep(n.ID) {
			return n.ID, true
		}
	}
	return "", false
}
