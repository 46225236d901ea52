package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/membership/driver"
	"github.com/kuradb/kura/internal/tools/membership/experiment"
	"github.com/kuradb/kura/internal/tools/sim"
)

// transportFrameHeaderBytes is the transport's frame header (payload length
// u32, kind, type, request id u64: internal/io/transport/frame.go), which its byte
// counters include and a TCP capture would count as payload.
const transportFrameHeaderBytes = 4 + 1 + 1 + 8

// realGossipNote tells how --real's bytes compare with the simulator's.
const realGossipNote = "--real rows: the transport counts, at the sender, every frame of kind gossip as frame header (14 B) + payload " +
	"(transport_frame_bps); total_bps and interdc_bps convert that to the simulator's wire model, payload + 52 B IPv4/TCP header per message " +
	"(every membership message at these sizes fits one 1448 B segment), so both sides count the same bytes; " +
	"rates are per protocol second, one gossip round per node as in the simulator, and rounds_run_pct is the share of the rounds " +
	"the wall clock allowed that the loaded machine actually ran; " +
	"total_diff_pct and interdc_diff_pct are (real - sim) / sim for the sim row of the same protocol and size, run with the same schedule and seed; " +
	"the simulator counts lost messages as sent, the transport does not"

// realGossipScale states how --real departs from the simulator's run.
func realGossipScale(interval time.Duration) string {
	return fmt.Sprintf("real TCP transport on loopback, one process, one driver per node; a gossip round lasts %v instead of 1 s, "+
		"so the protocol's timeouts and the whole schedule run %.0fx faster, and times and rates are per protocol second; "+
		"the transport emulates the 50 ms inter-DC latency scaled alike", interval, float64(driver.Round)/float64(interval))
}

// remoteLatency is the experiment's default inter-DC latency.
const remoteLatency = 50 * time.Millisecond

// realGossipLinks is the WAN the transport emulates for --real: the
// experiment's links at the compressed time scale, with its loss.
type realGossipLinks struct {
	remote time.Duration
	loss   float64
}

// Link implements transport.LinkModel.
func (l realGossipLinks) Link(fromDC, toDC string) (topology.LinkSpec, error) {
	switch {
	case toDC == "":
		return topology.LinkSpec{}, nil // a seed asked for its ID before its DC is known
	case fromDC == toDC:
		return topology.LinkSpec{Loss: l.loss}, nil
	}
	return topology.LinkSpec{Latency: l.remote, Loss: l.loss}, nil
}

// realGossipNode is one node of a --real run.
type realGossipNode struct {
	tr  *transport.Transport
	drv atomic.Pointer[driver.Driver]
}

// stop crashes the node.
func (n *realGossipNode) stop() {
	if d := n.drv.Load(); d != nil {
		d.Close()
	}
	n.tr.Close()
}

// gossipTraffic is the gossip traffic the transports counted.
type gossipTraffic struct {
	total, interDC transport.Counter
}

// countGossip sums the gossip flows of traffic.
func countGossip(traffic *transport.Stats) gossipTraffic {
	var t gossipTraffic
	for flow, c := range traffic.Snapshot() {
		if flow.Kind != transport.KindGossip {
			continue
		}
		t.total.Messages += c.Messages
		t.total.Bytes += c.Bytes
		if flow.FromDC != flow.ToDC {
			t.interDC.Messages += c.Messages
			t.interDC.Bytes += c.Bytes
		}
	}
	return t
}

// sub is the traffic since an earlier count.
func (t gossipTraffic) sub(earlier gossipTraffic) gossipTraffic {
	return gossipTraffic{
		total:   transport.Counter{Messages: t.total.Messages - earlier.total.Messages, Bytes: t.total.Bytes - earlier.total.Bytes},
		interDC: transport.Counter{Messages: t.interDC.Messages - earlier.interDC.Messages, Bytes: t.interDC.Bytes - earlier.interDC.Bytes},
	}
}

// simWireBytes converts transport frames to the simulator's wire bytes:
// payload plus one IPv4/TCP header per message.
func simWireBytes(c transport.Counter) float64 {
	return float64(c.Bytes) - float64(c.Messages)*transportFrameHeaderBytes + float64(c.Messages)*float64(sim.TCPIPv4.HeaderBytes)
}

// gossipNodeID names node i as the experiment does, so that messages have
// the same sizes on both sides.
func gossipNodeID(i int) string { return fmt.Sprintf("n%04d", i) }

