package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/io/transport"
)

func init() {
	Register(Bench{
		Name:    "rebalance",
		Summary: "join one node per DC, then decommission them, on 6 real nodes under client load: time, bytes streamed (inter-DC), latency, missing keys",
		Setup:   setupRebalance,
	})
}

// rebalanceOptions are the bench's flags.
type rebalanceOptions struct {
	keys           int
	valueBytes     int
	clients        int
	gossipInterval time.Duration
	baseline       time.Duration
	stepTimeout    time.Duration
}

// The bench's fixed layout: the two-dc-6 topology (3+3 nodes) over loopback, without WAN
// emulation, and a keyspace with two replicas in each DC.
const (
	rebalanceTopology    = "two-dc-6"
	rebalanceKeyspace    = "rebalance"
	rebalanceReplication = "dc1=2,dc2=2"
)

func setupRebalance(fs *flag.FlagSet) Runner {
	keys := fs.Int("keys", 20000, "keys loaded before the first step (keys x value-bytes x 4 replicas is the data on the cluster; e.g. --keys 200000 --value-bytes 1024 stores ~200 MB per copy)")
	valueBytes := fs.Int("value-bytes", 1024, "size of every value, loaded and written under load")
	clients := fs.Int("clients", 4, "client goroutines, each writing a new key at LOCAL_QUORUM then reading a loaded key at ONE, in a loop")
	gossip := fs.Duration("gossip-interval", 100*time.Millisecond, "gossip round of every node; the ring delay is five rounds")
	baseline := fs.Duration("baseline", 3*time.Second, "how long the client load runs before each step, for the 'before' latencies")
	stepTimeout := fs.Duration("step-timeout", 5*time.Minute, "give up on a step after this long")
	return func(ctx context.Context, env Env) (*Report, error) {
		opts := rebalanceOptions{keys: *keys, valueBytes: *valueBytes, clients: *clients, gossipInterval: *gossip, baseline: *baseline, stepTimeout: *stepTimeout}
		if opts.keys < 1 || opts.valueBytes < 1 || opts.clients < 1 || opts.gossipInterval <= 0 || opts.baseline <= 0 || opts.stepTimeout <= 0 {
			return nil, errors.New("--keys, --value-bytes, --clients, --gossip-interval, --baseline and --step-timeout must be positive")
		}
		return runRebalance(ctx, env, opts)
	}
}

// RebalanceRow is one step: what it took, what it streamed, what clients saw, and
// whether every key is still there afterwards.
type RebalanceRow struct {
	Step  string `json:"step"`
	Nodes string `json:"nodes"`
	// Seconds runs from the first node started (join) or the first Decommission call
	// (decommission) until every node of the cluster sees the ring change complete.
	Seconds float64 `json:"seconds"`
	Ranges  int64   `json:"ranges" table:"-"`
	Records int64   `json:"records" table:"-"`
	// StreamedBytes and StreamedBytesInterDC are the streamers' own counts (keys, values
	// and 9 bytes of metadata per record; stream.Progress, summed over every node).
	StreamedBytes        int64 `json:"streamed_bytes"`
	StreamedBytesInterDC int64 `json:"streamed_bytes_inter_dc"`
	// MinBytesInterDC is the least inter-DC streaming possible: 0 when every gainer's DC
	// already holds a replica of every range it gains.
	MinBytesInterDC int64 `json:"min_bytes_inter_dc" table:"-"`
	// WireBytes and WireBytesInterDC are the transport's frames of kind stream_range, both
	// directions (page requests and pages), as counted at the sender.
	WireBytes        uint64 `json:"wire_stream_range_bytes" table:"-"`
	WireBytesInterDC uint64 `json:"wire_stream_range_bytes_inter_dc" table:"-"`
	// Client latencies in the baseline window before the step and during the step.
	WriteMsP50Before float64 `json:"write_ms_p50_before" table:"-"`
	WriteMsP99Before float64 `json:"write_ms_p99_before"`
	WriteMsP50During float64 `json:"write_ms_p50_during" table:"-"`
	WriteMsP99During float64 `json:"write_ms_p99_during"`
	ReadMsP50Before  float64 `json:"read_ms_p50_before" table:"-"`
	ReadMsP99Before  float64 `json:"read_ms_p99_before"`
	ReadMsP50During  float64 `json:"read_ms_p50_during" table:"-"`
	ReadMsP99During  float64 `json:"read_ms_p99_during"`
	OpsDuring        int     `json:"ops_during" table:"-"`
	ErrorsDuring     int     `json:"errors_during"`
	// KeysChecked is every loaded key plus every write acknowledged so far; KeysMissing
	// counts the (key, node) pairs where a read at ONE through that node found nothing.
	KeysChecked int `json:"keys_checked" table:"-"`
	CheckNodes  int `json:"check_nodes" table:"-"`
	KeysMissing int `json:"keys_missing_at_one"`
}

