package node

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/antientropy"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/membership/feed"
	"github.com/kuradb/kura/internal/service/powercycle"
)

// newPowerCycle builds the node's power cycle. It comes first in open(), since the
// transport and the client ports listen through its gate; the parts it uses are built
// after it, so powerParts reaches them at each call.
func newPowerCycle(n *Node) (*powercycle.Cycle, error) {
	if n.cfg.PowerTier < 0 {
		return nil, fmt.Errorf("power tier %d: want 0 (never sleeps) or more", n.cfg.PowerTier)
	}
	cfg := powercycle.Config{
		ID:                   n.cfg.ID,
		Profile:              n.cfg.PowerProfile,
		NoTimeoutSuppression: n.cfg.NoTimeoutSuppression,
		Controller:           n.cfg.PowerController,
		Levels:               n.cfg.PowerLevels,
		CPUTime:              n.cfg.CPUTime,
		Cores:                float64(runtime.NumCPU()),
		ClientAddrKey:        feed.KeyClientAddr,
		Logger:               n.log,
		FrontEndTLS:          n.clientTLS(),
	}
	parts := powerParts{n}
	return powercycle.New(cfg, powercycle.Parts{
		Directory: parts, Gossip: parts, Peers: parts, Hints: parts, Repairer: parts, Ring: parts,
		Keyspaces: n.catalog, FrontEnds: n,
	})
}

// powerParts gives the power cycle the node's parts that open() builds after it.
type powerParts struct{ n *Node }

func (p powerParts) Self() cluster.Node                        { return p.n.directory.Self() }
func (p powerParts) Node(id string) (cluster.Node, bool)       { return p.n.directory.Node(id) }
func (p powerParts) Nodes() []cluster.Node                     { return p.n.directory.Nodes() }
func (p powerParts) State(id string) cluster.State             { return p.n.directory.State(id) }
func (p powerParts) Power(id string) cluster.Power             { return p.n.directory.Power(id) }
func (p powerParts) SetPower(id string, pw cluster.Power) bool { return p.n.directory.SetPower(id, pw) }

func (p powerParts) SetAppState(key, value string) { p.n.feed.SetAppState(key, value) }
func (p powerParts) Member(id string) (membership.Member, bool) {
	return p.n.feed.Member(id)
}
func (p powerParts) Members() []membership.Member       { return p.n.feed.Members() }
func (p powerParts) Shutdown(ctx context.Context) error { return p.n.feed.Shutdown(ctx) }
func (p powerParts) Close()                             { p.n.feed.Close() }
func (p powerParts) Rejoin(set map[string]string) error { return p.n.feed.Rejoin(set) }
func (p powerParts) Interval() time.Duration            { return p.n.feed.Interval() }
func (p powerParts) RingDelay() time.Duration           { return p.n.ringDelay() }

func (p powerParts) AskPower(ctx context.Context, to cluster.Node, payload []byte) error {
	_, err := p.n.transport.Call(ctx, toPeer(to), transport.KindPower, payload)
	return err
}

func (p powerParts) AskHintsFlush(ctx context.Context, to cluster.Node, payload []byte) error {
	_, err := p.n.transport.Call(ctx, toPeer(to), transport.KindHintsFlush, payload)
	return err
}

func (p powerParts) FlushHints(ctx context.Context, target string) (int, error) {
	return p.n.coord.FlushHints(ctx, target)
}

func (p powerParts) RepairAll(ctx context.Context) (recordsSent, rangesShort int, err error) {
	st, err := p.n.Repair(ctx, antientropy.Request{})
	return st.RecordsSent, st.Failed, err
}

func (p powerParts) Ring() (*ring.Ring, error) { return p.n.ring.Ring() }

// Power returns the node's power state.
func (n *Node) Power() power.State { return n.power.State() }

// Energy returns the node's modelled draw at a moment and the energy it used from its
// start until then, transition times applied (package power's profile).
func (n *Node) Energy(at time.Time) (watts, joules float64) {
	return n.power.Energy(n.cfg.ID, at)
}

// SetUtilization records that this node is busy u of the time from at on, which its
// modelled energy follows (powercycle.Cycle.SetUtilization): for nodes that share a
// process, whose CPU time Config.CPUTime cannot tell apart.
func (n *Node) SetUtilization(at time.Time, u float64) { n.power.SetUtilization(at, u) }

// Served returns how many requests this node served so far, from clients and from other
// nodes (powercycle.Cycle.Served).
func (n *Node) Served() uint64 { return n.power.Served() }

// Sleep puts this node to sleep (paper 003; powercycle.Cycle.Sleep). It returns once
// asleep.
func (n *Node) Sleep(ctx context.Context) error { return n.power.Sleep(ctx) }

// Wake brings this node back (paper 003; powercycle.Cycle.Wake). It returns once active.
func (n *Node) Wake(ctx context.Context) error { return n.power.Wake(ctx) }

// SetPower drives a power transition of any node by hand (kura power): "sleep" or
// "wake" (powercycle.Cycle.SetPower).
func (n *Node) SetPower(ctx context.Context, id, action string) (power.State, error) {
	return n.power.SetPower(ctx, id, action)
}
