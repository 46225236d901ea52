package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
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
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/io/transport"
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
	keysMax     int
	stderrPct   float64
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
	fs.IntVar(&cfg.keys, "keys", 3000, "keys per scheme read from every DC (the paper: 10,000); rows whose expectation is small cover more (see --placement-stderr-pct)")
	fs.Float64Var(&cfg.stderrPct, "placement-stderr-pct", 1.5, "each row covers enough keys that the standard error their random chunk placement gives its mean is at most this % of the expectation (at least --keys, at most --keys-max)")
	fs.IntVar(&cfg.keysMax, "keys-max", 2000000, "most keys a row covers")
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
	keysMax        int
	stderrPct      float64
	gridLo, gridHi int
	shares         []float64
	sweep          schema.Erasure
	latencyKeys    int
	seed           uint64
}

func (c ldrConfig) plan() (ldrPlan, error) {
	p := ldrPlan{valueBytes: c.valueBytes, keys: c.keys, keysMax: c.keysMax, stderrPct: c.stderrPct, latencyKeys: c.latencyKeys, seed: c.seed}
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
	if p.keysMax < p.keys || !(p.stderrPct > 0) {
		return p, fmt.Errorf("--keys-max must be at least --keys, --placement-stderr-pct positive")
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
	Experiment string `json:"experiment" table:"group"` // fig9, fig10 or latency
	Scheme     string `json:"scheme"`                   // ldr, stripe (k = m), replicate (a copy per DC), single (one copy)
	M          int    `json:"m"`
	K          int    `json:"k"`
	ReaderDC   string `json:"reader_dc"`
	// RemoteShare is the ring share of the nodes outside the reader's DC: where a chunk
	// lands with that probability.
	RemoteShare float64 `json:"remote_share"`
	// Keys is how many keys of the stream the row covers; Gets how many of them it read
	// (see ldrSample): the mean and stddev are over the Keys keys.
	Keys int `json:"keys"`
	Gets int `json:"gets" table:"-"`
	// StorageRatio is the bytes stored (keys and values of every record on every node)
	// over the raw bytes (keys and values put); StorageRatioExpected is m/k plus the chunk
	// metadata (see the notes).
	StorageRatio             float64 `json:"storage_ratio"`
	StorageRatioExpected     float64 `json:"storage_ratio_expected" table:"-"`
	InterDCBytesPerGetMean   float64 `json:"interdc_bytes_per_get_mean"`
	InterDCBytesPerGetStddev float64 `json:"interdc_bytes_per_get_stddev" table:"-"`
	// ExpectedInterDCBytesPerGet is E[max(0, k-L)] x size / k, L ~ Binomial(m, local
	// share); PlacedInterDCBytesPerGet the same mean over the keys' actual chunk
	// placement, which removes the sampling of placement from the comparison.
	ExpectedInterDCBytesPerGet float64 `json:"expected_interdc_bytes_per_get"`
	// ExpectedInterDCBytesPerGetStderr is the standard error of a mean over Keys random
	// placements: how far the mean may stray from the expectation by chance.
	ExpectedInterDCBytesPerGetStderr float64 `json:"expected_interdc_bytes_per_get_stderr" table:"-"`
	PlacedInterDCBytesPerGet         float64 `json:"placed_interdc_bytes_per_get" table:"-"`
	// ErrorPct is (mean - expected) / expected; absent when nothing is expected.
	ErrorPct      *float64 `json:"error_pct,omitempty"`
	LatencyMsMean *float64 `json:"latency_ms_mean,omitempty"`
	LatencyMsP50  *float64 `json:"latency_ms_p50,omitempty" table:"-"`
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

// ldrKeys is the bench's stream of keys and values, uniformly random as the paper's. Key
// i and its value derive from the seed and i alone, so a row can cover many keys while
// only those it reads are ever generated and stored. Keys avoid the 0x00 byte, so every
// chunk key is exactly the key plus 3 bytes and the stated metadata overhead is exact.
type ldrKeys struct {
	seed       uint64
	valueBytes int
}

// key returns key i: ldrKeyBytes bytes from 1 to 255.
func (d ldrKeys) key(i int) []byte {
	src := rand.NewPCG(d.seed, uint64(i))
	key := make([]byte, ldrKeyBytes)
	for j := range key {
		key[j] = byte(1 + src.Uint64()%255)
	}
	return key
}

// value returns key i's value, random bytes from a ChaCha8 stream of its own.
func (d ldrKeys) value(i int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:8], d.seed)
	binary.LittleEndian.PutUint64(seed[8:16], uint64(i))
	value := make([]byte, d.valueBytes)
	_, _ = rand.NewChaCha8(seed).Read(value) // never fails
	return value
}

