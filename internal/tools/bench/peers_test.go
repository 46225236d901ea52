package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/base/stats/hdr"
	"github.com/kuradb/kura/internal/io/topology"
)

// TestWorkloadMixShares checks that each workload picks its operations in its shares, by
// walking the draws in steps: no sampling, so the counts are exact.
func TestWorkloadMixShares(t *testing.T) {
	const steps = 10000
	for _, w := range peerWorkloads {
		if sum := w.Read + w.Update + w.Scan; sum < 0.999999 || sum > 1.000001 {
			t.Errorf("workload %s: shares add up to %v", w.Name, sum)
		}
		counts := map[opKind]int{}
		for i := range steps {
			counts[w.choose(float64(i)/steps)]++
		}
		for kind, share := range map[opKind]float64{opRead: w.Read, opUpdate: w.Update, opScan: w.Scan} {
			if got, want := counts[kind], int(share*steps+0.5); got < want-1 || got > want+1 {
				t.Errorf("workload %s: kind %d chosen %d times of %d, want %d", w.Name, kind, got, steps, want)
			}
		}
	}
	// A draw at the top of the range stays in the mix.
	if got := (workloadMix{Read: 0.5, Update: 0.5}).choose(0.9999999); got != opUpdate {
		t.Errorf("A at 0.9999999 = %d, want an update", got)
	}
}

func TestParseWorkloadsAndDistributions(t *testing.T) {
	ws, err := parseWorkloads("a, C,w")
	if err != nil || len(ws) != 3 || ws[0].Name != "A" || ws[1].Name != "C" || ws[2].Name != "W" {
		t.Errorf("parseWorkloads = %v, %v", ws, err)
	}
	if _, err := parseWorkloads("A,D"); err == nil {
		t.Error("workload D accepted")
	}
	ds, err := parseDistributions("uniform,zipfian,uniform")
	if err != nil || len(ds) != 2 || ds[0] != distUniform || ds[1] != distZipfian {
		t.Errorf("parseDistributions = %v, %v", ds, err)
	}
	if _, err := parseDistributions("latest"); err == nil {
		t.Error("distribution latest accepted")
	}
	if _, err := parseChoices("--systems", "kura,mongo", []string{peerKura, peerRedis}); err == nil {
		t.Error("system mongo accepted")
	}
}

// TestZipfian checks YCSB's generator at its edges and its skew: item 0 takes the draws
// below 1/zeta(n), and the most popular tenth of the items most of them.
func TestZipfian(t *testing.T) {
	const n = 1000
	z := newZipfian(n)
	if got := z.next(0); got != 0 {
		t.Errorf("next(0) = %d, want 0", got)
	}
	if got := z.next(0.999999); got < 0 || got >= n {
		t.Errorf("next(0.999999) = %d, outside [0, %d)", got, n)
	}
	counts := make([]int, n)
	const draws = 100000
	for i := range draws {
		item := z.next((float64(i) + 0.5) / draws)
		if item < 0 || item >= n {
			t.Fatalf("item %d outside [0, %d)", item, n)
		}
		counts[item]++
	}
	for i := 1; i < n; i++ {
		if counts[i] > counts[0] {
			t.Fatalf("item %d drawn %d times, more than item 0's %d", i, counts[i], counts[0])
		}
	}
	// With theta 0.99 and 1,000 items, item 0 has 1/zeta(1000) ≈ 13 % of the draws.
	if share := float64(counts[0]) / draws; share < 0.12 || share > 0.14 {
		t.Errorf("item 0 has %.3f of the draws, want about 0.13", share)
	}
	top := 0
	for _, c := range counts[:n/10] {
		top += c
	}
	if share := float64(top) / draws; share < 0.6 {
		t.Errorf("the top tenth has %.2f of the draws, want most of them", share)
	}
}

