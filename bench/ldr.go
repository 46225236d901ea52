package bench

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/embedded"
	"github.com/kuradb/kura/erasure"
	"github.com/kuradb/kura/node"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/topology"
	"github.com/kuradb/kura/transport"
)

func init() {
	Register(Bench{
		Name:    "ldr",
		Summary: "paper 000 LDR: inter-DC bytes per get and storage over (m, k) and the remote DC's share (Figs. 9, 10)",
		Setup:   setupLDR,
	})
}

// ldrConfig holds the bench's flags as given.
type ldrConfig struct {
	dcsNodes    string
	valueBytes  int
	keys        int
	grid        string
	remoteShare string
	shareStep   float64
	sweep       string
	latencyKeys int
	seed        uint64
}

func setupLDR(fs *flag.FlagSet) Runner {
	cfg := &ldrConfig{}
	fs.StringVar(&cfg.dcsNodes, "dcs-nodes", "20,10", "nodes per DC of the Fig. 9 cluster (the paper simulated 500,500); the Fig. 10 clusters have as many nodes in all")
	fs.IntVar(&cfg.valueBytes, "value-bytes", 10240, "value size (the paper: 10 KB random values)")
	fs.IntVar(&cfg.keys, "keys", 3000, "keys per scheme, each read once from every DC (the paper: 10,000)")
	fs.StringVar(&cfg.grid, "grid", "2..8", "Fig. 9: every (m, k) with lo <= k < m <= hi, and stripes (k = m) for lo <= m <= hi")
	fs.StringVar(&cfg.remoteShare, "remote-share", "0.1..0.9", "Fig. 10: the remote DC's share of the nodes, lo..hi in steps of --remote-share-step, or a list")
	fs.Float64Var(&cfg.shareStep, "remote-share-step", 0.1, "step of the --remote-share range")
	fs.StringVar(&cfg.sweep, "sweep", "6,4", "Fig. 10: the (m, k) of the sweep")
	fs.IntVar(&cfg.latencyKeys, "latency-keys", 40, "keys per scheme read from each DC of the Tokyo/Sao Paulo topology with its WAN emulated, for get latency (0 skips it)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of keys, values and coordinators")
	return func(ctx context.Context, env Env) (*Report, error) {
		plan, err := cfg.plan()
		if err != nil {
			return nil, err
		}
		return runLDR(ctx, env, plan)
	}
}

// ldrPlan is the parsed configuration.
type ldrPlan struct {
	dcsNodes       []int
	valueBytes     int
	keys           int
	gridLo, gridHi int
	shares         []float64
	sweep          schema.Erasure
	latencyKeys    int
	seed           uint64
}

func (c ldrConfig) plan() (ldrPlan, error) {
	p := ldrPlan{valueBytes: c.valueBytes, keys: c.keys, latencyKeys: c.latencyKeys, seed: c.seed}
	for _, f := range strings.Split(c.dcsNodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return p, fmt.Errorf("--dcs-nodes %q: want positive node counts per DC, e.g. 20,10", c.dcsNodes)
		}
		p.dcsNodes = append(p.dcsNodes, n)
	}
	if len(p.dcsNodes) < 2 {
		return p, fmt.Errorf("--dcs-nodes %q: want at least two DCs", c.dcsNodes)
	}
	lo, hi, ok := strings.Cut(c.grid, "..")
	var errLo, errHi error
	p.gridLo, errLo = strconv.Atoi(strings.TrimSpace(lo))
	p.gridHi, errHi = strconv.Atoi(strings.TrimSpace(hi))
	if !ok || errLo != nil || errHi != nil || p.gridLo < 1 || p.gridHi <= p.gridLo || p.gridHi > erasure.MaxChunks {
		return p, fmt.Errorf("--grid %q: want lo..hi with 1 <= lo < hi, e.g. 2..8", c.grid)
	}
	shares, err := parseShares(c.remoteShare, c.shareStep)
	if err != nil {
		return p, err
	}
	p.shares = shares
	if p.sweep, err = schema.ParseErasure(c.sweep); err != nil || p.sweep.K < 1 || p.sweep.K > p.sweep.M {
		return p, fmt.Errorf("--sweep %q: want M,K with 1 <= K <= M", c.sweep)
	}
	if p.valueBytes < 1 || p.keys < 1 || p.latencyKeys < 0 {
		return p, fmt.Errorf("--value-bytes and --keys must be positive, --latency-keys not negative")
	}
	return p, nil
}

