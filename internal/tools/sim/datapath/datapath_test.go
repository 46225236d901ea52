package datapath

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/racedetector"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/collection/counter"
	"github.com/kuradb/kura/internal/core/collection/zset"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/antientropy"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/tools/sim"
)

// threeDCs is the scenarios' topology: three DCs of three nodes, a short hop inside a
// DC, tens of milliseconds between them, and jitter everywhere so that no two messages
// arrive at the same instant by accident.
func threeDCs(seed uint64, trace func(string)) Config {
	cfg := Config{Seed: seed, Trace: trace, Links: sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
		if from == to {
			return sim.LinkSpec{Latency: 500 * time.Microsecond, Jitter: 100 * time.Microsecond, BandwidthBps: 1e9}, nil
		}
		oneWay := map[string]time.Duration{"ab": 20 * time.Millisecond, "ac": 40 * time.Millisecond, "bc": 30 * time.Millisecond}
		pair := from + to
		if from > to {
			pair = to + from
		}
		return sim.LinkSpec{Latency: oneWay[pair], Jitter: time.Millisecond, BandwidthBps: 100e6}, nil
	})}
	for _, dc := range []string{"a", "b", "c"} {
		for i := 1; i <= 3; i++ {
			cfg.Nodes = append(cfg.Nodes, NodeSpec{ID: fmt.Sprintf("%s%d", dc, i), DC: dc})
		}
	}
	return cfg
}

// TestScenarios runs the scripts in testdata/: each reads like a story of one cluster
// (writes, crashes, hints, repair, partitions), in virtual time. Every script runs twice
// with its seed (seedRuns), and the two runs must agree byte for byte, every message
// included.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		runs := make([]string, seedRuns())
		for i := range runs {
			synctest.Test(t, func(t *testing.T) {
				log := &runLog{}
				s := &scenario{log: log}
				defer s.close(t)
				datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
					out := s.do(t, d)
					log.printf("> %s %v\n%s\n", d.Cmd, d.CmdArgs, out)
					return out
				})
				runs[i] = log.String()
			})
		}
		checkRunsAgree(t, filepath.Base(path), runs)
	})
}

// seedRuns is how many times a scenario runs from its seed: twice, so that the runs
// can be compared, but once under the race detector, which needs the code run, not
// repeated (the suite without it compares the runs), and makes each run ten times
// slower.
func seedRuns() int {
	if racedetector.Enabled {
		return 1
	}
	return 2
}

// checkRunsAgree fails the test where the runs of one scenario from one seed differ.
func checkRunsAgree(t *testing.T, name string, runs []string) {
	t.Helper()
	for _, run := range runs[1:] {
		if run != runs[0] {
			t.Errorf("%s: two runs from one seed differ:\n%s", name, firstDifference(runs[0], run))
		}
	}
}

// expiry describes a record's deadline against the bubble's clock: "" for none,
// " (expires in 1s)" before it, " (expired 1s ago)" from it on.
func expiry(rec lww.Record) string {
	if rec.ExpiresAt == 0 {
		return ""
	}
	left := time.Until(rec.ExpiresAt.WallTime()).Round(time.Millisecond)
	if left > 0 {
		return fmt.Sprintf(" (expires in %v)", left)
	}
	return fmt.Sprintf(" (expired %v ago)", -left)
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("one run is longer: %d against %d lines", len(al), len(bl))
}

// scenario is one script's cluster.
type scenario struct {
	c   *Cluster
	log *runLog
	// traffic is the network's counters at the last traffic command, for "traffic new".
	traffic sim.Counters
	// visited is the index entries every node had visited at the last indexwork command.
	visited map[string]int64
	// counters are the PN counters' writers, by node and key (counter_test.go).
	counters map[string]counter.Writer
	// listClock stamps the list positions the list commands make (list_test.go).
	listClock *hlc.Clock
}

// runLog is one run's record: the commands and the network's trace. The driver writes to
// it from its own goroutine; the lock orders those writes for the race detector, since
// virtual time alone orders them but does not say so in the memory model.
type runLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *runLog) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format, args...)
}

