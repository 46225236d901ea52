package nemesis

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config is one nemesis run.
type Config struct {
	// Bin, Nodes, DCs, Dir and GossipInterval start a cluster of processes
	// (ClusterConfig); Attach, when set, names the client addresses of a running cluster
	// to use instead.
	Bin            string
	Nodes, DCs     int
	Dir            string
	GossipInterval time.Duration
	Attach         []string
	// Replication of the run's keyspace; empty: DefaultReplication.
	Replication string
	Workload    Workload // Keyspace is set by Run
	// Duration of the workload; the faults happen within it.
	Duration time.Duration
	Faults   []Kind
	Seed     int64
	// Out receives the progress lines.
	Out io.Writer
}

// repairRounds bounds the repairs of every node after the run: a second round runs only
// when the replicas still differ after the first (a hint replayed late, say), and the
// report says so.
const repairRounds = 3

// Run starts (or attaches to) the cluster, runs the workload under the scheduled faults,
// heals everything, waits for the cluster to converge, repairs every node, records every
// node's stored versions and checks the history. It records to rec; the report is
// Check of what rec holds. An error means the run could not be carried out, not that a
// check failed.
func Run(ctx context.Context, cfg Config, rec *Recorder) (Report, error) {
	start := time.Now()
	p := &progress{out: cfg.Out, start: start}
	var c *Cluster
	var err error
	if len(cfg.Attach) > 0 {
		for _, k := range cfg.Faults {
			if k.Process() {
				return Report{}, fmt.Errorf("%w: drop %s from --faults", errAttached, k)
			}
		}
		p.say("attaching to %s (faults through the admin API only: no kill, pause or wipe)", strings.Join(cfg.Attach, ","))
		c, err = AttachCluster(ctx, cfg.Attach)
	} else {
		p.say("starting %d nodes in %d DCs (%s), data in %s", cfg.Nodes, cfg.DCs, cfg.Bin, cfg.Dir)
		c, err = StartCluster(ctx, ClusterConfig{Bin: cfg.Bin, Nodes: cfg.Nodes, DCs: cfg.DCs, Dir: cfg.Dir, GossipInterval: cfg.GossipInterval})
	}
	if err != nil {
		return Report{}, err
	}
	defer c.Close()
	members := c.Members()
	if cfg.Replication == "" {
		cfg.Replication = DefaultReplication(members)
	}
	plan := Plan(cfg.Seed, members, cfg.Faults, cfg.Duration)
	if len(cfg.Faults) > 0 {
		if err := c.CheckFaultAPI(ctx); err != nil {
			return Report{}, err
		}
	}
	w := cfg.Workload
	w.Keyspace = fmt.Sprintf("nemesis_%x_%s", uint64(cfg.Seed), start.Format("20060102_150405"))
	if err := c.CreateKeyspace(ctx, w.Keyspace, cfg.Replication); err != nil {
		return Report{}, err
	}
	meta := &Meta{Seed: cfg.Seed, Keyspace: w.Keyspace, Replication: cfg.Replication, Consistency: w.Level.String()}
	for _, m := range members {
		meta.Nodes, meta.DCs = append(meta.Nodes, m.ID), append(meta.DCs, m.DC)
	}
	for _, f := range plan {
		meta.Faults = append(meta.Faults, fmt.Sprintf("%v+%v %v", f.At, f.For, f))
	}
	rec.Record(Event{Type: TypeMeta, Meta: meta})

	// From here on, progress lines count from the workload's start, as the plan does.
	p.start = time.Now()
	p.say("keyspace %s (%s); %d clients at %s for %v; %d faults from seed %d",
		w.Keyspace, cfg.Replication, w.Clients, w.Level, cfg.Duration, len(plan), cfg.Seed)
	wctx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	counts := &tally{}
	workloadDone := make(chan struct{})
	go func() {
		c.runWorkload(wctx, w, rec, counts)
		close(workloadDone)
	}()
	go p.report(wctx, counts)
	c.runFaults(ctx, wctx, plan, w.Keyspace, rec, p)
	<-workloadDone
	p.say("workload done: %v", counts)

	if err := c.settle(ctx, meta, rec, p); err != nil {
		return Report{}, err
	}
	if crashed := c.Unexpected(); len(crashed) > 0 {
		return Check(rec.Events()), fmt.Errorf("nemesis: kura processes exited by themselves: %s", strings.Join(crashed, "; "))
	}
	return Check(rec.Events()), nil
}