// parseShares reads "lo..hi" (stepped) or a comma-separated list of shares in (0, 1).
func parseShares(spec string, step float64) ([]float64, error) {
	bad := fmt.Errorf("--remote-share %q: want lo..hi or a list of shares strictly between 0 and 1", spec)
	var shares []float64
	if lo, hi, ok := strings.Cut(spec, ".."); ok {
		from, errLo := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		to, errHi := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if errLo != nil || errHi != nil || !(step > 0) || to < from {
			return nil, bad
		}
		// Count steps in integers so that 0.1..0.9 gives exactly 9 shares.
		for i := 0; from+float64(i)*step <= to+step/1e6; i++ {
			shares = append(shares, math.Round((from+float64(i)*step)*1e6)/1e6)
		}
	} else {
		for _, f := range strings.Split(spec, ",") {
			s, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return nil, bad
			}
			shares = append(shares, s)
		}
	}
	for _, s := range shares {
		if !(s > 0 && s < 1) {
			return nil, bad
		}
	}
	return shares, nil
}

// ldrRow is one measured case: a scheme read from one DC.
type ldrRow struct {
	Experiment string `json:"experiment"` // fig9, fig10 or latency
	Scheme     string `json:"scheme"`     // ldr, stripe (k = m), replicate (a copy per DC), single (one copy)
	M          int    `json:"m"`
	K          int    `json:"k"`
	ReaderDC   string `json:"reader_dc"`
	// RemoteShare is the ring share of the nodes outside the reader's DC: where a chunk
	// lands with that probability.
	RemoteShare float64 `json:"remote_share"`
	Gets        int     `json:"gets"`
	// StorageRatio is the bytes stored (keys and values of every record on every node)
	// over the raw bytes (keys and values put); StorageRatioExpected is m/k plus the chunk
	// metadata (see the notes).
	StorageRatio             float64 `json:"storage_ratio"`
	StorageRatioExpected     float64 `json:"storage_ratio_expected"`
	InterDCBytesPerGetMean   float64 `json:"interdc_bytes_per_get_mean"`
	InterDCBytesPerGetStddev float64 `json:"interdc_bytes_per_get_stddev"`
	// ExpectedInterDCBytesPerGet is E[max(0, k-L)] x size / k, L ~ Binomial(m, local
	// share); PlacedInterDCBytesPerGet the same mean over the keys' actual chunk
	// placement, which removes the sampling of placement from the comparison.
	ExpectedInterDCBytesPerGet float64 `json:"expected_interdc_bytes_per_get"`
	// ExpectedInterDCBytesPerGetStderr is the standard error of a mean over Gets random placements: how far
	// the mean may stray from the expectation by chance.
	ExpectedInterDCBytesPerGetStderr float64 `json:"expected_interdc_bytes_per_get_stderr"`
	PlacedInterDCBytesPerGet         float64 `json:"placed_interdc_bytes_per_get"`
	// ErrorPct is (mean - expected) / expected; absent when nothing is expected.
	ErrorPct      *float64 `json:"error_pct,omitempty"`
	LatencyMsMean *float64 `json:"latency_ms_mean,omitempty"`
	LatencyMsP50  *float64 `json:"latency_ms_p50,omitempty"`
	LatencyMsP99  *float64 `json:"latency_ms_p99,omitempty"`
}

// ldrScheme is one way of storing the values, as a keyspace.
type ldrScheme struct {
	name     string
	m, k     int
	keyspace schema.Keyspace
}

func erasureScheme(name string, m, k int) ldrScheme {
	return ldrScheme{name: name, m: m, k: k, keyspace: schema.Keyspace{Name: fmt.Sprintf("e%d_%d", m, k), Erasure: schema.Erasure{M: m, K: k}}}
}

// baselineSchemes are the replicated comparisons: a full copy in every DC, and one copy.
func baselineSchemes(dcs []string) []ldrScheme {
	perDC := make([]string, len(dcs))
	for i, dc := range dcs {
		perDC[i] = dc + "=1"
	}
	return []ldrScheme{
		{name: "replicate", m: 1, k: 1, keyspace: schema.Keyspace{Name: "replicate", Replication: strings.Join(perDC, ",")}},
		{name: "single", m: 1, k: 1, keyspace: schema.Keyspace{Name: "single", Replication: "simple=1"}},
	}
}

// ldrKeyBytes is the paper's 160-bit key.
const ldrKeyBytes = 20

// ldrData is the bench's keys and values: uniformly random, as the paper's. Keys avoid
// the 0x00 byte, so every chunk key is exactly the key plus 3 bytes and the stated
// metadata overhead is exact.
type ldrData struct {
	keys, values [][]byte
}