func (l *runLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (s *scenario) close(t *testing.T) {
	if s.c != nil {
		if err := s.c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		synctest.Wait() // background writes and repairs drain
	}
}

func (s *scenario) do(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd == "cluster" {
		var seed uint64
		d.ScanArgs(t, "seed", &seed)
		cfg := threeDCs(seed, func(line string) { s.log.printf("%s\n", line) })
		if d.HasArg("grace") {
			var grace string
			d.ScanArgs(t, "grace", &grace)
			var err error
			if cfg.TombstoneGrace, err = time.ParseDuration(grace); err != nil {
				t.Fatal(err)
			}
		}
		c, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.c = c
		return fmt.Sprintf("%d nodes in a, b, c", len(c.Nodes()))
	}
	if s.c == nil {
		t.Fatalf("%s: no cluster yet", d.Pos)
	}
	out, err := s.command(t, d)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

func (s *scenario) command(t *testing.T, d *datadriven.TestData) (string, error) {
	arg := func(key string) string {
		var v string
		if d.HasArg(key) {
			d.ScanArgs(t, key, &v)
		}
		return v
	}
	level := func() consistency.Level {
		cl, err := consistency.Parse(arg("cl"))
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		return cl
	}
	timed := func(f func(ctx context.Context) (string, error)) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		out, err := f(ctx)
		took := time.Since(start).Round(100 * time.Microsecond)
		if err != nil {
			return "", fmt.Errorf("%w (after %v)", err, took)
		}
		return fmt.Sprintf("%s (%v)", out, took), nil
	}
	const keyspace = "ks"
	switch d.Cmd {
	case "keyspace":
		ks := schema.Keyspace{Name: keyspace, Replication: strings.ReplaceAll(arg("replication"), ":", "="), Partitioner: arg("partitioner"), Transactions: arg("transactions"),
			CollectionInstances: arg("elements") == "collection"}
		if code := arg("erasure"); code != "" {
			var err error
			if ks.Erasure, err = schema.ParseErasure(strings.ReplaceAll(code, "/", ",")); err != nil {
				return "", err
			}
		}
		return "ok", s.c.CreateKeyspace(ks)
	case "replicas":
		members, err := s.c.Replicas(arg("node"), keyspace, []byte(arg("key")))
		var ids []string
		for _, m := range members {
			ids = append(ids, m.ID)
		}
		return strings.Join(ids, " "), err
	case "owners":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		members, err := co.ChunkOwners(context.Background(), keyspace, []byte(arg("key")))
		var ids []string
		for _, m := range members {
			ids = append(ids, m.ID)
		}
		return strings.Join(ids, " "), err
	case "put", "delete":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		return timed(func(ctx context.Context) (string, error) {
			if d.Cmd == "delete" {
				_, err := co.Delete(ctx, keyspace, []byte(arg("key")), level())
				return "ok", err
			}
			var expiresAt hlc.Timestamp
			if ttl := arg("ttl"); ttl != "" {
				// A duration from now, negative for a deadline already past.
				d, err := time.ParseDuration(ttl)
				if err != nil {
					return "", err
				}
				expiresAt = hlc.FromTime(time.Now().Add(d))
			}
			_, err := co.Put(ctx, keyspace, []byte(arg("key")), []byte(arg("value")), expiresAt, level())
			return "ok", err
		})
	case "puteach":
		// Writes value to each of keys in one PutEach, and answers each key's outcome.
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		keys := strings.Split(arg("keys"), ",")
		puts := make([]lww.Record, len(keys))
		for i, key := range keys {
			puts[i] = lww.Record{Key: []byte(key), Value: []byte(arg("value"))}
		}
		return timed(func(ctx context.Context) (string, error) {
			var out strings.Builder
			for i, r := range co.PutEach(ctx, keyspace, puts, level()) {
				if r.Err != nil {
					fmt.Fprintf(&out, "%s: error: %v\n", keys[i], r.Err)
				} else {
					fmt.Fprintf(&out, "%s: ok\n", keys[i])
				}
			}
			return out.String() + "all answered", nil
		})
	case "get":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		return timed(func(ctx context.Context) (string, error) {
			rec, found, err := co.Get(ctx, keyspace, []byte(arg("key")), level())
			if !found {
				return "not found", err
			}
			return string(rec.Value) + expiry(rec), err
		})
	case "exists":
		// As the Redis front end decides EXISTS and TYPE: the key's own record, and for a
		// collection whether it holds a member (an emptied one reads as absent).
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		key := []byte(arg("key"))
		return timed(func(ctx context.Context) (string, error) {
			rec, found, err := co.Get(ctx, keyspace, key, level())
			if err != nil || !found {
				return "absent", err
			}
			if has, err := co.HasMembers(ctx, keyspace, key, rec.Type, level()); err != nil || !has {
				return "absent (emptied " + rec.Type.String() + ")", err
			}
			return "exists, " + rec.Type.String(), nil
		})
	case "scan":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		return timed(func(ctx context.Context) (string, error) {
			var limit int
			d.ScanArgs(t, "limit", &limit)
			recs, err := co.Scan(ctx, keyspace, nil, nil, limit, level())
			var kv []string
			for _, r := range recs {
				kv = append(kv, string(r.Key)+"="+string(r.Value))
			}
			return strings.Join(kv, " "), err
		})
	case "cas":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		return timed(func(ctx context.Context) (string, error) {
			res, err := co.Update(ctx, keyspace, []byte(arg("key")), level(), casFunc(arg("if"), arg("value"), d.HasArg("delete")))
			if err != nil {
				return "", err
			}
			previous := "absent"
			if res.PreviousFound {
				previous = string(res.Previous.Value)
			}
			if res.Applied {
				return "applied, was " + previous, nil
			}
			return "not applied, is " + previous, nil
		})
	case "paxos":
		var parts []string
		for _, id := range s.c.Nodes() {
			in := paxos.Instance{Key: []byte(arg("key"))}
			if d.HasArg("partition") {
				in = paxos.Instance{Key: []byte(arg("partition")), Partition: true}
			}
			st, err := s.c.PaxosState(id, keyspace, in)
			switch {
			case err != nil:
				parts = append(parts, id+": crashed")
			case st.Promised.IsZero():
				continue
			default:
				line := fmt.Sprintf("%s: promised %s", id, st.Promised.Node)
				if !st.Accepted.IsZero() {
					var values []string
					for _, rec := range st.Accepted.Records() {
						values = append(values, string(rec.Value))
					}
					line += fmt.Sprintf(", accepted %q from %s", strings.Join(values, " "), st.Accepted.Origin.Node)
				}
				if c := st.Committed(); !c.Ballot.IsZero() {
					line += fmt.Sprintf(", %d commits, last from %s", len(st.Commits), c.Origin.Node)
				}
				parts = append(parts, line)
			}
		}
		return strings.Join(parts, "\n"), nil
	case "txn", "txnread", "txnrace", "txnadd":
		return s.partition(d, keyspace, arg, level(), timed)
	case "hset", "hgetall", "delkey":
		return s.hash(d, keyspace, arg, level(), timed)
	case "sadd", "srem", "smembers":
		return s.set(d, keyspace, arg, level(), timed)
	case "zadd", "zrange":
		return s.zset(d, keyspace, arg, level(), timed)
	case "incr", "counter", "delcounter":
		return s.counter(d, keyspace, arg, level(), timed)
	case "poprace":
		return s.popRace(keyspace, []byte(arg("key")), arg)
	case "lpush", "rpush", "lpop", "lrange":
		return s.list(d, keyspace, arg, level(), timed)
	case "drop":
		var kinds []string
		if k := arg("kinds"); k != "" {
			kinds = strings.Split(k, ",")
		}
		s.c.DropKinds(kinds...)
		return "ok", nil
	case "peek":
		var parts []string
		for _, id := range s.c.Nodes() {
			rec, found, err := s.c.Peek(id, keyspace, []byte(arg("key")))
			switch {
			case err != nil:
				parts = append(parts, id+":crashed")
			case !found:
				parts = append(parts, id+":-")
			case rec.Tombstone:
				parts = append(parts, id+":deleted"+expiry(rec))
			default:
				parts = append(parts, id+":"+string(rec.Value)+expiry(rec))
			}
		}
		return strings.Join(parts, " "), nil
	case "crash":
		if after := arg("after"); after != "" {
			delay, err := time.ParseDuration(after)
			if err != nil {
				return "", err
			}
			s.c.CrashAfter(arg("node"), delay, func(err error) { t.Errorf("crash: %v", err) })
			return "crash scheduled", nil
		}
		return "ok", s.c.Crash(arg("node"))
	case "restart":
		return "ok", s.c.Restart(arg("node"))
	case "state":
		state, ok := map[string]cluster.State{"up": cluster.StateUp, "down": cluster.StateDown, "joining": cluster.StateJoining,
			"leaving": cluster.StateLeaving, "asleep": cluster.StateAsleep}[arg("state")]
		if !ok {
			t.Fatalf("%s: unknown state %q", d.Pos, arg("state"))
		}
		for _, id := range strings.Split(arg("node"), ",") {
			if err := s.c.SetState(id, state); err != nil {
				return "", err
			}
		}
		return "ok", nil
	case "power":
		state, err := power.ParseState(arg("state"))
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		p := cluster.Power{State: state}
		if holders := arg("holders"); holders != "" {
			p.Holders = strings.Split(holders, ",")
		}
		return "ok", s.c.SetPower(arg("node"), p)
	case "flush":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		n, err := co.FlushHints(context.Background(), arg("target"))
		return fmt.Sprintf("%d delivered", n), err
	case "partition":
		return "ok", s.c.Partition(arg("between")[:1], arg("between")[2:])
	case "heal":
		return "ok", s.c.Heal(arg("between")[:1], arg("between")[2:])
	case "run":
		delay, err := time.ParseDuration(arg("for"))
		if err != nil {
			return "", err
		}
		s.c.Run(delay)
		return "ok", nil
	case "hints":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		n, err := co.HintsPending()
		return fmt.Sprintf("%d pending", n), err
	case "replay":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		n, err := co.ReplayHints(context.Background())
		return fmt.Sprintf("%d delivered", n), err
	case "traffic":
		now := s.c.Counters()
		shown := now
		if d.HasArg("new") {
			shown = now.Sub(s.traffic)
		}
		s.traffic = now
		return traffic(shown), nil
	case "load", "unload":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		var keys int
		d.ScanArgs(t, "keys", &keys)
		return timed(func(ctx context.Context) (string, error) {
			for i := range keys {
				var err error
				if d.Cmd == "unload" {
					_, err = co.Delete(ctx, keyspace, loadKey(i), level())
				} else {
					_, err = co.Put(ctx, keyspace, loadKey(i), loadValue(arg("value"), i), 0, level())
				}
				if err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("%d keys %s", keys, map[string]string{"load": "written", "unload": "deleted"}[d.Cmd]), nil
		})
	case "scankeys":
		return s.scanKeys(t, d, keyspace, arg, level())
	case "indexwork":
		now := map[string]int64{}
		var parts []string
		for _, id := range s.c.Nodes() {
			st, err := s.c.IndexStats(id)
			if err != nil {
				return "", err
			}
			now[id] = st.Visited
			if n := st.Visited - s.visited[id]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s:%d", id, n))
			}
		}
		s.visited = now
		return "index entries visited: " + strings.Join(parts, " "), nil
	case "check":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		var keys int
		d.ScanArgs(t, "keys", &keys)
		return timed(func(ctx context.Context) (string, error) {
			var missing []string
			for i := range keys {
				rec, found, err := co.Get(ctx, keyspace, loadKey(i), level())
				if err != nil {
					return "", err
				}
				if !found || string(rec.Value) != string(loadValue(arg("value"), i)) {
					missing = append(missing, string(loadKey(i)))
				}
			}
			out := fmt.Sprintf("%d keys, %d missing", keys, len(missing))
			if len(missing) > 0 && len(missing) <= 5 {
				out += ": " + strings.Join(missing, " ")
			}
			return out, nil
		})
	case "wipe":
		return "ok", s.c.Wipe(arg("node"))
	case "collect":
		var removed, expired []string
		for _, id := range strings.Split(arg("node"), ",") {
			n, err := s.c.CollectGarbage(id)
			if err != nil {
				return "", err
			}
			removed = append(removed, fmt.Sprintf("%s:%d", id, n.Removed))
			if n.Expired > 0 {
				expired = append(expired, fmt.Sprintf("%s:%d", id, n.Expired))
			}
		}
		out := "removed " + strings.Join(removed, " ")
		if len(expired) > 0 {
			out += "; expired values turned to tombstones " + strings.Join(expired, " ")
		}
		return out, nil
	case "truncate":
		_, err := s.c.Truncate(arg("node"), keyspace)
		return "ok", err
	case "stored":
		var parts []string
		for _, id := range s.c.Nodes() {
			n, err := s.c.Stored(id, keyspace)
			if err != nil {
				return "", err
			}
			parts = append(parts, fmt.Sprintf("%s:%d", id, n))
		}
		return strings.Join(parts, " "), nil
	case "repair":
		return timed(func(ctx context.Context) (string, error) {
			st, err := s.c.Repair(ctx, arg("node"), antientropy.Request{Keyspace: keyspace, DC: arg("dc")})
			return repairStats(st), err
		})
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return "", nil
}

// casFunc is the cas command's update: write value (or delete) when the key's current
// value meets cond: "absent", "present", "=old", or "" for always.
func casFunc(cond, value string, del bool) coord.UpdateFunc {
	return func(cur lww.Record, found bool) (lww.Record, bool, error) {
		met := true
		switch {
		case cond == "absent":
			met = !found
		case cond == "present":
			met = found
		case strings.HasPrefix(cond, "="):
			met = found && string(cur.Value) == cond[1:]
		}
		return lww.Record{Value: []byte(value), Tombstone: del}, met, nil
	}
}

// scanKeys walks the keyspace with ScanKeys: calls=N calls (all, until the walk ends,
// when not given) from cursor=C (0), count=K keys each, through node=ID, or through each
// node of nodes=ID,ID,... in turn. It prints a line per call: the cursor, and the keys.
func (s *scenario) scanKeys(t *testing.T, d *datadriven.TestData, keyspace string, arg func(string) string, cl consistency.Level) (string, error) {
	nodes := strings.Split(arg("node")+arg("nodes"), ",")
	var count, calls int
	d.ScanArgs(t, "count", &count)
	if d.HasArg("calls") {
		d.ScanArgs(t, "calls", &calls)
	}
	var cursor uint64
	if d.HasArg("cursor") {
		d.ScanArgs(t, "cursor", &cursor)
	}
	var lines []string
	for call := 0; calls == 0 || call < calls; call++ {
		co, err := s.c.Coordinator(nodes[call%len(nodes)])
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		keys, next, err := co.ScanKeys(ctx, keyspace, cursor, count, cl)
		cancel()
		if err != nil {
			return strings.Join(append(lines, "error: "+err.Error()), "\n"), nil
		}
		var names []string
		for _, k := range keys {
			names = append(names, string(k))
		}
		lines = append(lines, fmt.Sprintf("%s: %d -> %d: %s", nodes[call%len(nodes)], cursor, next, strings.Join(names, " ")))
		if cursor = next; cursor == 0 {
			break
		}
	}
	return strings.Join(lines, "\n"), nil
}

// traffic prints the messages and bytes that crossed between DCs, per pair and kind.
func traffic(counters sim.Counters) string {
	var lines []string
	for key, c := range counters {
		if key.FromDC != key.ToDC && c.Messages > 0 {
			lines = append(lines, fmt.Sprintf("%s->%s %s: %d messages, %d bytes", key.FromDC, key.ToDC, key.Kind, c.Messages, c.Bytes))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// loadKey is the i-th key the load command writes.
func loadKey(i int) []byte { return fmt.Appendf(nil, "key-%03d", i) }

// loadValue is the value the load command writes to the i-th key: prefix-i, where the
// prefix is "value" unless the command names one.
func loadValue(prefix string, i int) []byte {
	if prefix == "" {
		prefix = "value"
	}
	return fmt.Appendf(nil, "%s-%03d", prefix, i)
}

// repairStats prints what a repair did, one line per kind of figure.
func repairStats(st antientropy.Stats) string {
	return fmt.Sprintf("ranges %d, failed %d, sub-ranges %d, differing %d\n"+
		"records: read %d, sent %d, skipped %d\n"+
		"bytes: trees %d, records %d, chunk listing %d\n"+
		"chunks: keys listed %d, rebuilt %d",
		st.Ranges, st.Failed, st.Subranges, st.DifferingSubranges,
		st.RecordsRead, st.RecordsSent, st.Skipped,
		st.TreeBytes, st.RecordBytes, st.ListingBytes,
		st.ChunkKeysListed, st.ChunksRebuilt)
}

// hash runs the commands of Redis hashes through the coordinator's collections
// (docs/redis-types.md), as the Redis front end does: hset node=ID key=K fields=f=v,...
// [create] writes fields and the header (create: a reset point first, as for a new key);
// hgetall prints the live fields, or absent; delkey deletes the key as DEL does, its
// header by a transaction at SERIAL, then the reset point at the delete's timestamp.
func (s *scenario) hash(d *datadriven.TestData, keyspace string, arg func(string) string, cl consistency.Level,
	timed func(func(ctx context.Context) (string, error)) (string, error)) (string, error) {
	co, err := s.c.Coordinator(arg("node"))
	if err != nil {
		return "", err
	}
	key := []byte(arg("key"))
	return timed(func(ctx context.Context) (string, error) {
		switch d.Cmd {
		case "hset":
			w := coord.CollectionWrite{Header: &lww.Record{Type: lww.Hash}}
			if d.HasArg("create") {
				w.Reset = coord.ResetCreate
			}
			for _, pair := range strings.Split(arg("fields"), ",") {
				name, value, _ := strings.Cut(pair, "=")
				w.Elements = append(w.Elements, lww.Record{Key: element.Key(key, element.HashField, []byte(name)), Value: []byte(value)})
			}
			_, err := co.WriteCollection(ctx, keyspace, key, w, cl)
			return "ok", err
		case "delkey":
			res, err := co.Update(ctx, keyspace, key, consistency.Serial, func(_ lww.Record, found bool) (lww.Record, bool, error) {
				return lww.Record{Tombstone: true}, found, nil
			})
			if err != nil || !res.Applied {
				return "not found", err
			}
			return "deleted", co.ResetCollection(ctx, keyspace, key, res.Record.Timestamp, cl)
		}
		coll, err := co.ReadCollection(ctx, keyspace, key, cl)
		if err != nil || !coll.Found {
			return "absent", err
		}
		var fields []string
		for _, rec := range coll.Elements {
			_, _, name, _ := element.Parse(rec.Key)
			fields = append(fields, string(name)+"="+string(rec.Value))
		}
		return coll.Header.Type.String() + " " + strings.Join(fields, " "), nil
	})
}

// zset runs the commands of Redis sorted sets through the coordinator's collections with
// internal/core/collection/zset's rule, as the Redis front end's ZADD and ZRANGE do: zadd node=ID key=K
// members=m=score,... [create] reads the members named and writes each one's member
// record, its score entry and the tombstone of the entry of the score it read, with the
// header (create: a reset point first, as for a new key); zrange prints the members in
// order with their scores, or absent.
func (s *scenario) zset(d *datadriven.TestData, keyspace string, arg func(string) string, cl consistency.Level,
	timed func(func(ctx context.Context) (string, error)) (string, error)) (string, error) {
	co, err := s.c.Coordinator(arg("node"))
	if err != nil {
		return "", err
	}
	key := []byte(arg("key"))
	return timed(func(ctx context.Context) (string, error) {
		if d.Cmd == "zadd" {
			var names [][]byte
			var scores []float64
			for _, pair := range strings.Split(arg("members"), ",") {
				name, score, _ := strings.Cut(pair, "=")
				f, ok := zset.ParseScore([]byte(score))
				if !ok {
					return "", fmt.Errorf("score %q is not a float", score)
				}
				names, scores = append(names, []byte(name)), append(scores, f)
			}
			keys := make([][]byte, len(names))
			for i, name := range names {
				keys[i] = zset.MemberKey(key, name)
			}
			_, read, err := co.ReadElements(ctx, keyspace, key, keys, cl)
			if err != nil {
				return "", err
			}
			w := coord.CollectionWrite{Header: &lww.Record{Type: lww.SortedSet}}
			if d.HasArg("create") {
				w.Reset = coord.ResetCreate
			}
			for i, name := range names {
				had, found := zset.ParseScoreValue(read[i].Record.Value)
				w.Elements = append(w.Elements, zset.Set(key, name, scores[i], had, found && read[i].Found)...)
			}
			_, err = co.WriteCollection(ctx, keyspace, key, w, cl)
			return "ok", err
		}
		coll, err := co.ReadCollection(ctx, keyspace, key, cl)
		if err != nil || !coll.Found {
			return "absent", err
		}
		var members []string
		for _, m := range zset.Fold(coll.Elements) {
			members = append(members, string(m.Name)+":"+zset.FormatScore(m.Score))
		}
		return coll.Header.Type.String() + " " + strings.Join(members, " "), nil
	})
}