// runRealGossip runs one (protocol, size) of cfg over real sockets with the
// schedule compressed to o.realInterval per round, and measures it as the
// experiment does; it tells phase each phase it enters (joining, steady,
// detecting, done).
func runRealGossip(ctx context.Context, o gossipOptions, cfg experiment.Config, phase func(string)) (GossipRow, error) {
	p, err := gossipProtocol(cfg.Protocols[0])
	if err != nil {
		return GossipRow{}, err
	}
	n := cfg.Sizes[0]
	scale := float64(driver.Round) / float64(o.realInterval)
	wall := func(d time.Duration) time.Duration { return time.Duration(float64(d) / scale) }

	traffic := transport.NewStats()
	links := realGossipLinks{remote: wall(remoteLatency), loss: cfg.Loss}
	quiet := slog.New(slog.DiscardHandler)
	obs := newRealObserver(n, scale)
	nodes := make([]*realGossipNode, 0, n)
	defer func() {
		for _, node := range nodes {
			node.stop()
		}
	}()
	for i := range n {
		node := &realGossipNode{}
		node.tr, err = transport.Listen(transport.Config{
			Self:  transport.Peer{ID: gossipNodeID(i), DC: fmt.Sprintf("dc%d", i%cfg.DCs+1), Addr: "127.0.0.1:0"},
			Stats: traffic, Links: links, Seed: int64(i), Logger: quiet,
			Handler: transport.HandlerFunc(func(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
				if d := node.drv.Load(); d != nil && driver.Handles(kind) {
					return d.Handle(ctx, from, kind, payload)
				}
				return nil, fmt.Errorf("kind %v not served", kind)
			}),
		})
		if err != nil {
			return GossipRow{}, err
		}
		nodes = append(nodes, node)
	}
	seeds := make([]string, cfg.DCs)
	for i := range seeds {
		seeds[i] = nodes[i].tr.Addr()
	}

	begin := time.Now()
	phase("joining")
	per := (n + cfg.Batches - 1) / cfg.Batches
	for b := 0; b*per < n; b++ {
		if err := sleepUntil(ctx, begin.Add(wall(time.Duration(b)*cfg.BatchInterval))); err != nil {
			return GossipRow{}, err
		}
		for i := b * per; i < min(n, (b+1)*per); i++ {
			obs.started(i, time.Now())
			d, err := driver.New(driver.Config{
				Protocol: p, Transport: nodes[i].tr, Seeds: seeds, Interval: o.realInterval, Logger: quiet,
				OnChange: func(c driver.Change) { obs.onChange(i, c) },
			})
			if err != nil {
				return GossipRow{}, err
			}
			nodes[i].drv.Store(d)
			d.Start()
		}
	}
	if err := sleepUntil(ctx, begin.Add(wall(cfg.WindowStart))); err != nil {
		return GossipRow{}, err
	}
	phase("steady")
	obs.setSteady(true)
	before, roundsBefore, windowStart := countGossip(traffic), rounds(nodes), time.Now()
	if err := sleepUntil(ctx, begin.Add(wall(cfg.WindowEnd))); err != nil {
		return GossipRow{}, err
	}
	window, roundsRun, wallSeconds := countGossip(traffic).sub(before), rounds(nodes)-roundsBefore, time.Since(windowStart).Seconds()
	obs.setSteady(false)
	// The simulator runs one round per node per second. A loaded machine
	// drops rounds here, so a protocol second is one round per node run,
	// not a slice of the wall clock.
	seconds := float64(roundsRun) / float64(n)
	if seconds == 0 {
		return GossipRow{}, fmt.Errorf("no gossip round ran in the %.1f s window", wallSeconds)
	}
	roundsRunPct := seconds / (wallSeconds * scale) * 100

	row := GossipRow{Source: "real", Row: experiment.Row{
		Protocol: p.Name, N: n, DCs: cfg.DCs,
		TotalBps:            simWireBytes(window.total) * 8 / seconds,
		InterDCBps:          simWireBytes(window.interDC) * 8 / seconds,
		PaperTotalBps:       paperTotalBps(n),
		MessagesPerNodePerS: float64(window.total.Messages) / seconds / float64(n),
	}}
	frameBps := float64(window.total.Bytes) * 8 / seconds
	row.TransportFrameBps, row.RoundsRunPct = &frameBps, &roundsRunPct
	row.PerNodeBps = row.TotalBps / float64(n)
	row.JoinConvergenceSP50, row.JoinConvergenceSMax, row.JoinsUnconverged = obs.joinTimes()

	phase("detecting")
	rng := rand.New(rand.NewPCG(o.seed, 0x6b696c6c))
	victims := rng.Perm(n - cfg.DCs)[:cfg.Kills] // never a seed
	for i := range victims {
		victims[i] += cfg.DCs
	}
	obs.kill(victims, time.Now())
	for _, v := range victims {
		nodes[v].stop()
	}
	deadline := time.Now().Add(wall(cfg.DetectTimeout))
	for !obs.allDetected() && time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(o.realInterval)); err != nil {
			return GossipRow{}, err
		}
	}
	row.FailureDetectionSP50, row.FailureDetectionSMax, row.FailuresUndetected = obs.detectTimes()
	row.FalseSuspicions = obs.falseSuspicions()
	phase("done")
	return row, nil
}

