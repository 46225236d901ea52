// Package demo runs kura's demonstration: an embedded three-datacenter cluster with an
// emulated WAN, loaded with data and driven by a mixed read/write workload at several
// consistency levels through the real client, so that one can see what each level costs
// when replicas sit across slow links.
package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/io/topology"
)

// Options configures a demo run.
type Options struct {
	Duration        time.Duration // of the mixed workload, after loading; default 20 s
	Topology        *topology.Topology
	Keys            int     // loaded before the workload; default 2000
	ValueBytes      int     // default 256
	ClientsPerDC    int     // concurrent clients in each DC; default 8
	ReadFraction    float64 // default 0.5
	Replication     string  // keyspace replication; default 2 replicas in each DC
	Levels          []consistency.Level
	Progress        io.Writer // a live progress line; nil for none
	ProgressEvery   time.Duration
	ClusterLogLevel string
}

// LevelResult is what the workload saw at one consistency level.
type LevelResult struct {
	Ops          int     `json:"ops"`
	Errors       int     `json:"errors"`
	LatencyMsP50 float64 `json:"latency_ms_p50"`
	LatencyMsP99 float64 `json:"latency_ms_p99"`
}

// Result is a demo run's summary; its JSON form is `kura demo --json`.
type Result struct {
	Topology      string                 `json:"topology"`
	Nodes         int                    `json:"nodes"`
	Replication   string                 `json:"replication"`
	LoadedKeys    int                    `json:"loaded_keys"`
	Ops           int                    `json:"ops"`
	Errors        int                    `json:"errors"`
	DurationS     float64                `json:"duration_s"`
	OpsPerS       float64                `json:"ops_per_s"`
	InterDCBytes  uint64                 `json:"interdc_bytes"`
	IntraDCBytes  uint64                 `json:"intradc_bytes"`
	ByConsistency map[string]LevelResult `json:"by_consistency"`
	BytesByDCPair []DCPairBytes          `json:"bytes_by_dc_pair"`
	FirstErrors   []string               `json:"first_errors,omitempty"`
	Links         []Link                 `json:"links"`
	levelsInOrder []string
}

// DCPairBytes is the traffic of one direction between two DCs (the same DC for traffic
// inside one).
type DCPairBytes struct {
	FromDC string `json:"from_dc"`
	// ToDC is "seed" for frames sent to a seed address before the node there, and so its
	// DC, was known.
	ToDC  string `json:"to_dc"`
	Bytes uint64 `json:"bytes"`
}

// Link is the emulated link between two DCs.
type Link struct {
	DCs       [2]string `json:"dcs"`
	LatencyMs float64   `json:"latency_ms"` // one way
}

// DefaultLevels are the levels the demo exercises, cheapest first.
func DefaultLevels() []consistency.Level {
	return []consistency.Level{consistency.One, consistency.LocalQuorum, consistency.Quorum, consistency.EachQuorum, consistency.All}
}