// TestScrambledZipfianSpreadsHotKeys checks that the hot keys are hashed over the key
// space, in range, rather than being keys 0, 1, 2...
func TestScrambledZipfianSpreadsHotKeys(t *testing.T) {
	const n = 100000
	keys, err := newKeyChooser(distZipfian, n)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	counts := map[int]int{}
	for range 20000 {
		k := keys.pick(r)
		if k < 0 || k >= n {
			t.Fatalf("key %d outside [0, %d)", k, n)
		}
		counts[k]++
	}
	hottest, most := 0, 0
	for k, c := range counts {
		if c > most {
			hottest, most = k, c
		}
	}
	if hottest != scramble(0, n) {
		t.Errorf("hottest key %d, want item 0's, %d", hottest, scramble(0, n))
	}
	if scramble(0, n) == 0 && scramble(1, n) == 1 {
		t.Error("scramble leaves the first items in place")
	}
}

func TestYCSBKeysSortAsNumbers(t *testing.T) {
	if !(bytes.Compare(ycsbKey(9), ycsbKey(10)) < 0 && bytes.Compare(ycsbKey(99999), ycsbKey(100000)) < 0) {
		t.Errorf("keys do not sort as their numbers: %s %s", ycsbKey(9), ycsbKey(10))
	}
	if got := string(ycsbKey(42)); got != "user0000000042" {
		t.Errorf("ycsbKey(42) = %s", got)
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250 and stime 50 ticks.
	stat := "1234 (java (x) y) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 30 0 100 1000 200"
	got, err := parseProcStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Errorf("CPU = %v, want %v", got, want)
	}
	if _, err := parseProcStatCPU("1234 (x) S 1 2"); err == nil {
		t.Error("a short line was accepted")
	}
}

// TestPeerRatios checks the ratio math, the pairs and the n/a of scans on Redis.
func TestPeerRatios(t *testing.T) {
	row := func(system, workload string, ops, p99, cpu float64, rss uint64) PeerRow {
		return PeerRow{Layout: layoutOne, System: system, Consistency: "ONE", Workload: workload, Distribution: distZipfian,
			OpsPerS: ops, LatencyMsP99: p99, CPUSPerKop: cpu, PeakRSSBytes: rss}
	}
	rows := []PeerRow{
		row(sysKura, "A", 3000, 10, 0.2, 50e6),
		row(sysKura, "E", 1000, 30, 0.5, 60e6),
		row(sysKuraRESP, "A", 6000, 8, 0.1, 50e6),
		row(sysRedisAlways, "A", 12000, 4, 0.05, 10e6),
		row(sysCassandra, "A", 1000, 40, 2, 1e9),
		row(sysCassandra, "E", 500, 0, 3, 1e9), // no p99: its ratio is left out
	}
	got := peerRatios(rows)
	want := map[string][4]string{
		"kura/cassandra/A":         {"3", "0.25", "0.1", "0.05"},
		"kura/cassandra/E":         {"2", "-", "0.167", "0.06"},
		"kura-resp/redis-always/A": {"0.5", "2", "2", "5"},
		"kura-resp/redis-always/E": {"-", "-", "-", "-"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d ratios, want %d: %+v", len(got), len(want), got)
	}
	show := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strings.TrimRight(strings.TrimRight(formatFixed(*p), "0"), ".")
	}
	for _, r := range got {
		key := r.Kura + "/" + r.Peer + "/" + r.Workload
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected ratio %s", key)
			continue
		}
		if g := [4]string{show(r.OpsRatio), show(r.P99Ratio), show(r.CPURatio), show(r.RSSRatio)}; g != w {
			t.Errorf("%s: ratios %v, want %v", key, g, w)
		}
		if key == "kura-resp/redis-always/E" && !strings.HasPrefix(r.Note, "n/a") {
			t.Errorf("%s: note %q, want n/a", key, r.Note)
		}
	}
}

