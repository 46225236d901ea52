package powercycle

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/power"
)

// keyUtilization gossips the node's measured utilization (SetUtilization), so that every
// node's meter of it draws what it does.
const keyUtilization = "utilization"

// SetUtilization records that this node is busy u of the time from at on (power.Meter's
// linear model: its awake draw lies between the profile's idle and peak watts in
// proportion), and gossips it, rounded to a thousandth, for the other nodes' meters.
func (p *Cycle) SetUtilization(at time.Time, u float64) {
	p.meter(p.cfg.ID).SetUtilization(at, u)
	p.parts.Gossip.SetAppState(keyUtilization, strconv.FormatFloat(power.ClampUtilization(u), 'f', 3, 64))
}

// observeUtilizationLocked takes the utilization member m gossips into its meter at now; p.mu
// is held. A member that gossips none, or a bad one, leaves its meter as it was.
func (p *Cycle) observeUtilizationLocked(m membership.Member, now time.Time) {
	text, ok := m.AppState[keyUtilization]
	if !ok || m.ID == p.cfg.ID {
		return
	}
	if u, err := strconv.ParseFloat(text, 64); err == nil {
		p.meters[m.ID].SetUtilization(now, u)
	}
}

// ObserveServed records one request from another node that this node served.
func (p *Cycle) ObserveServed() { p.served.Add(1) }

// Served returns how many requests this node served so far: client requests it
// coordinated and requests from other nodes. Nodes that share a process share its CPU
// time in proportion to it (SetUtilization).
func (p *Cycle) Served() uint64 { return p.served.Load() }

// cpuMeter keeps the last reading of the node's CPU time, to measure its utilization
// over the time since (MeterCPU).
type cpuMeter struct {
	mu   sync.Mutex
	at   time.Time
	used time.Duration
}

// MeterCPU measures this node's utilization since its last call, from the CPU time it
// used (Config.CPUTime) over the cores it has (Config.Cores), and sets it
// (SetUtilization). The node's loop calls it every LoadWindow when Config.CPUTime is
// set; the first call only takes the first reading.
func (p *Cycle) MeterCPU(context.Context) {
	if p.cfg.CPUTime == nil {
		return
	}
	now, used := time.Now(), p.cfg.CPUTime()
	c := &p.cpu
	c.mu.Lock()
	lastAt, lastUsed := c.at, c.used
	c.at, c.used = now, used
	c.mu.Unlock()
	if lastAt.IsZero() {
		return
	}
	p.SetUtilization(now, power.Utilization(used-lastUsed, now.Sub(lastAt), p.cfg.Cores))
}