// settle heals every fault, waits until every node sees every node up and normal,
// repairs every node and records every node's stored versions as final lines.
func (c *Cluster) settle(ctx context.Context, meta *Meta, rec *Recorder, p *progress) error {
	if err := c.HealAll(ctx); err != nil {
		return fmt.Errorf("nemesis: heal: %w", err)
	}
	p.say("healed; waiting for every node to see every node up and normal")
	if err := c.WaitConverged(ctx, 2*time.Minute); err != nil {
		return err
	}
	for round := 1; ; round++ {
		for _, n := range c.nodes {
			resp, err := c.Repair(ctx, n.ID, meta.Keyspace, 2*time.Minute)
			if err != nil {
				return err
			}
			p.say("repaired %s: %d ranges, %d differing sub-ranges, %d records sent", n.ID, resp.GetRanges(), resp.GetDifferingSubranges(), resp.GetRecordsSent())
		}
		final, err := c.finalVersions(ctx, meta.Keyspace)
		if err != nil {
			return err
		}
		divergent := Check(append([]Event{{Type: TypeMeta, Meta: meta}}, final...)).Counts.Divergent
		if divergent > 0 && round < repairRounds {
			p.say("after repair round %d, %d keys still differ between replicas; repairing again", round, divergent)
			time.Sleep(2 * time.Second)
			continue
		}
		for _, e := range final {
			rec.Record(e)
		}
		if round > 1 {
			p.say("after %d rounds of repair, %d keys differ between replicas; the report counts what the last round left", round, divergent)
		}
		return nil
	}
}

// DefaultReplication puts two replicas in the first DC (one if it has a single node) and
// one in every other DC: every DC holds a copy, and with more nodes than replicas each
// key has its own replica set, so that a fault hits some keys' replicas and not others'.
func DefaultReplication(members []Member) string {
	perDC := map[string]int{}
	for _, m := range members {
		perDC[m.DC]++
	}
	dcs := slices.Sorted(maps.Keys(perDC))
	parts := make([]string, len(dcs))
	for i, dc := range dcs {
		rf := 1
		if i == 0 {
			rf = min(2, perDC[dc])
		}
		parts[i] = fmt.Sprintf("%s=%d", dc, rf)
	}
	return strings.Join(parts, ",")
}

// runFaults carries out the plan, each fault at its time, while the workload runs; a
// fault is always healed, even when the workload ends first.
// A heal that overran its slot (a slow restart) pushes the next fault back to keep the
// gap between them.
func (c *Cluster) runFaults(ctx, workload context.Context, plan []Fault, keyspace string, rec *Recorder, p *progress) {
	healed := p.start
	for i, f := range plan {
		select {
		case <-workload.Done():
			return
		case <-time.After(time.Until(later(p.start.Add(f.At), healed.Add(gapMin)))):
		}
		name := fmt.Sprintf("#%d %v", i+1, f)
		// Stamped before the fault acts, so that the span it marks covers all of it.
		e := Event{Type: TypeNemesis, Time: time.Now(), Fault: name, Phase: "start", Wipe: f.Kind == Wipe}
		if err := c.inject(ctx, f); err != nil {
			e.Error = err.Error()
		}
		rec.Record(e)
		p.fault(e)
		select {
		case <-workload.Done():
		case <-time.After(f.For):
		}
		e = Event{Type: TypeNemesis, Fault: name, Phase: "heal", Wipe: f.Kind == Wipe}
		if err := c.heal(ctx, f, keyspace); err != nil {
			e.Error = err.Error()
		}
		e = rec.Record(e)
		p.fault(e)
		healed = e.Time
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// finalVersions reads every node's own copy of the keyspace, as final history lines.
func (c *Cluster) finalVersions(ctx context.Context, keyspace string) ([]Event, error) {
	var out []Event
	for _, n := range c.nodes {
		versions, err := c.LocalScan(ctx, n.ID, keyspace)
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			out = append(out, Event{Type: TypeFinal, Time: time.Now(), Node: n.ID, Key: string(v.GetKey()), Value: string(v.GetValue()),
				Timestamp: v.GetTimestamp(), Deleted: v.GetDeleted(), Replicas: v.GetReplicas()})
		}
	}
	return out, nil
}

// progress prints the run's progress lines, each with the time since the workload
// started.
type progress struct {
	out   io.Writer
	start time.Time
	// mu keeps lines whole: the fault schedule and the tallies' reporter both say things.
	mu sync.Mutex
}

func (p *progress) say(format string, args ...any) {
	line := fmt.Sprintf("[%6.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.out, line)
}

func (p *progress) fault(e Event) {
	if e.Error != "" {
		p.say("%s %s: %s", e.Phase, e.Fault, e.Error)
		return
	}
	p.say("%s %s", e.Phase, e.Fault)
}

// report prints the workload's tallies every five seconds until ctx ends.
func (p *progress) report(ctx context.Context, counts *tally) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ctx.Err() == nil { // both may be ready at the end; the end has its own line
				p.say("%v", counts)
			}
		}
	}
}