func newLDRData(rng *rand.Rand, keys, valueBytes int) ldrData {
	d := ldrData{keys: make([][]byte, keys), values: make([][]byte, keys)}
	for i := range d.keys {
		d.keys[i] = make([]byte, ldrKeyBytes)
		for j := range d.keys[i] {
			d.keys[i][j] = byte(1 + rng.IntN(255))
		}
		d.values[i] = make([]byte, valueBytes)
		for j := range d.values[i] {
			d.values[i][j] = byte(rng.Uint32())
		}
	}
	return d
}

func (d ldrData) rawBytes() int64 {
	var total int64
	for i := range d.keys {
		total += int64(len(d.keys[i]) + len(d.values[i]))
	}
	return total
}

// expectedStorageRatio is what a scheme should store per raw byte: copies for the
// baselines; for erasure codes m chunks of (key + 3-byte chunk-key suffix, a chunk header,
// a shard padded to ceil(size/k)).
func expectedStorageRatio(s ldrScheme, dcs, keyBytes, valueBytes int) float64 {
	raw := float64(keyBytes + valueBytes)
	switch s.name {
	case "replicate":
		return float64(dcs)
	case "single":
		return 1
	}
	code, err := erasure.New(s.m, s.k)
	if err != nil {
		return math.NaN()
	}
	return float64(s.m*(keyBytes+3+code.ChunkBytes(valueBytes))) / raw
}

// remoteChunks returns the mean and standard deviation of max(0, k - L) for L ~
// Binomial(m, localShare): the chunks a local-first get must fetch from other DCs. A
// single copy is (m, k) = (1, 1).
func remoteChunks(m, k int, localShare float64) (mean, stddev float64) {
	var second float64
	for l := 0; l < k; l++ {
		pmf := binomialPMF(m, l, localShare)
		mean += float64(k-l) * pmf
		second += float64((k-l)*(k-l)) * pmf
	}
	return mean, math.Sqrt(max(0, second-mean*mean))
}

func binomialPMF(n, x int, p float64) float64 {
	lg := func(v int) float64 { r, _ := math.Lgamma(float64(v + 1)); return r }
	return math.Exp(lg(n)-lg(x)-lg(n-x)) * math.Pow(p, float64(x)) * math.Pow(1-p, float64(n-x))
}

// ldrCluster is one embedded cluster and what the bench knows of its ring.
type ldrCluster struct {
	*embedded.Cluster
	dcs       []string
	nodesByDC map[string][]*node.Node
	share     map[string]float64 // ring share per DC
	ring      *ring.Ring
	readKind  transport.Kind
}

// ldrTopology builds a topology with the given nodes per DC ("dc1", "dc2", ...); its
// figures matter only when the WAN is emulated, which the byte-counting runs do not do.
func ldrTopology(nodesPerDC []int) *topology.Topology {
	topo := &topology.Topology{Name: "ldr-bench"}
	for i, n := range nodesPerDC {
		dc := topology.Datacenter{Name: fmt.Sprintf("dc%d", i+1), LatencyMs: 0.2, BandwidthMbps: 1000}
		for j := range n {
			dc.Nodes = append(dc.Nodes, topology.Node{ID: fmt.Sprintf("dc%d-n%02d", i+1, j+1)})
		}
		topo.Datacenters = append(topo.Datacenters, dc)
		for j := range i {
			topo.Links = append(topo.Links, topology.Link{Between: [2]string{fmt.Sprintf("dc%d", j+1), dc.Name}, LatencyMs: 50, BandwidthMbps: 100})
		}
	}
	return topo
}