// sample is one client operation.
type sample struct {
	at      time.Time // when it started
	latency time.Duration
	write   bool
	failed  bool
}

// clientLoad runs the steady client load and remembers every operation and every
// acknowledged write.
type clientLoad struct {
	mu      sync.Mutex
	samples []sample
	acked   []string
	stop    chan struct{}
	done    sync.WaitGroup
}

func startClientLoad(coords []*node.Node, clients, loaded, valueBytes int) *clientLoad {
	l := &clientLoad{stop: make(chan struct{})}
	value := make([]byte, valueBytes)
	for i := range clients {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			// Each client stays on one coordinator, spread over both DCs: LOCAL_QUORUM is
			// then local to that coordinator's DC.
			c := coords[i%len(coords)].Coordinator()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			for seq := 0; ; seq++ {
				select {
				case <-l.stop:
					return
				default:
				}
				key := fmt.Sprintf("live-%d-%07d", i, seq)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				start := time.Now()
				_, err := c.Put(ctx, rebalanceKeyspace, []byte(key), value, 0, consistency.LocalQuorum)
				w := sample{at: start, latency: time.Since(start), write: true, failed: err != nil}
				start = time.Now()
				_, found, err := c.Get(ctx, rebalanceKeyspace, loadedKey(rng.IntN(loaded)), consistency.One)
				r := sample{at: start, latency: time.Since(start), failed: err != nil || !found}
				cancel()
				l.mu.Lock()
				l.samples = append(l.samples, w, r)
				if !w.failed {
					l.acked = append(l.acked, key)
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *clientLoad) finish() {
	close(l.stop)
	l.done.Wait()
}

// ackedKeys returns the writes acknowledged so far.
func (l *clientLoad) ackedKeys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// window returns the latencies (ms) of the operations that started in [from, to).
func (l *clientLoad) window(from, to time.Time) (writes, reads []float64, ops, errs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		ops++
		if s.failed {
			errs++
			continue
		}
		ms := float64(s.latency) / float64(time.Millisecond)
		if s.write {
			writes = append(writes, ms)
		} else {
			reads = append(reads, ms)
		}
	}
	return writes, reads, ops, errs
}

func loadedKey(i int) []byte { return fmt.Appendf(nil, "key-%08d", i) }

// streamCounters is a snapshot of the cluster's streaming counts.
type streamCounters struct {
	ranges, records, bytes, crossDC int64
	wire                            map[transport.Flow]transport.Counter
}

func snapshotStreams(nodes []*node.Node, wire *transport.Stats) streamCounters {
	var s streamCounters
	for _, n := range nodes {
		p := n.StreamProgress()
		s.ranges += p.RangesDone.Load()
		s.records += p.Records.Load()
		s.bytes += p.Bytes.Load()
		s.crossDC += p.CrossDCBytes.Load()
	}
	s.wire = wire.Snapshot()
	return s
}

// wireStreamBytes returns the stream_range frame bytes between two snapshots, per DC
// pair ("dc1>dc2"), and their total and inter-DC sums.
func wireStreamBytes(before, after map[transport.Flow]transport.Counter) (perPair map[string]uint64, total, interDC uint64) {
	perPair = map[string]uint64{}
	for flow, c := range after {
		if flow.Kind.String() != "stream_range" {
			continue
		}
		delta := c.Bytes - before[flow].Bytes
		perPair[flow.FromDC+"_to_"+flow.ToDC] += delta
		total += delta
		if flow.FromDC != flow.ToDC {
			interDC += delta
		}
	}
	return perPair, total, interDC
}

func runRebalance(ctx context.Context, env Env, opts rebalanceOptions) (*Report, error) {
	topo, err := topology.Example(rebalanceTopology)
	if err != nil {
		return nil, err
	}
	// The work: the load, then two steps of a baseline, the change and the check.
	progress := env.StartProgress("rebalance", 7)
	defer progress.Done()
	progress.Add(0, "starting 6 nodes")
	template := node.Config{GossipInterval: opts.gossipInterval, ReplicaTimeout: 2 * time.Second}
	c, err := embedded.Start(topo, embedded.Options{Node: template})
	if err != nil {
		return nil, err
	}
	var joiners []*node.Node
	defer func() {
		for _, j := range joiners {
			j.Close()
		}
		c.Close()
	}()
	originals := append([]*node.Node(nil), c.Nodes...)
	if err := c.CreateKeyspace(ctx, schema.Keyspace{Name: rebalanceKeyspace, Replication: rebalanceReplication}); err != nil {
		return nil, err
	}
	convCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = c.WaitConverged(convCtx)
	cancel()
	if err != nil {
		return nil, err
	}

	progress.Add(0, "loading %d keys of %d bytes at ALL", opts.keys, opts.valueBytes)
	loadStart := time.Now()
	if err := loadKeys(ctx, originals, opts.keys, opts.valueBytes); err != nil {
		return nil, err
	}
	progress.Add(1, "loaded in %.1f s; client load for the baseline", time.Since(loadStart).Seconds())

	load := startClientLoad(originals, opts.clients, opts.keys, opts.valueBytes)
	defer load.finish()
	var rows []RebalanceRow
	wirePairs := map[string]map[string]uint64{}

	// step runs one ring change between a baseline window and the check afterwards.
	step := func(name, nodes string, change func(ctx context.Context) error, survivors func() []*node.Node) error {
		if !ctxtime.Sleep(ctx, opts.baseline) {
			return ctx.Err()
		}
		everyNode := append(append([]*node.Node(nil), originals...), joiners...)
		before := snapshotStreams(everyNode, c.Stats)
		start := time.Now()
		progress.Add(1, "%s: started", name)
		stepCtx, cancel := context.WithTimeout(ctx, opts.stepTimeout)
		err := change(stepCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		end := time.Now()
		everyNode = append(append([]*node.Node(nil), originals...), joiners...)
		after := snapshotStreams(everyNode, c.Stats)
		progress.Add(1, "%s: complete in %.1f s", name, end.Sub(start).Seconds())

		row := RebalanceRow{Step: name, Nodes: nodes, Seconds: round(end.Sub(start).Seconds(), 2),
			Ranges: after.ranges - before.ranges, Records: after.records - before.records,
			StreamedBytes: after.bytes - before.bytes, StreamedBytesInterDC: after.crossDC - before.crossDC}
		var pairs map[string]uint64
		pairs, row.WireBytes, row.WireBytesInterDC = wireStreamBytes(before.wire, after.wire)
		wirePairs[name] = pairs
		wb, rb, _, _ := load.window(start.Add(-opts.baseline), start)
		wd, rd, ops, errs := load.window(start, end)
		row.WriteMsP50Before, row.WriteMsP99Before = pct(wb, 0.5), pct(wb, 0.99)
		row.WriteMsP50During, row.WriteMsP99During = pct(wd, 0.5), pct(wd, 0.99)
		row.ReadMsP50Before, row.ReadMsP99Before = pct(rb, 0.5), pct(rb, 0.99)
		row.ReadMsP50During, row.ReadMsP99During = pct(rd, 0.5), pct(rd, 0.99)
		row.OpsDuring, row.ErrorsDuring = ops, errs

		keys := load.ackedKeys()
		for i := range opts.keys {
			keys = append(keys, string(loadedKey(i)))
		}
		check := survivors()
		progress.Add(0, "%s: reading %d keys at ONE through each of %d nodes", name, len(keys), len(check))
		missing, err := missingAtOne(ctx, check, keys)
		if err != nil {
			return err
		}
		progress.Add(1, "%s: %d (key, node) pairs missing", name, missing)
		row.KeysChecked, row.CheckNodes, row.KeysMissing = len(keys), len(check), missing
		rows = append(rows, row)
		return nil
	}

	// Step 1: one new node per DC joins; complete once every node sees all eight normal.
	join := func(ctx context.Context) error {
		for _, spec := range []struct{ id, dc string }{{"node-7", "dc1"}, {"node-8", "dc2"}} {
			cfg := template
			cfg.ID, cfg.DC, cfg.Listen, cfg.InMemory = spec.id, spec.dc, "127.0.0.1:0", true
			cfg.Seeds = []string{originals[0].Addr()}
			cfg.Stats, cfg.Logger = c.Stats, slog.New(slog.DiscardHandler)
			j, err := node.Start(cfg)
			if err != nil {
				return err
			}
			joiners = append(joiners, j)
		}
		all := append(append([]*node.Node(nil), originals...), joiners...)
		return waitRing(ctx, all, len(all))
	}
	survivorsAfterJoin := func() []*node.Node { return append(append([]*node.Node(nil), originals...), joiners...) }
	if err := step("join 2", "6 -> 8", join, survivorsAfterJoin); err != nil {
		return nil, err
	}

	// Step 2: the two new nodes are decommissioned, one after the other (a node refuses
	// to start a ring change while another is in progress); complete once every
	// remaining node sees six normal and both gone from the ring.
	decommission := func(ctx context.Context) error {
		all := append(append([]*node.Node(nil), originals...), joiners...)
		for i, j := range joiners {
			if _, err := j.Decommission(ctx, false); err != nil {
				return fmt.Errorf("decommission %s: %w", j.ID(), err)
			}
			// Decommission returns once the node has announced that it left; the next
			// one must see that, or it refuses to start a second ring change.
			if err := waitRing(ctx, all, len(all)-i-1); err != nil {
				return err
			}
		}
		return nil
	}
	// The decommissioned nodes are stopped after the step's clock stops, as an operator
	// would stop them; the check reads through the six that remain.
	stopLeft := func() []*node.Node {
		for _, j := range joiners {
			j.Close()
		}
		joiners = nil
		return originals
	}
	if err := step("decommission 2", "8 -> 6", decommission, stopLeft); err != nil {
		return nil, err
	}
	return rebalanceReport(rows, wirePairs, opts), nil
}

// loadKeys writes keys at ALL, so that every replica holds the loaded data before the
// first step.
func loadKeys(ctx context.Context, nodes []*node.Node, keys, valueBytes int) error {
	value := make([]byte, valueBytes)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := nodes[w%len(nodes)].Coordinator()
			for {
				i := int(next.Add(1) - 1)
				if i >= keys || ctx.Err() != nil {
					return
				}
				if _, err := c.Put(ctx, rebalanceKeyspace, loadedKey(i), value, 0, consistency.All); err != nil {
					errs <- fmt.Errorf("load key %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(<-errs, ctx.Err())
}

// waitRing waits until every node of nodes sees exactly want nodes normal and up on the
// ring, and none joining or leaving: the ring change is complete everywhere.
func waitRing(ctx context.Context, nodes []*node.Node, want int) error {
	for {
		settled := true
		for _, n := range nodes {
			normal := 0
			for _, other := range n.View().Nodes() {
				switch other.Status {
				case cluster.StatusNormal:
					if n.View().State(other.ID).Reachable() {
						normal++
					}
				case cluster.StatusJoining, cluster.StatusLeaving, cluster.StatusBooting:
					settled = false
				}
			}
			settled = settled && normal == want
		}
		if settled {
			return nil
		}
		if !ctxtime.Sleep(ctx, 10*time.Millisecond) {
			return fmt.Errorf("the ring did not settle on %d normal nodes: %w", want, ctx.Err())
		}
	}
}

// missingAtOne reads every key at ONE through every node and counts the misses.
func missingAtOne(ctx context.Context, nodes []*node.Node, keys []string) (int, error) {
	var missing atomic.Int64
	var wg sync.WaitGroup
	for _, n := range nodes {
		for part := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := part; i < len(keys); i += 4 {
					if ctx.Err() != nil {
						return
					}
					rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					_, found, err := n.Coordinator().Get(rctx, rebalanceKeyspace, []byte(keys[i]), consistency.One)
					cancel()
					if err != nil || !found {
						missing.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	return int(missing.Load()), ctx.Err()
}

func pct(ms []float64, q float64) float64 { return round(stats.Percentile(ms, q), 2) }

func rebalanceReport(rows []RebalanceRow, wirePairs map[string]map[string]uint64, opts rebalanceOptions) *Report {
	missing := 0
	for _, r := range rows {
		missing += r.KeysMissing
	}
	return &Report{
		Bench: "rebalance",
		Scale: fmt.Sprintf("%s (3+3 nodes) in one process over loopback, no WAN emulation; keyspace %s; %d keys x %d-byte values loaded at ALL (%.1f MB per copy); %d clients; gossip %v (ring delay %v); %d cores shared by every node and client",
			rebalanceTopology, rebalanceReplication, opts.keys, opts.valueBytes, float64(opts.keys*opts.valueBytes)/1e6, opts.clients, opts.gossipInterval, 5*opts.gossipInterval, runtime.NumCPU()),
		Rows: rows,
		Summary: map[string]any{
			"keys_missing_total":             missing,
			"wire_stream_range_bytes_by_dcs": wirePairs,
		},
		Notes: []string{
			"join 2: node-7 (dc1) and node-8 (dc2) start together and join through node-1; seconds run from their start to every node seeing 8 normal, ring delay (5 gossip rounds) and ring learning included",
			"decommission 2: node-7 then node-8 (a second ring change is refused while one is in progress); seconds run from the first Decommission call until every remaining node sees 6 normal, both ring delays included",
			"streamed bytes are the streamers' counts (key + value + 9 bytes per record); wire bytes are the transport's stream_range frames in both directions (page requests and pages, with framing), counted at the sender",
			"min_bytes_inter_dc is 0 because dc1=2,dc2=2 puts a replica of every key in each DC: every gainer can pull every range from its own DC",
			"client load: each client writes a new key at LOCAL_QUORUM then reads a random loaded key at ONE, through a fixed coordinator among the six original nodes; 'before' is the baseline window just before the step, 'during' is the step itself; failed operations are counted in errors_during and left out of the percentiles",
			"keys_missing_at_one counts (key, node) pairs: every loaded key and every acknowledged write so far, read at ONE through every node on the ring after the step; it must be 0",
			"the issue's 'few hundred MB' is reachable with flags, e.g. --keys 300000 --value-bytes 1024 (300 MB per copy, 1.2 GB with four replicas, held in memory)",
		},
	}
}