// rawBytes is what n keys and their values take.
func (d ldrKeys) rawBytes(n int) int64 {
	return int64(n) * int64(ldrKeyBytes+d.valueBytes)
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
	// readKinds are the messages of a get: chunk_read (erasure-coded) and read (replicated).
	readKinds []transport.Kind
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

// kindsNamed looks up the kinds of messages that package coord, which keeps its kinds to
// itself, registers.
func kindsNamed(names ...string) ([]transport.Kind, error) {
	kinds := make([]transport.Kind, len(names))
	for i, name := range names {
		kind, ok := transport.KindByName(name)
		if !ok {
			return nil, fmt.Errorf("no message kind %q is registered", name)
		}
		kinds[i] = kind
	}
	return kinds, nil
}

func startLDRCluster(ctx context.Context, topo *topology.Topology, emulateWAN bool, schemes []ldrScheme) (*ldrCluster, error) {
	readKinds, err := kindsNamed("chunk_read", "read")
	if err != nil {
		return nil, err
	}
	c, err := embedded.Start(topo, embedded.Options{
		EmulateWAN: emulateWAN,
		// Gossip at its default pace leaves the two cores to the experiment.
		Node: node.Config{ReplicaTimeout: time.Minute},
	})
	if err != nil {
		return nil, err
	}
	lc := &ldrCluster{Cluster: c, nodesByDC: map[string][]*node.Node{}, share: map[string]float64{},
		readKinds: readKinds}
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
	if lc.ring, err = c.Nodes[0].Ring(); err != nil {
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

// load puts the keys of d with the given indexes into the scheme's keyspace at ALL, so
// that every chunk is in place before the gets, through random coordinators, a few at a
// time.
func (lc *ldrCluster) load(ctx context.Context, s ldrScheme, d ldrKeys, indexes []int, rng *rand.Rand) error {
	const workers = 4
	seed := rng.Uint64()
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
				if _, err := co.Put(ctx, s.keyspace.Name, d.key(i), d.value(i), 0, consistency.All); err != nil {
					errs <- fmt.Errorf("put into %s: %w", s.keyspace.Name, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, i := range indexes {
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

// storageRatio is the bytes every node stores for the scheme over the raw bytes of the
// keys put.
func (lc *ldrCluster) storageRatio(s ldrScheme, d ldrKeys, keysPut int) (float64, error) {
	var stored int64
	for _, n := range lc.Nodes {
		_, b, err := n.StoredBytes(s.keyspace.Name)
		if err != nil {
			return 0, err
		}
		stored += b
	}
	return float64(stored) / float64(d.rawBytes(keysPut)), nil
}

// interDCReadBytes is the read traffic (chunk or replica requests and their answers)
// that crossed between DCs so far.
func (lc *ldrCluster) interDCReadBytes() uint64 {
	var total uint64
	for flow, counter := range lc.Stats.Snapshot() {
		if slices.Contains(lc.readKinds, flow.Kind) && flow.FromDC != flow.ToDC {
			total += counter.Bytes
		}
	}
	return total
}

// localCopies counts, per DC, the chunks (or copies) of key it holds.
func (lc *ldrCluster) localCopies(ctx context.Context, s ldrScheme, key []byte) (map[string]int, error) {
	perDC := map[string]int{}
	switch s.name {
	case "replicate":
		for _, dc := range lc.dcs {
			perDC[dc] = 1
		}
		return perDC, nil
	case "single":
		owner := ring.Simple(1).Replicas(lc.ring, ring.HashPartitioner().Token(key))[0]
		perDC[owner.DC] = 1
		return perDC, nil
	}
	owners, err := lc.Nodes[0].Coordinator().ChunkOwners(ctx, s.keyspace.Name, key)
	if err != nil {
		return nil, err
	}
	for _, o := range owners {
		perDC[o.DC]++
	}
	return perDC, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// coveredKeys is how many keys a row of scheme s read from a DC holding localShare of
// the ring covers: the fewest whose random chunk placement leaves the mean a standard
// error of at most p.stderrPct % of the expectation, (sd/mean / stderr)^2 for the
// per-key mean and sd of remoteChunks; at least p.keys and at most p.keysMax. Only the
// keys' placement makes the mean stray (a remote chunk always costs the same), so rows
// whose expectation is a rare event need many keys, and more gets of the same keys would
// not help.
func coveredKeys(s ldrScheme, localShare float64, p ldrPlan) int {
	if s.name == "replicate" {
		return p.keys
	}
	mean, sd := remoteChunks(s.m, s.k, localShare)
	if mean == 0 {
		return p.keys
	}
	relative := sd / mean / (p.stderrPct / 100)
	return int(min(float64(p.keysMax), max(float64(p.keys), math.Ceil(relative*relative))))
}

// ldrSample is the keys one row covers, keys 0 to covered-1 of the stream, and those it
// reads: every one of the first --keys, and beyond them every key whose reader DC holds
// fewer than k chunks. A key with k local chunks costs no inter-DC byte (the bench
// checks it on every such key it reads), so the unread ones count with the mean of
// those read; the keys that need remote chunks, where the bytes are, are all read.
type ldrSample struct {
	covered int
	read    []int // key indexes, ascending
	local   []int // the reader DC's chunks of each key read
	unread  int   // keys beyond the first --keys with k chunks in the reader DC
	// remoteChunks sums max(0, k - L) over the covered keys: their placed expectation.
	remoteChunks int
}

// samples places the keys of d for scheme s, as far as the longest row needs, and returns
// each reader DC's sample.
func (lc *ldrCluster) samples(ctx context.Context, s ldrScheme, d ldrKeys, readers []string, p ldrPlan) (map[string]*ldrSample, error) {
	out := map[string]*ldrSample{}
	keys := 0
	for _, dc := range readers {
		out[dc] = &ldrSample{covered: coveredKeys(s, lc.share[dc], p)}
		keys = max(keys, out[dc].covered)
	}
	for i := range keys {
		perDC, err := lc.localCopies(ctx, s, d.key(i))
		if err != nil {
			return nil, err
		}
		for dc, sample := range out {
			local := perDC[dc]
			switch {
			case i >= sample.covered:
				continue
			case i < p.keys || local < s.k:
				sample.read = append(sample.read, i)
				sample.local = append(sample.local, local)
			default:
				sample.unread++
			}
			sample.remoteChunks += max(0, s.k-local)
		}
	}
	return out, nil
}

// getStats is what the gets of one scheme from one DC measured.
type getStats struct {
	bytes      []float64 // inter-DC bytes of each get
	latencies  []time.Duration
	localBytes []float64 // of the gets of keys whose reader DC held >= k chunks
	localWAN   int       // of those, the gets that sent inter-DC bytes (must stay 0)
	wrongValue int
}

// measureGets reads the sample's keys once each at ONE from random nodes of dc, one get
// at a time and in random order, counting each get's inter-DC read bytes from the
// transport's counters.
func (lc *ldrCluster) measureGets(ctx context.Context, s ldrScheme, d ldrKeys, dc string, sample *ldrSample, rng *rand.Rand) (getStats, error) {
	var st getStats
	for _, j := range rng.Perm(len(sample.read)) {
		i := sample.read[j]
		co := lc.nodesByDC[dc][rng.IntN(len(lc.nodesByDC[dc]))].Coordinator()
		before := lc.interDCReadBytes()
		start := time.Now()
		rec, found, err := co.Get(ctx, s.keyspace.Name, d.key(i), consistency.One)
		elapsed := time.Since(start)
		if err != nil {
			return st, fmt.Errorf("get from %s of %s: %w", dc, s.keyspace.Name, err)
		}
		crossed := float64(lc.interDCReadBytes() - before)
		if !found || !bytes.Equal(rec.Value, d.value(i)) {
			st.wrongValue++
		}
		st.bytes = append(st.bytes, crossed)
		st.latencies = append(st.latencies, elapsed)
		if sample.local[j] >= s.k {
			st.localBytes = append(st.localBytes, crossed)
			st.localWAN += boolInt(crossed > 0)
		}
	}
	if st.wrongValue > 0 {
		return st, fmt.Errorf("%d gets from %s of %s returned a wrong value", st.wrongValue, dc, s.keyspace.Name)
	}
	return st, nil
}

// coveredMeanStddev returns the mean and standard deviation of inter-DC bytes per get over
// the sample's covered keys: the gets measured, and the unread keys, each counted as the
// gets of keys with k local chunks measured (their mean and mean square).
func coveredMeanStddev(st getStats, sample *ldrSample) (mean, stddev float64, err error) {
	if sample.unread > 0 && len(st.localBytes) == 0 {
		return 0, 0, fmt.Errorf("%d unread keys with k local chunks, and no get of such a key measured to count them by", sample.unread)
	}
	var sum, squares float64
	for _, b := range st.bytes {
		sum, squares = sum+b, squares+b*b
	}
	if sample.unread > 0 {
		var localSum, localSquares float64
		for _, b := range st.localBytes {
			localSum, localSquares = localSum+b, localSquares+b*b
		}
		scale := float64(sample.unread) / float64(len(st.localBytes))
		sum, squares = sum+scale*localSum, squares+scale*localSquares
	}
	n := float64(len(st.bytes) + sample.unread)
	mean = sum / n
	return mean, math.Sqrt(max(0, squares/n-mean*mean)), nil
}

// row turns a scheme's measurements into a report row.
func (lc *ldrCluster) row(experiment string, s ldrScheme, dc string, sample *ldrSample, st getStats, storage float64, valueBytes int, withLatency bool) (ldrRow, error) {
	mean, stddev, err := coveredMeanStddev(st, sample)
	if err != nil {
		return ldrRow{}, fmt.Errorf("%s %s (m=%d, k=%d) from %s: %w", experiment, s.name, s.m, s.k, dc, err)
	}
	chunkBytes := float64(valueBytes) / float64(s.k)
	r := ldrRow{
		Experiment:               experiment,
		Scheme:                   s.name,
		M:                        s.m,
		K:                        s.k,
		ReaderDC:                 dc,
		RemoteShare:              round(1-lc.share[dc], 4),
		Keys:                     sample.covered,
		Gets:                     len(st.bytes),
		StorageRatio:             round(storage, 4),
		StorageRatioExpected:     round(expectedStorageRatio(s, len(lc.dcs), ldrKeyBytes, valueBytes), 4),
		InterDCBytesPerGetMean:   round(mean, 1),
		InterDCBytesPerGetStddev: round(stddev, 1),
		PlacedInterDCBytesPerGet: round(float64(sample.remoteChunks)*chunkBytes/float64(sample.covered), 1),
	}
	if s.name != "replicate" {
		chunks, spread := remoteChunks(s.m, s.k, lc.share[dc])
		r.ExpectedInterDCBytesPerGet = round(chunks*chunkBytes, 1)
		// The standard error the mean over this many keys has from placement alone.
		r.ExpectedInterDCBytesPerGetStderr = round(spread*chunkBytes/math.Sqrt(float64(sample.covered)), 1)
	}
	if r.ExpectedInterDCBytesPerGet > 0 {
		r.ErrorPct = ptr(round(100*(mean-r.ExpectedInterDCBytesPerGet)/r.ExpectedInterDCBytesPerGet, 2))
	}
	if withLatency {
		ms := make([]float64, len(st.latencies))
		for i, l := range st.latencies {
			ms[i] = float64(l) / float64(time.Millisecond)
		}
		r.LatencyMsMean = ptr(round(stats.Mean(ms), 2))
		r.LatencyMsP50 = ptr(round(stats.Percentile(ms, 0.50), 2))
		r.LatencyMsP99 = ptr(round(stats.Percentile(ms, 0.99), 2))
	}
	return r, nil
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

// runSchemes loads and reads every scheme on one cluster, from each reader DC: first
// places the keys each row covers, then puts the keys any row reads, then reads.
func runSchemes(ctx context.Context, progress *Progress, lc *ldrCluster, experiment string, schemes []ldrScheme, readers []string, d ldrKeys, p ldrPlan, rng *rand.Rand, withLatency bool, tally *ldrTally) ([]ldrRow, error) {
	var rows []ldrRow
	for _, s := range schemes {
		start := time.Now()
		samples, err := lc.samples(ctx, s, d, readers, p)
		if err != nil {
			return nil, err
		}
		var put []int
		for _, dc := range readers {
			put = append(put, samples[dc].read...)
		}
		slices.Sort(put)
		put = slices.Compact(put)
		if err := lc.load(ctx, s, d, put, rng); err != nil {
			return nil, err
		}
		storage, err := lc.storageRatio(s, d, len(put))
		if err != nil {
			return nil, err
		}
		expected := expectedStorageRatio(s, len(lc.dcs), ldrKeyBytes, d.valueBytes)
		tally.storageErrorPctMax = max(tally.storageErrorPctMax, 100*math.Abs(storage-expected)/expected)
		var covered []string
		for _, dc := range readers {
			st, err := lc.measureGets(ctx, s, d, dc, samples[dc], rng)
			if err != nil {
				return nil, err
			}
			tally.localGets += len(st.localBytes)
			tally.localGetsWithWAN += st.localWAN
			r, err := lc.row(experiment, s, dc, samples[dc], st, storage, d.valueBytes, withLatency)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
			covered = append(covered, fmt.Sprintf("%s %d of %d", dc, r.Gets, r.Keys))
		}
		progress.Add(1, "%s: %s (m=%d, k=%d): %d keys put; read (of keys covered) from %s; %.1fs",
			experiment, s.name, s.m, s.k, len(put), strings.Join(covered, ", "), time.Since(start).Seconds())
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

// ldrSchemesPerCluster bounds the memory the stored values take (a peak of about 4.5 GB
// at the defaults) while sparing most cluster starts, each seconds of gossip convergence.
const ldrSchemesPerCluster = 6

func runLDR(ctx context.Context, env Env, p ldrPlan) (*Report, error) {
	// The codec is timed first, alone: the clusters' goroutines would share its cores.
	codec := codecCost(p.valueBytes, p.sweep)
	rng := rand.New(rand.NewPCG(p.seed, 0x1d2))
	data := ldrKeys{seed: p.seed, valueBytes: p.valueBytes}
	total := 0
	for _, n := range p.dcsNodes {
		total += n
	}
	var rows []ldrRow
	var tally ldrTally
	walls := map[string]float64{}

	// Fig. 9: the grid and the baselines, a few schemes to a fresh cluster of the same
	// nodes (so the same ring).
	start := time.Now()
	topo := ldrTopology(p.dcsNodes)
	var dcs []string
	for _, dc := range topo.Datacenters {
		dcs = append(dcs, dc.Name)
	}
	schemes := append(gridSchemes(p.gridLo, p.gridHi), baselineSchemes(dcs)...)
	sweep := erasureScheme("ldr", p.sweep.M, p.sweep.K)
	splits, readers := sweepSplits(p.shares, total)
	// A unit of work is a scheme loaded and read on a cluster; the latency run's schemes
	// are LDR's sweep and the baselines.
	units := len(schemes) + len(splits)
	if p.latencyKeys > 0 {
		units += 1 + len(baselineSchemes(dcs))
	}
	progress := env.StartProgress("ldr", float64(units))
	defer progress.Done()
	env.Progressf("ldr fig9: %d nodes in %v, %d schemes, %d keys of %d bytes", total, p.dcsNodes, len(schemes), p.keys, p.valueBytes)
	for batch := range slices.Chunk(schemes, ldrSchemesPerCluster) {
		lc, err := startLDRCluster(ctx, topo, false, batch)
		if err != nil {
			return nil, err
		}
		grid, err := runSchemes(ctx, progress, lc, "fig9", batch, lc.dcs, data, p, rng, false, &tally)
		lc.Close()
		if err != nil {
			return nil, err
		}
		rows = append(rows, grid...)
	}
	walls["fig9_seconds"] = round(time.Since(start).Seconds(), 1)

	// Fig. 10: the remote DC's share, one two-DC cluster per split.
	start = time.Now()
	for _, split := range splits {
		progress.Add(0, "fig10: %d + %d nodes, (m=%d, k=%d), read from %s", split[0], split[1], sweep.m, sweep.k, strings.Join(readers[split], " and "))
		lc, err := startLDRCluster(ctx, ldrTopology(split[:]), false, []ldrScheme{sweep})
		if err != nil {
			return nil, err
		}
		fig10, err := runSchemes(ctx, progress, lc, "fig10", []ldrScheme{sweep}, readers[split], data, p, rng, false, &tally)
		lc.Close()
		if err != nil {
			return nil, err
		}
		rows = append(rows, fig10...)
	}
	walls["fig10_seconds"] = round(time.Since(start).Seconds(), 1)

	// Get latency on paper 000's EC2 topology, WAN emulated.
	if p.latencyKeys > 0 {
		start = time.Now()
		latency, err := runLDRLatency(ctx, progress, p, rng, &tally)
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
		Scale: fmt.Sprintf("Fig. 9 on %d nodes %v (the paper simulated 2 DCs x 500), Fig. 10 on %d nodes split by share; "+
			"each row covers N keys, N the fewest for which random chunk placement leaves the mean a standard error of at most %g %% of the expectation (N >= (sd/mean / %g)^2 for the per-key mean and sd of max(0, k - L)), at least %d (the paper: 10,000) and at most %d; "+
			"a row reads once at ONE, through a random node of its DC, each of the first %d keys and every further key its DC holds fewer than k chunks of (where the inter-DC bytes are), and counts the unread keys, which have k local chunks, with the mean of such keys read (0 bytes); "+
			"%d-byte random values, %d-byte random keys; real nodes in one process over loopback, WAN emulation off for byte counting; latency on paper 000's Tokyo/Sao Paulo topology with its WAN emulated, %d keys per scheme",
			total, p.dcsNodes, total, p.stderrPct, p.stderrPct/100, p.keys, p.keysMax, p.keys, p.valueBytes, ldrKeyBytes, p.latencyKeys),
		Rows:    rows,
		Summary: summary,
		Notes: []string{
			"interdc_bytes_per_get counts every byte of the get's requests and answers that crossed DCs (chunk_read for erasure codes, read for the replicated baselines; frame headers, keyspace, chunk key, status byte, chunk header, shard): the transport's counters, snapshot around each get; the expectation counts shard payload only, so each remote chunk adds about 80 bytes (a 20-byte chunk header, two 14-byte frame headers, a 31-byte request, a status byte)",
			"keys is how many keys a row's mean covers, gets how many of them it read: the keys its DC holds k chunks of, beyond the first --keys, are not read and count with the mean of the ones read (every get of such a key is checked to send no inter-DC byte)",
			"storage_ratio_expected = m/k plus the metadata each of the m chunks carries: a 3-byte chunk-key suffix (terminator and index), a 20-byte chunk header (version, m, k, index, length, timestamp, CRC-32C) and the shard's zero padding to ceil(size/k)",
			"stripe is k = m (no redundancy: every chunk needed); replicate keeps one copy per DC (read locally); single keeps one copy on the key's owner",
			"placed_interdc_bytes_per_get is the expectation over the actual placement of the keys covered: the gap between it and expected_interdc_bytes_per_get is placement sampling, the gap between it and the mean is protocol overhead",
		},
		Plot: func(path string) error { return plotLDR(rows, p.valueBytes, path) },
	}, nil
}

// runLDRLatency measures get latency of LDR, replicate and single on the Tokyo/Sao Paulo
// topology with its WAN emulated (RTT 384 ms, 3.29 Mbps between the DCs).
func runLDRLatency(ctx context.Context, progress *Progress, p ldrPlan, rng *rand.Rand, tally *ldrTally) ([]ldrRow, error) {
	topo, err := topology.Example("tokyo-saopaulo")
	if err != nil {
		return nil, err
	}
	var dcs []string
	for _, dc := range topo.Datacenters {
		dcs = append(dcs, dc.Name)
	}
	schemes := append([]ldrScheme{erasureScheme("ldr", p.sweep.M, p.sweep.K)}, baselineSchemes(dcs)...)
	progress.Add(0, "latency: %s, %d keys per scheme, WAN emulated: starting the nodes", topo.Name, p.latencyKeys)
	lc, err := startLDRCluster(ctx, topo, true, schemes)
	if err != nil {
		return nil, err
	}
	defer lc.Close()
	// Other keys than the byte counts', and no row covers more keys than it reads.
	data := ldrKeys{seed: p.seed + 1, valueBytes: p.valueBytes}
	p.keys, p.keysMax = p.latencyKeys, p.latencyKeys
	return runSchemes(ctx, progress, lc, "latency", schemes, lc.dcs, data, p, rng, true, tally)
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
		XLabel: "storage ratio (bytes stored / bytes put)", YLabel: "inter-DC bytes per get (share of the value)"}
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

	fig10 := Figure{Title: "LDR (paper 000 Fig. 10): inter-DC bytes per get vs remote share", XLabel: "remote DC's share of the ring", YLabel: "inter-DC bytes per get (bytes)"}
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