// rounds sums the gossip rounds the nodes' drivers have run.
func rounds(nodes []*realGossipNode) uint64 {
	var total uint64
	for _, node := range nodes {
		if d := node.drv.Load(); d != nil {
			total += d.Rounds()
		}
	}
	return total
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// realObserver turns the drivers' changes into the experiment's measures:
// join convergence, failure detection and false suspicions, in protocol
// seconds. Nodes start in index order, so "started no later" is "lower or
// equal index".
type realObserver struct {
	scale float64

	mu    sync.Mutex
	start []time.Time
	knows [][]bool // knows[a][b]: node a has learned of node b
	// need[x] counts what x's join still waits for: earlier nodes that do not
	// know x yet, plus earlier nodes x does not know yet.
	need      []int
	converged []time.Duration // real time; -1 until converged
	killedAt  time.Time
	killed    map[int]bool
	// seenDown[v][a]: node a saw victim v dead; pendingDown[v] counts the
	// survivors yet to see it.
	seenDown        map[int][]bool
	pendingDown     map[int]int
	detected        map[int]time.Duration
	steady          bool
	falseSuspected  int
	indexByMemberID map[string]int
}

func newRealObserver(n int, scale float64) *realObserver {
	o := &realObserver{
		scale: scale, start: make([]time.Time, n), knows: make([][]bool, n), need: make([]int, n),
		converged: make([]time.Duration, n), killed: map[int]bool{}, seenDown: map[int][]bool{},
		pendingDown: map[int]int{}, detected: map[int]time.Duration{}, indexByMemberID: make(map[string]int, n),
	}
	for i := range n {
		o.knows[i] = make([]bool, n)
		o.converged[i] = -1
		o.indexByMemberID[gossipNodeID(i)] = i
	}
	return o
}

// started records node i's start.
func (o *realObserver) started(i int, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.start[i] = at
	o.need[i] = 2 * i
	if i == 0 {
		o.converged[0] = 0
	}
}

// onChange is node a's driver callback.
func (o *realObserver) onChange(a int, c driver.Change) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, ok := o.indexByMemberID[c.Event.ID]
	if !ok {
		return
	}
	now := time.Now()
	switch c.Event.Kind {
	case membership.EventJoined, membership.EventRestarted:
		if o.knows[a][b] {
			return
		}
		o.knows[a][b] = true
		if a < b {
			o.satisfy(b, now)
		}
		if b < a {
			o.satisfy(a, now)
		}
	case membership.EventSuspect, membership.EventDead:
		switch {
		case !o.killed[b]:
			if o.steady {
				o.falseSuspected++
			}
		case c.Event.Kind == membership.EventDead && !o.killed[a] && !o.seenDown[b][a]:
			o.seenDown[b][a] = true
			o.pendingDown[b]--
			if o.pendingDown[b] == 0 {
				o.detected[b] = now.Sub(o.killedAt)
			}
		}
	}
}

// satisfy counts one condition of x's join as met.
func (o *realObserver) satisfy(x int, now time.Time) {
	o.need[x]--
	if o.need[x] == 0 {
		o.converged[x] = now.Sub(o.start[x])
	}
}

func (o *realObserver) setSteady(steady bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steady = steady
}

// kill records the victims before they are stopped.
func (o *realObserver) kill(victims []int, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.killedAt = at
	for _, v := range victims {
		o.killed[v] = true
	}
	for _, v := range victims {
		o.seenDown[v] = make([]bool, len(o.start))
		o.pendingDown[v] = len(o.start) - len(victims)
	}
}

func (o *realObserver) allDetected() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.detected) == len(o.killed)
}

func (o *realObserver) falseSuspicions() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.falseSuspected
}

// joinTimes summarises join convergence in protocol seconds.
func (o *realObserver) joinTimes() (p50, maxS float64, unconverged int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ts []float64
	for _, t := range o.converged {
		if t < 0 {
			unconverged++
			continue
		}
		ts = append(ts, t.Seconds()*o.scale)
	}
	p50, maxS = p50AndMax(ts)
	return p50, maxS, unconverged
}

// detectTimes summarises failure detection in protocol seconds.
func (o *realObserver) detectTimes() (p50, maxS float64, undetected int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ts []float64
	for _, t := range o.detected {
		ts = append(ts, t.Seconds()*o.scale)
	}
	p50, maxS = p50AndMax(ts)
	return p50, maxS, len(o.killed) - len(o.detected)
}

// p50AndMax is what the simulated experiment reports: the p50
// (stats.Percentile) and the maximum, zeros when empty.
func p50AndMax(ts []float64) (p50, maxV float64) {
	if len(ts) == 0 {
		return 0, 0
	}
	return stats.Percentile(ts, 0.5), slices.Max(ts)
}