func TestPeersWANTopologyParses(t *testing.T) {
	topo, err := topology.Parse([]byte(peersWANTopology(20 * time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	link, err := topo.Link("dc1", "dc2")
	if err != nil || link.Latency != 20*time.Millisecond {
		t.Errorf("link dc1-dc2 = %+v, %v; want 20 ms", link, err)
	}
}

// TestPeersFigures checks the figure's layout: two panels (ops/s, p99) per layout, a
// category per workload and distribution, a series per system that ran there.
func TestPeersFigures(t *testing.T) {
	var rows []PeerRow
	for _, layout := range []string{layoutOne, layoutThree} {
		for _, system := range []string{sysKura, sysCassandra} {
			for _, w := range peerWorkloads {
				for _, dist := range []string{distZipfian, distUniform} {
					rows = append(rows, PeerRow{Layout: layout, System: system, Consistency: "QUORUM", Workload: w.Name,
						Distribution: dist, OpsPerS: 1000, LatencyMsP99: 10})
				}
			}
		}
	}
	rows = append(rows, PeerRow{Layout: layoutOne, System: sysRedisAlways, Consistency: "ONE", Workload: "A", Distribution: distZipfian, OpsPerS: 5000, LatencyMsP99: 2})
	figs := peersFigures(rows)
	if len(figs) != 4 {
		t.Fatalf("%d panels, want 4", len(figs))
	}
	// The 1-node layout has two levels in these rows (QUORUM and redis's ONE).
	if got := len(figs[0].Categories); got != 11 {
		t.Errorf("1 node: %d categories, want 11: %v", got, figs[0].Categories)
	}
	if got := len(figs[0].Series); got != 3 {
		t.Errorf("1 node: %d series, want 3", got)
	}
	if got := figs[2].Categories; len(got) != 10 || got[0] != "A z" || got[1] != "A u" {
		t.Errorf("3 nodes: categories %v", got)
	}
	if got := figs[0].Categories[0]; got != "A z Q" {
		t.Errorf("1 node: first category %q, want the level's initial after the workload's", got)
	}
	if err := SavePanels(filepath.Join(t.TempDir(), "peers.png"), 2, figs...); err != nil {
		t.Fatal(err)
	}
}

// TestPeersFiguresPerClientCount: a layout run at several client counts gets a row of
// panels per count, so that the full comparison's 30 rows per system are not one axis.
func TestPeersFiguresPerClientCount(t *testing.T) {
	var rows []PeerRow
	for _, clients := range []int{16, 64} {
		for _, system := range []string{sysKura, sysCassandra} {
			for _, level := range []string{"ONE", "QUORUM"} {
				rows = append(rows, PeerRow{Layout: layoutThree, System: system, Consistency: level, Clients: clients,
					Workload: "C", Distribution: distZipfian, OpsPerS: float64(clients), LatencyMsP99: 1})
			}
		}
	}
	figs := peersFigures(rows)
	var titles []string
	for _, f := range figs {
		titles = append(titles, f.Title)
	}
	want := []string{
		layoutThree + ", 16 clients: throughput", layoutThree + ", 16 clients: p99 latency",
		layoutThree + ", 64 clients: throughput", layoutThree + ", 64 clients: p99 latency",
	}
	if !slices.Equal(titles, want) {
		t.Fatalf("panels %q, want %q", titles, want)
	}
	if got := figs[2].Categories; !slices.Equal(got, []string{"C z O", "C z Q"}) {
		t.Errorf("64 clients: categories %q, want the two levels of C", got)
	}
	if got := figs[2].Series[0].Y; !slices.Equal(got, []float64{64, 64}) {
		t.Errorf("64 clients: kura's throughput %v, want the 64-client rows' only", got)
	}
}

func TestPeerRatioRanges(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	ratios := []PeerRatio{
		{Kura: sysKura, Peer: sysCassandra, OpsRatio: f(3), P99Ratio: f(0.5)},
		{Kura: sysKura, Peer: sysCassandra, OpsRatio: f(5), P99Ratio: nil},
		{Kura: sysKuraRESP, Peer: sysRedisAlways, Note: "n/a: Redis has no range scans"},
	}
	got := peerRatioRanges(ratios)
	kc, ok := got["kura/cassandra"].(map[string]any)
	if !ok || kc["ops_ratio_min"] != 3.0 || kc["ops_ratio_max"] != 5.0 || kc["p99_ratio_min"] != 0.5 || kc["p99_ratio_max"] != 0.5 {
		t.Errorf("kura/cassandra = %v", got["kura/cassandra"])
	}
	if _, ok := kc["cpu_ratio_min"]; ok {
		t.Error("a range of no values")
	}
	if _, ok := got["kura-resp/redis-always"]; ok {
		t.Error("a pair with only n/a rows has a range")
	}
}

// TestPeerGoals counts the goals of the ratios against Cassandra and redis-server met
// and lists the rows short of theirs, a ratio not measured among them.
func TestPeerGoals(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	cassandra := func(cl, workload string, clients int, ops, p99, cpu, rss *float64) PeerRatio {
		return PeerRatio{Layout: layoutThree, Kura: sysKura, Peer: sysCassandra, Consistency: cl, Clients: clients, Pipeline: 1,
			Workload: workload, Distribution: distZipfian, OpsRatio: ops, P99Ratio: p99, CPURatio: cpu, RSSRatio: rss}
	}
	redis := func(workload string, pipeline int, ops, cpu float64) PeerRatio {
		return PeerRatio{Layout: layoutOne, Kura: sysKuraRESP, Peer: sysRedisAlways, Consistency: "ONE", Clients: 16, Pipeline: pipeline,
			Workload: workload, Distribution: distZipfian, OpsRatio: f(ops), CPURatio: f(cpu)}
	}
	ratios := []PeerRatio{
		cassandra("ONE", "C", 16, f(6.8), f(0.15), f(0.07), f(0.08)),
		cassandra("ONE", "E", 256, f(3.51), f(0.341), f(0.227), f(0.08)),
		cassandra("QUORUM", "E", 256, f(3.01), f(0.318), nil, f(0.08)),
		redis("C", 1, 0.879, 1.19),
		redis("W", 1, 0.801, 1.6),
		redis("C", 16, 0.578, 1.3),
		redis("A", 1, 0.5, 9), // no goal for A
		{Layout: layoutOne, Kura: sysKuraRESP, Peer: sysRedisDefault, Workload: "C", OpsRatio: f(0.1)},
	}
	got := peerRatioRanges(ratios)
	for _, tt := range []struct {
		pair, met, short string
	}{
		{"kura/cassandra", "ops 3/3, p99 2/3, cpu 2/3",
			"ONE E zipfian c256: p99 0.341 > 0.333; QUORUM E zipfian c256: cpu - > 0.25"},
		{"kura-resp/redis-always", "cpu 1/3",
			"ONE W zipfian c16: cpu 1.6 > 1.5; ONE C zipfian c16 p16: cpu 1.3 > 1.2"},
	} {
		summary, _ := got[tt.pair].(map[string]any)
		if summary["goals_met"] != tt.met || summary["goals_short"] != tt.short {
			t.Errorf("%s: goals_met %q, goals_short %q; want %q and %q", tt.pair, summary["goals_met"], summary["goals_short"], tt.met, tt.short)
		}
	}
	if _, ok := got["kura-resp/redis-default"].(map[string]any)["goals_met"]; ok {
		t.Error("goals counted against redis-default, which does not sync its writes")
	}
	met := peerRatioRanges(ratios[:1])["kura/cassandra"].(map[string]any)
	if met["goals_met"] != "ops 1/1, p99 1/1, cpu 1/1" || met["goals_short"] != "none" {
		t.Errorf("every goal met: %q, %q", met["goals_met"], met["goals_short"])
	}
}

// fakeBatcher counts what drive sends it: every operation one at a time or in batches,
// failing the reads of one key.
type fakeBatcher struct {
	mu      sync.Mutex
	single  int
	batches []int
	bad     []byte
}

func (f *fakeBatcher) read(_ context.Context, key []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.single++
	if bytes.Equal(key, f.bad) {
		return errNotFound
	}
	return nil
}

func (f *fakeBatcher) update(ctx context.Context, key, _ []byte) error { return f.read(ctx, key) }
func (f *fakeBatcher) scan(context.Context, []byte, int) error         { return errNoScan }
func (f *fakeBatcher) close()                                          {}

func (f *fakeBatcher) batch(_ context.Context, ops []batchOp) (failed int, first error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, len(ops))
	for _, op := range ops {
		if bytes.Equal(op.key, f.bad) {
			failed++
			first = errNotFound
		}
	}
	return failed, first
}

// TestDrivePipeline checks that a pipelined run sends its operations in batches of the
// depth, counts each command as an operation (its failures as errors), and keeps one
// latency per round trip; and that depth 1 sends them one at a time.
func TestDrivePipeline(t *testing.T) {
	keys, _ := newKeyChooser(distUniform, 1) // every operation on key 0
	opts := driveOptions{workers: 2, pipeline: 16, duration: time.Hour, ops: 64, opTimeout: time.Minute, value: 8, seed: 1}

	f := &fakeBatcher{}
	res := drive(context.Background(), f, peerWorkloads[0], keys, opts)
	if f.single != 0 || len(f.batches) != 4 || slices.ContainsFunc(f.batches, func(n int) bool { return n != 16 }) {
		t.Errorf("batches %v and %d single operations, want 4 batches of 16", f.batches, f.single)
	}
	if res.ops != 64 || res.errors != 0 || res.latencies.Count() != 4 {
		t.Errorf("ops %d, errors %d, latencies %d; want 64, 0 and one per round trip (4)", res.ops, res.errors, res.latencies.Count())
	}

	f = &fakeBatcher{bad: ycsbKey(0)}
	res = drive(context.Background(), f, peerWorkloads[2], keys, opts)
	if res.ops != 0 || res.errors != 64 || !errors.Is(res.firstError, errNotFound) {
		t.Errorf("every read failing: ops %d, errors %d, first %v; want 0, 64, not found", res.ops, res.errors, res.firstError)
	}

	f = &fakeBatcher{}
	opts.pipeline = 1
	res = drive(context.Background(), f, peerWorkloads[0], keys, opts)
	if f.single != 64 || len(f.batches) != 0 || res.ops != 64 || res.latencies.Count() != 64 {
		t.Errorf("depth 1: %d single operations, %d batches, ops %d, latencies %d; want 64, 0, 64, 64",
			f.single, len(f.batches), res.ops, res.latencies.Count())
	}
}

// TestPeerRatiosPairByClientsAndPipeline checks that rows are paired only with the
// peer's row of the same client count and pipeline depth.
func TestPeerRatiosPairByClientsAndPipeline(t *testing.T) {
	row := func(system string, clients, pipeline int, ops float64) PeerRow {
		return PeerRow{Layout: layoutOne, System: system, Consistency: "ONE", Clients: clients, Pipeline: pipeline,
			Workload: "C", Distribution: distZipfian, OpsPerS: ops}
	}
	rows := []PeerRow{
		row(sysKuraRESP, 16, 1, 1000), row(sysKuraRESP, 16, 16, 8000), row(sysKuraRESP, 64, 1, 3000),
		row(sysRedisAlways, 16, 1, 2000), row(sysRedisAlways, 16, 16, 4000), row(sysRedisAlways, 64, 1, 3000),
	}
	got := map[[2]int]float64{}
	for _, r := range peerRatios(rows) {
		if r.OpsRatio != nil {
			got[[2]int{r.Clients, r.Pipeline}] = *r.OpsRatio
		}
	}
	want := map[[2]int]float64{{16, 1}: 0.5, {16, 16}: 2, {64, 1}: 1}
	if !maps.Equal(got, want) {
		t.Errorf("ops ratios by (clients, pipeline) %v, want %v", got, want)
	}
}

// TestPeerRowsPerCell checks the row count the progress is sized by: pipelines multiply
// the Redis-protocol rows only, kura's batching settings its Go client's rows only, gocql's coalescing settings
// Cassandra's only.
func TestPeerRowsPerCell(t *testing.T) {
	for _, c := range []struct {
		system                   string
		nodes, kuraClients, want int
	}{
		{sysKura, 1, 1, 3}, {sysKura, 1, 2, 4}, {sysKura, 3, 1, 1}, {sysKura, 3, 2, 2}, {sysKuraWAN, 3, 2, 2},
		{sysRedisAlways, 1, 2, 2}, {sysRedisDefault, 1, 2, 2}, {sysCassandra, 1, 2, 2},
	} {
		if got := peerRowsPerCell(c.system, c.nodes, 2, c.kuraClients, 2); got != c.want {
			t.Errorf("%s on %d nodes, 2 pipeline depths, %d batching settings, 2 coalescing settings: %d rows, want %d", c.system, c.nodes, c.kuraClients, got, c.want)
		}
	}
}

// turnLog is a client that records, for each run of the driver, which system ran.
type turnLog struct {
	system string
	mu     *sync.Mutex
	turns  *[]string
}

func (l turnLog) read(context.Context, []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(*l.turns); n == 0 || (*l.turns)[n-1] != l.system {
		*l.turns = append(*l.turns, l.system)
	}
	return nil
}
func (l turnLog) update(ctx context.Context, key, _ []byte) error { return l.read(ctx, key) }
func (l turnLog) scan(context.Context, []byte, int) error         { return errNoScan }
func (l turnLog) close()                                          {}

// TestRunAlternatedTakesTurns: within each row the systems take turns, each round
// starting one system later, and each system's row carries every round.
func TestRunAlternatedTakesTurns(t *testing.T) {
	var mu sync.Mutex
	var turns []string
	var live []liveStep
	for _, system := range []string{"a", "b", "c"} {
		d := &peerDeployment{clients: []namedClient{{system: system, c: turnLog{system, &mu, &turns}}}}
		live = append(live, liveStep{peerStep{layout: layoutOne, levels: []consistency.Level{consistency.One}}, d})
	}
	o := peersOptions{clients: []int{1}, pipelines: []int{1}, distributions: []string{distUniform}, keys: 10,
		workloads: []workloadMix{peerWorkloads[2]}, repeats: 3, duration: time.Minute, ops: 5, opTimeout: time.Second, valueBytes: 1}
	rows, err := runAlternated(context.Background(), Env{}.StartProgress("test", 9), o, live)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "b", "c", "a", "c", "a", "b"}; !slices.Equal(turns, want) {
		t.Errorf("turns %v, want %v", turns, want)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want one per system", len(rows))
	}
	for _, r := range rows {
		if len(r.Rounds) != 3 || r.Ops != 15 {
			t.Errorf("%s: %d rounds, %d operations; want 3 rounds of 5", r.System, len(r.Rounds), r.Ops)
		}
	}
}

func TestMedianPeerRow(t *testing.T) {
	rounds := []PeerRow{
		{System: "kura", Ops: 10, OpsPerS: 100, LatencyMsP99: 9, CPUSPerKop: 0.3, PeakRSSBytes: 5},
		{System: "kura", Ops: 10, Errors: 1, FirstError: "boom", OpsPerS: 80, LatencyMsP99: 12, CPUSPerKop: 0.2, PeakRSSBytes: 7},
		{System: "kura", Ops: 10, OpsPerS: 120, LatencyMsP99: 10, CPUSPerKop: 0.4, PeakRSSBytes: 6},
	}
	row := medianPeerRow(rounds)
	if row.OpsPerS != 100 || row.LatencyMsP99 != 10 || row.CPUSPerKop != 0.3 {
		t.Errorf("medians %v ops/s, p99 %v, cpu %v; want 100, 10, 0.3", row.OpsPerS, row.LatencyMsP99, row.CPUSPerKop)
	}
	if row.Ops != 30 || row.Errors != 1 || row.FirstError != "boom" || row.PeakRSSBytes != 7 || len(row.Rounds) != 3 {
		t.Errorf("row %+v: want 30 ops, 1 error (boom), peak 7, 3 rounds", row)
	}
	if row.OpsSpreadPct != 40 {
		t.Errorf("spread %v %%, want 40 (80 to 120 over 100)", row.OpsSpreadPct)
	}
	lowest, highest := roundRatios(row.Rounds, []PeerRound{{OpsPerS: 50}, {OpsPerS: 20}, {OpsPerS: 0}}, func(r PeerRound) float64 { return r.OpsPerS })
	if lowest == nil || highest == nil || *lowest != 2 || *highest != 4 {
		t.Errorf("round ratios %v-%v, want 2-4 (the round without a peer figure left out)", lowest, highest)
	}
}

// Without --bin, peers asks its caller for the kura binary its nodes run, and stops with
// the reason before starting anything when there is none.
func TestPeersNeedsAKuraBinary(t *testing.T) {
	tests := []struct {
		name       string
		kuraBinary func() (string, error)
		wantErr    string
	}{
		{"the caller knows none", nil, "--bin"},
		{"the caller finds none", func() (string, error) { return "", errors.New("no kura beside kura-bench or on PATH") },
			"find the kura binary: no kura beside kura-bench or on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := Lookup("peers")
			fs := flag.NewFlagSet("peers", flag.ContinueOnError)
			runner := b.Setup(fs)
			if err := fs.Parse([]string{"--systems", "kura", "--quick"}); err != nil {
				t.Fatal(err)
			}
			_, err := runner(context.Background(), Env{KuraBinary: tt.kuraBinary})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("peers without --bin: error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}

// TestDriveKeepsEveryLatency: workers that add their latencies to the run's histogram in
// several flushes lose none.
func TestDriveKeepsEveryLatency(t *testing.T) {
	keys, _ := newKeyChooser(distUniform, 1)
	ops := 3*latencyFlush + 7
	opts := driveOptions{workers: 2, pipeline: 1, duration: time.Hour, ops: ops, opTimeout: time.Minute, value: 8, seed: 1}
	res := drive(context.Background(), &fakeBatcher{}, peerWorkloads[0], keys, opts)
	if res.ops != ops || res.latencies.Count() != ops {
		t.Errorf("ops %d, latencies %d; want %d of each", res.ops, res.latencies.Count(), ops)
	}
}

// TestPeerLatencyPercentilesAsSorted: the p50, p99 and p999 a row reports (milliseconds
// to 3 decimals, from the run's histogram) are those of the sorted latencies
// (stats.Percentile) or above them by at most the histogram's 0.1 % and the rounding's
// 0.0005 ms, on random and skewed latencies.
func TestPeerLatencyPercentilesAsSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tt := range []struct {
		name string
		draw func() time.Duration
	}{
		{"uniform 80 µs to 5 ms", func() time.Duration {
			return 80*time.Microsecond + time.Duration(r.Int64N(int64(5*time.Millisecond)))
		}},
		{"exponential, mean 400 µs", func() time.Duration { return time.Duration(400e3 * r.ExpFloat64()) }},
		{"1 % stalls of 0.2 to 3 s", func() time.Duration {
			if r.Float64() < 0.01 {
				return 200*time.Millisecond + time.Duration(r.Int64N(int64(3*time.Second)))
			}
			return 150*time.Microsecond + time.Duration(r.Int64N(int64(time.Millisecond)))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := driveResult{latencies: hdr.New()}
			ms := make([]float64, 50_000)
			for i := range ms {
				d := tt.draw()
				res.latencies.Record(d)
				ms[i] = float64(d) / float64(time.Millisecond)
			}
			for _, q := range []float64{0.5, 0.99, 0.999} {
				got, sorted := round(res.percentileMs(q), 3), round(stats.Percentile(ms, q), 3)
				if diff := got - sorted; diff < 0 || diff > sorted*1e-3+0.0005 {
					t.Errorf("q %v: %v ms, sorted %v ms", q, got, sorted)
				}
			}
		})
	}
}