// Run starts the cluster, loads it, runs the workload and returns the summary.
func Run(ctx context.Context, opts Options) (Result, error) {
	opts = withDefaults(opts)
	c, err := embedded.Start(opts.Topology, embedded.Options{EmulateWAN: true, ClientAPI: true, RESP: true, HTTP: true})
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	if opts.Progress != nil {
		first := c.Nodes[0]
		fmt.Fprintf(opts.Progress, "while it runs: redis-cli -u redis://%s then KURA.KEYSPACE demo; metrics on http://%s/metrics\n", first.RESPAddr(), first.HTTPAddr())
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitConverged(startCtx); err != nil {
		return Result{}, err
	}

	// One client per DC, as an application server in that DC would have.
	clients := map[string]*client.Client{}
	for _, n := range c.Nodes {
		dc := n.Self().DC
		if clients[dc] != nil {
			continue
		}
		cl, err := client.Dial(startCtx, []string{n.ClientAddr()}, client.Options{LocalDC: dc})
		if err != nil {
			return Result{}, err
		}
		defer cl.Close()
		clients[dc] = cl
	}
	first := clients[c.Nodes[0].Self().DC]
	if err := first.CreateKeyspace(startCtx, "demo", opts.Replication, ""); err != nil {
		return Result{}, fmt.Errorf("create keyspace: %w", err)
	}
	if err := c.WaitConverged(startCtx); err != nil {
		return Result{}, err
	}
	for _, cl := range clients {
		if _, err := cl.Keyspaces(startCtx); err != nil { // refreshes routing for the new keyspace
			return Result{}, err
		}
	}

	w := &workload{opts: opts, clients: clients, stats: map[consistency.Level]*levelStats{}}
	for _, l := range opts.Levels {
		w.stats[l] = &levelStats{}
	}
	if err := w.load(ctx, first); err != nil {
		return Result{}, fmt.Errorf("load: %w", err)
	}
	elapsed := w.run(ctx, c)
	return w.result(c, elapsed), nil
}

func withDefaults(o Options) Options {
	if o.Duration <= 0 {
		o.Duration = 20 * time.Second
	}
	if o.Topology == nil {
		o.Topology, _ = topology.Example("three-dc")
	}
	if o.Keys <= 0 {
		o.Keys = 2000
	}
	if o.ValueBytes <= 0 {
		o.ValueBytes = 256
	}
	if o.ClientsPerDC <= 0 {
		o.ClientsPerDC = 8
	}
	if o.ReadFraction <= 0 {
		o.ReadFraction = 0.5
	}
	if o.Replication == "" {
		o.Replication = ""
		for i, dc := range o.Topology.Datacenters {
			if i > 0 {
				o.Replication += ","
			}
			o.Replication += fmt.Sprintf("%s=%d", dc.Name, min(2, len(dc.Nodes)))
		}
	}
	if len(o.Levels) == 0 {
		o.Levels = DefaultLevels()
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = time.Second
	}
	return o
}

// levelStats collects one level's latencies.
type levelStats struct {
	mu        sync.Mutex
	latencies []time.Duration
	errors    int
}

type workload struct {
	opts    Options
	clients map[string]*client.Client
	stats   map[consistency.Level]*levelStats
	ops     atomic.Int64
	errs    atomic.Int64

	errMu       sync.Mutex
	firstErrors []string
}

func key(i int) []byte { return []byte(fmt.Sprintf("user:%06d", i)) }

// load writes every key once at LOCAL_QUORUM, 32 at a time.
func (w *workload) load(ctx context.Context, cl *client.Client) error {
	value := make([]byte, w.opts.ValueBytes)
	sem := make(chan struct{}, 32)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for i := 0; i < w.opts.Keys; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			if _, err := cl.Put(ctx, "demo", key(i), value, consistency.LocalQuorum); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}(i)
		if w.opts.Progress != nil && (i+1)%500 == 0 {
			fmt.Fprintf(w.opts.Progress, "\rloading %d/%d keys", i+1, w.opts.Keys)
		}
	}
	wg.Wait()
	if w.opts.Progress != nil {
		fmt.Fprintf(w.opts.Progress, "\rloaded %d keys          \n", w.opts.Keys)
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// run drives ClientsPerDC workers in every DC until Duration has passed.
func (w *workload) run(ctx context.Context, c *embedded.Cluster) time.Duration {
	runCtx, cancel := context.WithTimeout(ctx, w.opts.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	seed := uint64(1)
	for dc, cl := range w.clients {
		for i := 0; i < w.opts.ClientsPerDC; i++ {
			wg.Add(1)
			seed++
			go func(cl *client.Client, rng *rand.Rand) {
				defer wg.Done()
				w.worker(runCtx, ctx, cl, rng)
			}(cl, rand.New(rand.NewPCG(seed, uint64(len(dc)))))
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	ticker := time.NewTicker(w.opts.ProgressEvery)
	defer ticker.Stop()
	for {
		select {
		case <-done:
			if w.opts.Progress != nil {
				fmt.Fprintln(w.opts.Progress)
			}
			return time.Since(start)
		case <-ticker.C:
			if w.opts.Progress != nil {
				el := time.Since(start)
				fmt.Fprintf(w.opts.Progress, "\r[%3.0fs/%.0fs] ops %d (%.0f/s)  errors %d  inter-DC %.1f MB",
					el.Seconds(), w.opts.Duration.Seconds(), w.ops.Load(), float64(w.ops.Load())/el.Seconds(),
					w.errs.Load(), float64(c.Stats.InterDCBytes())/1e6)
			}
		}
	}
}

// requestTimeout bounds one operation of the workload.
const requestTimeout = 10 * time.Second

// worker issues operations until runCtx ends. Each operation has its own deadline under
// ctx, so that those in flight when the run ends finish and are counted as they went.
func (w *workload) worker(runCtx, ctx context.Context, cl *client.Client, rng *rand.Rand) {
	value := make([]byte, w.opts.ValueBytes)
	for runCtx.Err() == nil {
		level := w.opts.Levels[rng.IntN(len(w.opts.Levels))]
		k := key(rng.IntN(w.opts.Keys))
		read := rng.Float64() < w.opts.ReadFraction
		if !read {
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
		}
		reqCtx, cancel := context.WithTimeout(ctx, requestTimeout)
		start := time.Now()
		var err error
		if read {
			_, _, err = cl.Get(reqCtx, "demo", k, level)
		} else {
			_, err = cl.Put(reqCtx, "demo", k, value, level)
		}
		latency := time.Since(start)
		cancel()
		if ctx.Err() != nil {
			return // interrupted: not the cluster's failure
		}
		st := w.stats[level]
		st.mu.Lock()
		if err != nil {
			st.errors++
		} else {
			st.latencies = append(st.latencies, latency)
		}
		st.mu.Unlock()
		w.ops.Add(1)
		if err != nil {
			w.errs.Add(1)
			w.errMu.Lock()
			if len(w.firstErrors) < 5 {
				w.firstErrors = append(w.firstErrors, fmt.Sprintf("%v: %v", level, err))
			}
			w.errMu.Unlock()
		}
	}
}

func (w *workload) result(c *embedded.Cluster, elapsed time.Duration) Result {
	r := Result{
		Topology:      c.Topology.Name,
		Nodes:         len(c.Nodes),
		Replication:   w.opts.Replication,
		LoadedKeys:    w.opts.Keys,
		Ops:           int(w.ops.Load()),
		Errors:        int(w.errs.Load()),
		DurationS:     elapsed.Seconds(),
		OpsPerS:       float64(w.ops.Load()) / elapsed.Seconds(),
		ByConsistency: map[string]LevelResult{},
		FirstErrors:   w.firstErrors,
	}
	pairs := map[[2]string]uint64{}
	for flow, counter := range c.Stats.Snapshot() {
		pairs[[2]string{flow.FromDC, cmp.Or(flow.ToDC, "seed")}] += counter.Bytes
		if flow.FromDC != flow.ToDC {
			r.InterDCBytes += counter.Bytes
		} else {
			r.IntraDCBytes += counter.Bytes
		}
	}
	for pair, bytes := range pairs {
		r.BytesByDCPair = append(r.BytesByDCPair, DCPairBytes{FromDC: pair[0], ToDC: pair[1], Bytes: bytes})
	}
	slices.SortFunc(r.BytesByDCPair, func(a, b DCPairBytes) int {
		return cmp.Or(cmp.Compare(a.FromDC, b.FromDC), cmp.Compare(a.ToDC, b.ToDC))
	})
	for i, a := range c.Topology.Datacenters {
		for _, b := range c.Topology.Datacenters[i+1:] {
			if spec, err := c.Topology.Link(a.Name, b.Name); err == nil {
				r.Links = append(r.Links, Link{DCs: [2]string{a.Name, b.Name}, LatencyMs: float64(spec.Latency) / float64(time.Millisecond)})
			}
		}
	}
	for _, l := range w.opts.Levels {
		st := w.stats[l]
		r.ByConsistency[l.String()] = LevelResult{
			Ops:          len(st.latencies) + st.errors,
			Errors:       st.errors,
			LatencyMsP50: percentileMs(st.latencies, 0.50),
			LatencyMsP99: percentileMs(st.latencies, 0.99),
		}
		r.levelsInOrder = append(r.levelsInOrder, l.String())
	}
	return r
}

// percentileMs is stats.Percentile of latencies, in milliseconds.
func percentileMs(latencies []time.Duration, q float64) float64 {
	return float64(stats.Percentile(latencies, q)) / float64(time.Millisecond)
}

// WriteSummary prints the result for people.
func (r Result) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "\nkura demo: %d nodes in topology %s, keyspace replication %s, %d keys loaded\n",
		r.Nodes, r.Topology, r.Replication, r.LoadedKeys)
	fmt.Fprint(w, "emulated one-way latency between DCs:")
	for i, l := range r.Links {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s-%s %.0f ms", sep, l.DCs[0], l.DCs[1], l.LatencyMs)
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprintf(w, "%-13s %8s %7s %10s %10s\n", "consistency", "ops", "errors", "p50 ms", "p99 ms")
	for _, name := range r.levelsInOrder {
		l := r.ByConsistency[name]
		fmt.Fprintf(w, "%-13s %8d %7d %10.2f %10.2f\n", name, l.Ops, l.Errors, l.LatencyMsP50, l.LatencyMsP99)
	}
	fmt.Fprintf(w, "\n%d ops in %.1f s (%.0f ops/s), %d errors\n", r.Ops, r.DurationS, r.OpsPerS, r.Errors)
	fmt.Fprintf(w, "bytes between nodes: %.1f MB across DCs, %.1f MB inside DCs (whole run, load included)\n",
		float64(r.InterDCBytes)/1e6, float64(r.IntraDCBytes)/1e6)
	for _, e := range r.FirstErrors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// ErrFailed is returned by callers that treat workload errors as a failed demo.
var ErrFailed = errors.New("demo saw errors")