func startLDRCluster(ctx context.Context, topo *topology.Topology, emulateWAN bool, schemes []ldrScheme) (*ldrCluster, error) {
	c, err := embedded.Start(topo, embedded.Options{
		EmulateWAN: emulateWAN,
		// Gossip at its default pace leaves the two cores to the experiment.
		Node: node.Config{ReplicaTimeout: time.Minute},
	})
	if err != nil {
		return nil, err
	}
	lc := &ldrCluster{Cluster: c, nodesByDC: map[string][]*node.Node{}, share: map[string]float64{}, readKind: transport.RegisterKind("read")}
	fail := func(err error) (*ldrCluster, error) {
		c.Close()
		return nil, err
	}
	for _, ks := range schemes {
		if err := c.CreateKeyspace(ctx, ks.keyspace); err != nil {
			return fail(fmt.Errorf("create keyspace %s: %w", ks.keyspace.Name, err))
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		return fail(err)
	}
	if lc.ring, err = c.Nodes[0].Coordinator().Ring(); err != nil {
		return fail(err)
	}
	for _, n := range c.Nodes {
		dc := n.Self().DC
		if len(lc.nodesByDC[dc]) == 0 {
			lc.dcs = append(lc.dcs, dc)
		}
		lc.nodesByDC[dc] = append(lc.nodesByDC[dc], n)
		lc.share[dc] += lc.ring.Share(n.ID())
	}
	return lc, nil
}

// load puts every key of d into the scheme's keyspace at ALL, so that every chunk is in
// place before the gets, through random coordinators, a few at a time.
func (lc *ldrCluster) load(ctx context.Context, s ldrScheme, d ldrData, seed uint64) error {
	const workers = 4
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range jobs {
				co := lc.Nodes[rng.IntN(len(lc.Nodes))].Coordinator()
				if _, err := co.Put(ctx, s.keyspace.Name, d.keys[i], d.values[i], consistency.All); err != nil {
					errs <- fmt.Errorf("put into %s: %w", s.keyspace.Name, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range d.keys {
		select {
		case jobs <- i:
		case err = <-errs:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	return err
}

// storageRatio is the bytes every node stores for the scheme over the raw bytes.
func (lc *ldrCluster) storageRatio(s ldrScheme, d ldrData) (float64, error) {
	var stored int64
	for _, n := range lc.Nodes {
		_, b, err := n.Coordinator().StoredBytes(s.keyspace.Name)
		if err != nil {
			return 0, err
		}
		stored += b
	}
	return float64(stored) / float64(d.rawBytes()), nil
}

// interDCReadBytes is the read traffic (chunk or replica requests and their answers)
// that crossed between DCs so far.
func (lc *ldrCluster) interDCReadBytes() uint64 {
	var total uint64
	for flow, counter := range lc.Stats.Snapshot() {
		if flow.Kind == lc.readKind && flow.FromDC != flow.ToDC {
			total += counter.Bytes
		}
	}
	return total
}

// localCopies counts the chunks (or copies) of key the reader's DC holds.
func (lc *ldrCluster) localCopies(ctx context.Context, s ldrScheme, key []byte, dc string) (int, error) {
	switch s.name {
	case "replicate":
		return 1, nil
	case "single":
		owner := ring.Simple(1).Replicas(lc.ring, ring.HashPartitioner().Token(key))[0]
		return boolInt(owner.DC == dc), nil
	}
	owners, err := lc.Nodes[0].Coordinator().ChunkOwners(ctx, s.keyspace.Name, key)
	if err != nil {
		return 0, err
	}
	local := 0
	for _, o := range owners {
		local += boolInt(o.DC == dc)
	}
	return local, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// getStats is what the gets of one scheme from one DC measured.
type getStats struct {
	bytes      []float64 // inter-DC bytes of each get
	latencies  []time.Duration
	placed     float64 // mean of max(0, k - L) x size / k over the keys read
	localGets  int     // gets of keys whose reader DC held >= k chunks
	localWAN   int     // of which sent inter-DC bytes (must stay 0)
	wrongValue int
}

// measureGets reads every key once at ONE from random nodes of dc, one get at a time,
// counting each get's inter-DC read bytes from the transport's counters.
func (lc *ldrCluster) measureGets(ctx context.Context, s ldrScheme, d ldrData, dc string, rng *rand.Rand) (getStats, error) {
	var st getStats
	size := float64(len(d.values[0]))
	for _, i := range rng.Perm(len(d.keys)) {
		local, err := lc.localCopies(ctx, s, d.keys[i], dc)
		if err != nil {
			return st, err
		}
		co := lc.nodesByDC[dc][rng.IntN(len(lc.nodesByDC[dc]))].Coordinator()
		before := lc.interDCReadBytes()
		start := time.Now()
		rec, found, err := co.Get(ctx, s.keyspace.Name, d.keys[i], consistency.One)
		elapsed := time.Since(start)
		if err != nil {
			return st, fmt.Errorf("get from %s of %s: %w", dc, s.keyspace.Name, err)
		}
		crossed := float64(lc.interDCReadBytes() - before)
		if !found || !bytes.Equal(rec.Value, d.values[i]) {
			st.wrongValue++
		}
		st.bytes = append(st.bytes, crossed)
		st.latencies = append(st.latencies, elapsed)
		st.placed += float64(max(0, s.k-local)) * size / float64(s.k)
		if local >= s.k {
			st.localGets++
			st.localWAN += boolInt(crossed > 0)
		}
	}
	st.placed /= float64(len(d.keys))
	if st.wrongValue > 0 {
		return st, fmt.Errorf("%d gets from %s of %s returned a wrong value", st.wrongValue, dc, s.keyspace.Name)
	}
	return st, nil
}

// row turns a scheme's measurements into a report row.
func (lc *ldrCluster) row(experiment string, s ldrScheme, dc string, st getStats, storage float64, valueBytes int, withLatency bool) ldrRow {
	mean, stddev := meanStddev(st.bytes)
	r := ldrRow{
		Experiment:               experiment,
		Scheme:                   s.name,
		M:                        s.m,
		K:                        s.k,
		ReaderDC:                 dc,
		RemoteShare:              round(1-lc.share[dc], 4),
		Gets:                     len(st.bytes),
		StorageRatio:             round(storage, 4),
		StorageRatioExpected:     round(expectedStorageRatio(s, len(lc.dcs), ldrKeyBytes, valueBytes), 4),
		InterDCBytesPerGetMean:   round(mean, 1),
		InterDCBytesPerGetStddev: round(stddev, 1),
		PlacedInterDCBytesPerGet: round(st.placed, 1),
	}
	if s.name != "replicate" {
		chunks, spread := remoteChunks(s.m, s.k, lc.share[dc])
		chunkBytes := float64(valueBytes) / float64(s.k)
		r.ExpectedInterDCBytesPerGet = round(chunks*chunkBytes, 1)
		// The standard error the mean of this many gets has from placement alone.
		r.ExpectedInterDCBytesPerGetStderr = round(spread*chunkBytes/math.Sqrt(float64(len(st.bytes))), 1)
	}
	if r.ExpectedInterDCBytesPerGet > 0 {
		r.ErrorPct = ptr(round(100*(mean-r.ExpectedInterDCBytesPerGet)/r.ExpectedInterDCBytesPerGet, 2))
	}
	if withLatency {
		ms := make([]float64, len(st.latencies))
		for i, l := range st.latencies {
			ms[i] = float64(l) / float64(time.Millisecond)
		}
		slices.Sort(ms)
		m, _ := meanStddev(ms)
		r.LatencyMsMean = ptr(round(m, 2))
		r.LatencyMsP50 = ptr(round(percentile(ms, 0.50), 2))
		r.LatencyMsP99 = ptr(round(percentile(ms, 0.99), 2))
	}
	return r
}

func meanStddev(xs []float64) (mean, stddev float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		stddev += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(stddev / float64(len(xs)))
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)]
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func ptr(x float64) *float64 { return &x }

// ldrTally accumulates the checks the done criteria name.
type ldrTally struct {
	localGets, localGetsWithWAN int
	storageErrorPctMax          float64
}

// runSchemes loads and reads every scheme on one cluster, from every DC.
func runSchemes(ctx context.Context, env Env, lc *ldrCluster, experiment string, schemes []ldrScheme, d ldrData, rng *rand.Rand, seed uint64, withLatency bool, tally *ldrTally) ([]ldrRow, error) {
	var rows []ldrRow
	for _, s := range schemes {
		start := time.Now()
		if err := lc.load(ctx, s, d, seed); err != nil {
			return nil, err
		}
		storage, err := lc.storageRatio(s, d)
		if err != nil {
			return nil, err
		}
		expected := expectedStorageRatio(s, len(lc.dcs), ldrKeyBytes, len(d.values[0]))
		tally.storageErrorPctMax = max(tally.storageErrorPctMax, 100*math.Abs(storage-expected)/expected)
		for _, dc := range lc.dcs {
			st, err := lc.measureGets(ctx, s, d, dc, rng)
			if err != nil {
				return nil, err
			}
			tally.localGets += st.localGets
			tally.localGetsWithWAN += st.localWAN
			rows = append(rows, lc.row(experiment, s, dc, st, storage, len(d.values[0]), withLatency))
		}
		env.Progressf("ldr %s: %s (m=%d, k=%d): %d keys put and read from %d DCs in %.1fs",
			experiment, s.name, s.m, s.k, len(d.keys), len(lc.dcs), time.Since(start).Seconds())
	}
	return rows, nil
}

// gridSchemes are Fig. 9's: every (m, k) with lo <= k < m <= hi, then the stripes.
func gridSchemes(lo, hi int) []ldrScheme {
	var out []ldrScheme
	for m := lo + 1; m <= hi; m++ {
		for k := lo; k < m; k++ {
			out = append(out, erasureScheme("ldr", m, k))
		}
	}
	for m := lo; m <= hi; m++ {
		out = append(out, erasureScheme("stripe", m, m))
	}
	return out
}

// sweepSplits returns, for each share, the nodes of a two-DC cluster of total nodes
// (dc1, dc2) and the DC that reads so that the other holds the share. A share and its
// complement use one cluster, read from each side.
func sweepSplits(shares []float64, total int) (splits [][2]int, readers map[[2]int][]string) {
	readers = map[[2]int][]string{}
	for _, s := range shares {
		remote := min(total-1, max(1, int(math.Round(s*float64(total)))))
		split, reader := [2]int{total - remote, remote}, "dc1"
		if remote > total-remote {
			split, reader = [2]int{remote, total - remote}, "dc2"
		}
		if _, seen := readers[split]; !seen {
			splits = append(splits, split)
		}
		if !slices.Contains(readers[split], reader) {
			readers[split] = append(readers[split], reader)
		}
	}
	return splits, readers
}

func runLDR(ctx context.Context, env Env, p ldrPlan) (*Report, error) {
	// The codec is timed first, alone: the clusters' goroutines would share its cores.
	codec := codecCost(p.valueBytes, p.sweep)
	rng := rand.New(rand.NewPCG(p.seed, 0x1d2))
	data := newLDRData(rng, p.keys, p.valueBytes)
	total := 0
	for _, n := range p.dcsNodes {
		total += n
	}
	var rows []ldrRow
	var tally ldrTally
	walls := map[string]float64{}

	// Fig. 9: the grid and the baselines, each on a fresh cluster of the same nodes (so
	// the same ring), which bounds the memory the stored values take.
	start := time.Now()
	topo := ldrTopology(p.dcsNodes)
	var dcs []string
	for _, dc := range topo.Datacenters {
		dcs = append(dcs, dc.Name)
	}
	schemes := append(gridSchemes(p.gridLo, p.gridHi), baselineSchemes(dcs)...)
	env.Progressf("ldr fig9: %d nodes in %v, %d schemes, %d keys of %d bytes", total, p.dcsNodes, len(schemes), p.keys, p.valueBytes)
	for _, s := range schemes {
		lc, err := startLDRCluster(ctx, topo, false, []ldrScheme{s})
		if err != nil {
			return nil, err
		}
		grid, err := runSchemes(ctx, env, lc, "fig9", []ldrScheme{s}, data, rng, p.seed, false, &tally)
		lc.Close()
		if err != nil {
			return nil, err
		}
		rows = append(rows, grid...)
	}
	walls["fig9_seconds"] = round(time.Since(start).Seconds(), 1)

	// Fig. 10: the remote DC's share, one two-DC cluster per split.
	start = time.Now()
	sweep := erasureScheme("ldr", p.sweep.M, p.sweep.K)
	splits, readers := sweepSplits(p.shares, total)
	for _, split := range splits {
		env.Progressf("ldr fig10: %d + %d nodes, (m=%d, k=%d), read from %v", split[0], split[1], sweep.m, sweep.k, readers[split])
		lc, err := startLDRCluster(ctx, ldrTopology(split[:]), false, []ldrScheme{sweep})
		if err != nil {
			return nil, err
		}
		fig10, err := runSchemes(ctx, env, lc, "fig10", []ldrScheme{sweep}, data, rng, p.seed, false, &tally)
		lc.Close()
		if err != nil {
			return nil, err
		}
		for _, r := range fig10 {
			if slices.Contains(readers[split], r.ReaderDC) {
				rows = append(rows, r)
			}
		}
	}
	walls["fig10_seconds"] = round(time.Since(start).Seconds(), 1)

	// Get latency on paper 000's EC2 topology, WAN emulated.
	if p.latencyKeys > 0 {
		start = time.Now()
		latency, err := runLDRLatency(ctx, env, p, rng, &tally)
		if err != nil {
			return nil, err
		}
		rows = append(rows, latency...)
		walls["latency_seconds"] = round(time.Since(start).Seconds(), 1)
	}

	summary := ldrSummary(rows, tally, p)
	for k, v := range walls {
		summary[k] = v
	}
	for k, v := range codec {
		summary[k] = v
	}
	return &Report{
		Bench: "ldr",
		Scale: fmt.Sprintf("Fig. 9 on %d nodes %v (the paper simulated 2 DCs x 500), Fig. 10 on %d nodes split by share; %d keys per scheme (the paper: 10,000), each read once from every DC; "+
			"%d-byte random values, %d-byte random keys; real nodes in one process over loopback, WAN emulation off for byte counting; latency on paper 000's Tokyo/Sao Paulo topology with its WAN emulated, %d keys per scheme",
			total, p.dcsNodes, total, p.keys, p.valueBytes, ldrKeyBytes, p.latencyKeys),
		Rows:    rows,
		Summary: summary,
		Notes: []string{
			"interdc_bytes_per_get counts every byte of the get's read requests and answers that crossed DCs (frame headers, keyspace, chunk key, chunk header, shard): the transport's counters, snapshot around each get; the expectation counts shard payload only, so requests and headers add ~120 bytes per remote chunk",
			"storage_ratio_expected = m/k plus the metadata each of the m chunks carries: a 3-byte chunk-key suffix (terminator and index), a 20-byte chunk header (version, m, k, index, length, timestamp, CRC-32C) and the shard's zero padding to ceil(size/k)",
			"stripe is k = m (no redundancy: every chunk needed); replicate keeps one copy per DC (read locally); single keeps one copy on the key's owner",
			"placed_interdc_bytes_per_get is the expectation over the actual placement of the keys read: the gap between it and expected_interdc_bytes_per_get is placement sampling, the gap between it and the mean is protocol overhead",
		},
		Plot: func(path string) error { return plotLDR(rows, p.valueBytes, path) },
	}, nil
}

// runLDRLatency measures get latency of LDR, replicate and single on the Tokyo/Sao Paulo
// topology with its WAN emulated (RTT 384 ms, 3.29 Mbps between the DCs).
func runLDRLatency(ctx context.Context, env Env, p ldrPlan, rng *rand.Rand, tally *ldrTally) ([]ldrRow, error) {
	topo, err := topology.Example("tokyo-saopaulo")
	if err != nil {
		return nil, err
	}
	var dcs []string
	for _, dc := range topo.Datacenters {
		dcs = append(dcs, dc.Name)
	}
	schemes := append([]ldrScheme{erasureScheme("ldr", p.sweep.M, p.sweep.K)}, baselineSchemes(dcs)...)
	env.Progressf("ldr latency: %s, %d keys per scheme, WAN emulated", topo.Name, p.latencyKeys)
	lc, err := startLDRCluster(ctx, topo, true, schemes)
	if err != nil {
		return nil, err
	}
	defer lc.Close()
	data := newLDRData(rng, p.latencyKeys, p.valueBytes)
	return runSchemes(ctx, env, lc, "latency", schemes, data, rng, p.seed, true, tally)
}

// ldrSummary checks the done criteria over the rows.
func ldrSummary(rows []ldrRow, tally ldrTally, p ldrPlan) map[string]any {
	within, counted := 0, 0
	outside := []string{}
	for _, r := range rows {
		if r.Gets < 1000 || r.ErrorPct == nil {
			continue
		}
		counted++
		if math.Abs(*r.ErrorPct) <= 10 {
			within++
		} else {
			outside = append(outside, fmt.Sprintf("%s %s (%d,%d) from %s: %.1f vs %.1f expected, %.1f placed; %.1f standard errors off",
				r.Experiment, r.Scheme, r.M, r.K, r.ReaderDC, r.InterDCBytesPerGetMean, r.ExpectedInterDCBytesPerGet, r.PlacedInterDCBytesPerGet,
				(r.InterDCBytesPerGetMean-r.ExpectedInterDCBytesPerGet)/r.ExpectedInterDCBytesPerGetStderr))
		}
	}
	summary := map[string]any{
		"storage_ratio_error_pct_max":           round(tally.storageErrorPctMax, 3),
		"rows_with_1000_gets":                   counted,
		"rows_within_10pct_of_expected":         within,
		"rows_outside_10pct":                    outside,
		"gets_with_k_local_chunks":              tally.localGets,
		"gets_with_k_local_chunks_crossing_wan": tally.localGetsWithWAN,
	}
	// Fig. 6's case: (6, 4) with DCs 2:1, as a fraction of the value per get.
	for _, r := range rows {
		if r.Experiment == "fig9" && r.Scheme == "ldr" && r.M == 6 && r.K == 4 {
			summary["fig6_interdc_fraction_of_value_from_"+r.ReaderDC] = round(r.InterDCBytesPerGetMean/float64(p.valueBytes), 4)
		}
	}
	return summary
}

// codecCost times the erasure coding of one value of the sweep's code, in process: what
// LDR adds to a put (encode) and to a get (decode from the data chunks, or rebuilding
// with parity standing in for missing data chunks).
func codecCost(valueBytes int, e schema.Erasure) map[string]any {
	code, err := erasure.New(e.M, e.K)
	if err != nil {
		return nil
	}
	value := make([]byte, valueBytes)
	const rounds = 20000
	raws, _ := code.Encode(value, 1) // warms the codec's tables before the clock starts
	start := time.Now()
	for range rounds {
		raws, _ = code.Encode(value, 1)
	}
	encode := time.Since(start)
	chunks := make([]erasure.Chunk, len(raws))
	for i, raw := range raws {
		chunks[i], _ = erasure.Parse(raw)
	}
	timeDecode := func(given []erasure.Chunk) time.Duration {
		_, _ = code.Decode(given)
		start := time.Now()
		for range rounds {
			_, _ = code.Decode(given)
		}
		return time.Since(start)
	}
	perOp := func(d time.Duration) float64 { return round(float64(d)/rounds/float64(time.Microsecond), 2) }
	return map[string]any{
		fmt.Sprintf("encode_us_per_put_m%d_k%d", e.M, e.K):            perOp(encode),
		fmt.Sprintf("decode_us_per_get_m%d_k%d", e.M, e.K):            perOp(timeDecode(chunks[:e.K])),
		fmt.Sprintf("decode_rebuilding_us_per_get_m%d_k%d", e.M, e.K): perOp(timeDecode(chunks[e.M-e.K:])),
	}
}

// plotLDR draws Fig. 9 to path: inter-DC bytes per get (as a fraction of the value)
// against the storage ratio, one line per k and reader DC as m grows, with the single-copy
// and replicated baselines as points. Fig. 10 (the sweep's mean, expectation and spread
// against the remote share) goes beside it as NAME-fig10.png.
func plotLDR(rows []ldrRow, valueBytes int, path string) error {
	fig9 := Figure{Title: "LDR (paper 000 Fig. 9): inter-DC bytes per get vs storage, lines of fixed k as m grows",
		XLabel: "storage ratio (bytes stored / raw)", YLabel: "inter-DC bytes per get / value size"}
	index := map[string]int{}
	for _, r := range rows {
		if r.Experiment != "fig9" || r.Scheme == "stripe" {
			continue
		}
		name := fmt.Sprintf("k=%d from %s", r.K, r.ReaderDC)
		if r.Scheme != "ldr" {
			name = r.Scheme + " from " + r.ReaderDC
		}
		i, ok := index[name]
		if !ok {
			i = len(fig9.Series)
			index[name] = i
			fig9.Series = append(fig9.Series, Series{Name: name})
		}
		fig9.Series[i].X = append(fig9.Series[i].X, r.StorageRatio)
		fig9.Series[i].Y = append(fig9.Series[i].Y, r.InterDCBytesPerGetMean/float64(valueBytes))
	}
	if err := fig9.Save(path); err != nil {
		return err
	}

	fig10 := Figure{Title: "LDR (paper 000 Fig. 10): inter-DC bytes per get vs remote share", XLabel: "remote DC's share of the ring", YLabel: "bytes per get"}
	mean, expected, stddev := Series{Name: "mean"}, Series{Name: "expected"}, Series{Name: "stddev"}
	var fig10Rows []ldrRow
	for _, r := range rows {
		if r.Experiment == "fig10" {
			fig10Rows = append(fig10Rows, r)
		}
	}
	slices.SortFunc(fig10Rows, func(a, b ldrRow) int { return cmp.Compare(a.RemoteShare, b.RemoteShare) })
	for _, r := range fig10Rows {
		for _, s := range []*Series{&mean, &expected, &stddev} {
			s.X = append(s.X, r.RemoteShare)
		}
		mean.Y = append(mean.Y, r.InterDCBytesPerGetMean)
		expected.Y = append(expected.Y, r.ExpectedInterDCBytesPerGet)
		stddev.Y = append(stddev.Y, r.InterDCBytesPerGetStddev)
	}
	if len(fig10Rows) > 0 {
		fig10.Title = fmt.Sprintf("LDR (paper 000 Fig. 10): (m, k) = (%d, %d), inter-DC bytes per get", fig10Rows[0].M, fig10Rows[0].K)
	}
	fig10.Series = []Series{mean, expected, stddev}
	return fig10.Save(strings.TrimSuffix(path, filepath.Ext(path)) + "-fig10" + filepath.Ext(path))
}
