package lifecycle

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/service/rebalance"
	"github.com/kuradb/kura/internal/service/ringchange"
	"github.com/kuradb/kura/internal/tools/nemesis"
	"github.com/kuradb/kura/internal/tools/sim"
)

// twoDCs is the scenarios' topology: a short hop inside a DC, 20 ms one way between
// DCs, and jitter everywhere so that no two messages arrive at one instant by accident.
func twoDCs(seed uint64, dcs []string, trace func(string)) Config {
	return Config{Seed: seed, DCs: dcs, Trace: trace, Links: sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
		if from == to {
			return sim.LinkSpec{Latency: 500 * time.Microsecond, Jitter: 100 * time.Microsecond, BandwidthBps: 1e9}, nil
		}
		return sim.LinkSpec{Latency: 20 * time.Millisecond, Jitter: time.Millisecond, BandwidthBps: 100e6}, nil
	})}
}

// TestScenarios runs the scripts in testdata/: each tells one cluster's life (starts,
// restarts, kills, joins, decommissions) in virtual time, with real nodes. The scripts
// run in parallel: each has its own bubble, cluster and virtual clock, which a busier
// machine slows down as a whole, never one timer against another.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := &scenario{acked: map[string]string{}, ackedAt: map[string]time.Time{}, loadErrs: map[string]int{}, pending: map[string]chan string{},
				rec: nemesis.NewRecorder(nil)}
			defer s.close(t)
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				return s.do(t, d)
			})
		})
	})
}

// scenario is one script's cluster and what its clients were told.
type scenario struct {
	c *Cluster
	// acked holds every acknowledged write, key to value, for check, and ackedAt when
	// it was acknowledged.
	acked   map[string]string
	ackedAt map[string]time.Time
	// loads are the background writers (load), and loadErrs how their writes failed.
	loads    sync.WaitGroup
	loadErrs map[string]int
	// pending holds, per node, the outcome of its decommission-async or alter async,
	// for outcome.
	pending map[string]chan string
	// rec records the increments and serial reads of counters (increments, counters),
	// for nemesis's checker; opID numbers them.
	rec  *nemesis.Recorder
	opID int64
	mu   sync.Mutex
}

func (s *scenario) close(t *testing.T) {
	if s.c != nil {
		if err := s.c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		// A script that failed before its await leaves its loads writing: they end on
		// the stopped cluster, or the bubble would end with them blocked and panic,
		// hiding the failure.
		s.loads.Wait()
		synctest.Wait()
	}
}

func (s *scenario) do(t *testing.T, d *datadriven.TestData) string {
	arg := func(key string) string {
		var v string
		if d.HasArg(key) {
			d.ScanArgs(t, key, &v)
		}
		return v
	}
	list := func(key string) []string {
		if v := arg(key); v != "" {
			return strings.Split(v, ",")
		}
		return nil
	}
	if d.Cmd == "cluster" {
		var seed uint64
		d.ScanArgs(t, "seed", &seed)
		cfg := twoDCs(seed, list("dcs"), nil)
		// default=: every node's --default-replication (the nodes define none without).
		cfg.DefaultReplication = arg("default")
		if os.Getenv("KURA_SIM_LOG") != "" {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		c, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.c = c
		return "ok"
	}
	if s.c == nil {
		t.Fatalf("%s: no cluster yet", d.Pos)
	}
	out, err := s.command(d, arg, list)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

func (s *scenario) command(d *datadriven.TestData, arg func(string) string, list func(string) []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	id := arg("node")
	switch d.Cmd {
	case "start":
		// founders=n1@dc1,n2@dc1: a topology file's nodes, which found the cluster together.
		var founders []cluster.Node
		for _, f := range list("founders") {
			id, dc, _ := strings.Cut(f, "@")
			founders = append(founders, cluster.Node{ID: id, DC: dc})
		}
		return "ok", s.c.StartNode(NodeSpec{ID: id, DC: arg("dc"), Seeds: list("seeds"), Replace: arg("replace"),
			DefaultReplication: arg("default-replication"), DefaultTransactions: arg("default-transactions"), Founders: founders})
	case "restart":
		// The same command as the node's last start, but for a DC given anew (dc=), as an
		// operator who edits --dc would.
		spec, err := s.c.Spec(id)
		if err != nil {
			return "", err
		}
		spec.DC = cmp.Or(arg("dc"), spec.DC)
		return "ok", s.c.StartNode(spec)
	case "refused":
		// Why the node stopped by itself, as `kura server` exits when its join is refused
		// for good.
		why, err := s.c.Refused(id)
		return cmp.Or(why, "not refused"), err
	case "stop":
		return "ok", s.c.Stop(id)
	case "kill":
		return "ok", s.c.Kill(id)
	case "wipe":
		return "ok", s.c.Wipe(id)
	case "partition":
		return "ok", s.c.Partition(arg("a"), arg("b"))
	case "heal":
		return "ok", s.c.Heal(arg("a"), arg("b"))
	case "run":
		dur, err := time.ParseDuration(arg("for"))
		if err != nil {
			return "", err
		}
		s.c.Run(dur)
		return "ok", nil
	case "run-until-promised":
		// Lets time pass until node gossips its promise of id's join: the script's next
		// command runs at that instant, before the joiner can have heard of the promise.
		return s.runUntil(ctx, id, "promised", func(run *node.Node) bool {
			_, ok := run.JoinsPromised()[arg("id")]
			return ok
		})
	case "run-until-status":
		// Lets time pass until node sees id (itself when id is node) with status: the
		// script's next command runs at that instant, before gossip has told the other
		// nodes, as an operator's command run at the same time on another node would.
		status, err := cluster.ParseStatus(arg("status"))
		if err != nil {
			return "", err
		}
		return s.runUntil(ctx, id, status.String(), func(run *node.Node) bool {
			other, ok := run.View().Node(arg("id"))
			return ok && other.Status == status
		})
	case "describe":
		// Keyspace name as each running node's catalog defines it, as kura keyspace
		// describe would show it through that node: its replication and, during a move,
		// where writes also go.
		var out []string
		for _, other := range s.c.Nodes() {
			run, err := s.c.Running(other)
			if err != nil {
				continue
			}
			ks, err := run.Keyspace(arg("name"))
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%s: %v", other, err))
			case ks.NextReplication != "":
				out = append(out, fmt.Sprintf("%s: replication %s, altering to %s", other, ks.Replication, ks.NextReplication))
			case ks.Moving:
				out = append(out, fmt.Sprintf("%s: replication %s, rebalancing", other, ks.Replication))
			default:
				out = append(out, fmt.Sprintf("%s: replication %s", other, ks.Replication))
			}
		}
		return strings.Join(out, "\n"), nil
	case "views":
		var out []string
		for _, other := range s.c.Nodes() {
			if v, err := s.c.View(other); err == nil {
				out = append(out, v)
			} else {
				out = append(out, other+": not running")
			}
		}
		return strings.Join(out, "\n"), nil
	case "converged":
		if ok, why := s.c.Converged(); !ok {
			return "no: " + why, nil
		}
		return "yes", nil
	case "keyspace":
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		ks := schema.Keyspace{Name: arg("name"), Replication: arg("replication"), Timestamp: hlc.FromTime(time.Now())}
		return "ok", run.CreateKeyspace(ctx, ks)
	case "put":
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		cl, keys, err := writes(arg)
		if err != nil {
			return "", err
		}
		acked, failed := 0, map[string]int{}
		for i := range keys {
			if err := s.write(ctx, run, arg("keyspace"), arg("prefix"), i, cl); err != nil {
				failed[firstLine(err)]++
				continue
			}
			acked++
		}
		return summary(fmt.Sprintf("%d acknowledged", acked), failed), nil
	case "load":
		// A client writing one key every interval in the background, as the script goes
		// on: writes through a node that stops fail, and are not acknowledged.
		cl, keys, err := writes(arg)
		if err != nil {
			return "", err
		}
		every, err := time.ParseDuration(arg("every"))
		if err != nil {
			return "", err
		}
		ks, prefix := arg("keyspace"), arg("prefix")
		s.loads.Add(1)
		go func() {
			defer s.loads.Done()
			for i := range keys {
				if run, err := s.c.Running(id); err == nil {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					if err := s.write(ctx, run, ks, prefix, i, cl); err != nil {
						s.mu.Lock()
						s.loadErrs[firstLine(err)]++
						s.mu.Unlock()
					}
					cancel()
				}
				<-time.After(every) // virtual time: the bubble's clock
			}
		}()
		return "started", nil
	case "await":
		s.loads.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		out := summary(fmt.Sprintf("%d acknowledged in all", len(s.acked)), s.loadErrs)
		clear(s.loadErrs)
		return out, nil
	case "check":
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		cl, err := consistency.Parse(arg("cl"))
		if err != nil {
			return "", err
		}
		_, _, out := s.check(ctx, run, cl, 0)
		return out, nil
	case "alter":
		// kura keyspace alter through node, which reads every acknowledged write through
		// each node of via at ONE, QUORUM and ALL after each step it reports: at ONE
		// those acknowledged a second before or more, since a QUORUM write may still be
		// on its way to the replica a read at ONE asks (that is ONE's contract, move or
		// not). The counts a step reports depend on the load's timing: they read as #.
		// The reads take virtual time, a cross-DC round trip each: the move gets an hour.
		// With async, the script goes on while it runs, and reads what it printed with
		// outcome.
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		name, replication, via := arg("name"), arg("replication"), list("via")
		if d.HasArg("async") {
			done := make(chan string, 1)
			s.pending[id] = done
			go func() { done <- s.alter(run, name, replication, via) }()
			return "started", nil
		}
		return s.alter(run, name, replication, via), nil
	case "stored":
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		records, _, err := run.StoredBytes(arg("keyspace"))
		if of := arg("of"); of != "" && err == nil {
			// Whether a stream is under way, not how far, which the scheduling of the
			// stream's goroutines may move by a page.
			want, err := strconv.Atoi(of)
			switch {
			case err != nil:
				return "", err
			case records == 0:
				return "none of " + of, nil
			case records < want:
				return "part of " + of, nil
			}
			return "all of " + of, nil
		}
		return fmt.Sprintf("%d records", records), err
	case "replicas":
		// Every acknowledged write of keyspace, read from the own storage of each replica
		// node's ring names for its key (no coordinator, so no read repair). Run once the
		// load stopped and its last writes landed: the simulator loses no message, and
		// the nodes run no background repair, so only the write itself, a hint of it
		// (which goes to a replica the write was sent to) or a move's copy can have put a
		// record there.
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		return s.replicas(ctx, run, arg("keyspace"))
	case "decommission":
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		return decommissioned(run.Decommission(ctx, d.HasArg("force")))
	case "decommission-async":
		// The operator's command runs on; the script goes on without waiting for it, and
		// reads what it answered with outcome.
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		alive, err := s.c.Alive(id)
		if err != nil {
			return "", err
		}
		done := make(chan string, 1)
		s.pending[id] = done
		// Read before the goroutine: the script's reader moves on to the next command.
		force := d.HasArg("force")
		go func() {
			out, err := decommissioned(run.Decommission(alive, force))
			if err != nil {
				out = "error: " + err.Error()
			}
			done <- out
		}()
		return "started", nil
	case "outcome":
		// What node's decommission-async or alter async answered, once it has: a command
		// still running holds the script until it ends, or for the command timeout at
		// most.
		done, ok := s.pending[id]
		if !ok {
			return "", fmt.Errorf("no decommission-async or alter async of %s", id)
		}
		select {
		case out := <-done:
			delete(s.pending, id)
			return out, nil
		case <-ctx.Done():
			return "still running", nil
		}
	case "remove":
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		st, err := run.RemoveNode(ctx, arg("id"), d.HasArg("force"))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("removed; gainers %s", cmp.Or(strings.Join(st.Gainers, ","), "none")), nil
	}
	if out, ok, err := s.transactionCommand(ctx, d, arg, list); ok {
		return out, err
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// runUntil lets time pass in steps of a millisecond until cond holds on node id, for
// ctx's time at most, and says whether it did: what, or "not " what.
func (s *scenario) runUntil(ctx context.Context, id, what string, cond func(*node.Node) bool) (string, error) {
	for {
		run, err := s.c.Running(id)
		if err != nil {
			return "", err
		}
		if cond(run) {
			return what, nil
		}
		if ctx.Err() != nil {
			return "not " + what, nil
		}
		s.c.Run(time.Millisecond)
	}
}

// alter runs kura keyspace alter through run, reading every acknowledged write through
// each node of via after each step (the alter command), and returns what it printed.
func (s *scenario) alter(run *node.Node, name, replication string, via []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var out []string
	err := run.AlterKeyspace(ctx, name, replication, false, func(p rebalance.Progress) {
		out = append(out, counts.ReplaceAllString(p.Step, "#"))
		for _, via := range via {
			viaRun, err := s.c.Running(via)
			if err != nil {
				out = append(out, "  "+err.Error())
				continue
			}
			for _, cl := range []consistency.Level{consistency.One, consistency.Quorum, consistency.All} {
				settled := time.Duration(0)
				if cl == consistency.One {
					settled = time.Second
				}
				if read, acked, why := s.check(ctx, viaRun, cl, settled); read != acked {
					out = append(out, fmt.Sprintf("  through %s at %s: %s", via, cl, why))
				}
			}
		}
	})
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	return strings.Join(out, "\n")
}

// counts matches the figures of a move's progress that depend on the load's timing.
var counts = regexp.MustCompile(`\d+ (rows|records|nodes)`)

// check reads every write acknowledged settled ago or earlier through run at cl, and
// returns how many it read of how many, with what failed how (and up to three keys not
// found, with the nodes that hold them).
func (s *scenario) check(ctx context.Context, run *node.Node, cl consistency.Level, settled time.Duration) (read, total int, out string) {
	failed := map[string]int{}
	var missing []string
	s.mu.Lock()
	acked := maps.Clone(s.acked)
	for name, at := range s.ackedAt {
		if time.Since(at) < settled {
			delete(acked, name)
		}
	}
	s.mu.Unlock()
	for name, want := range acked {
		ks, key, _ := strings.Cut(name, "/")
		rec, found, err := run.Coordinator().Get(ctx, ks, []byte(key), cl)
		switch {
		case err != nil:
			failed[firstLine(err)]++
		case !found:
			failed["not found"]++
			if len(missing) < 3 {
				missing = append(missing, name+" on "+s.holders(ks, key))
			}
		case string(rec.Value) != want:
			failed["stale"]++
		default:
			read++
		}
	}
	out = summary(fmt.Sprintf("%d of %d read", read, len(acked)), failed)
	if len(missing) > 0 {
		slices.Sort(missing)
		out += "\nmissing " + strings.Join(missing, "\nmissing ")
	}
	return read, len(acked), out
}

// replicas checks that every replica run's ring names for each acknowledged write of
// keyspace holds that write in its own storage, and says how many keys do, with up to
// three copies missing or stale.
func (s *scenario) replicas(ctx context.Context, run *node.Node, keyspace string) (string, error) {
	s.mu.Lock()
	acked := maps.Clone(s.acked)
	s.mu.Unlock()
	held, total := 0, 0
	var lacking []string
	for _, name := range slices.Sorted(maps.Keys(acked)) {
		ks, key, _ := strings.Cut(name, "/")
		if ks != keyspace {
			continue
		}
		total++
		ids, err := run.Replicas(ctx, ks, []byte(key))
		if err != nil {
			return "", err
		}
		all := true
		for _, id := range ids {
			replica, err := s.c.Running(id)
			if err != nil {
				return "", err
			}
			rec, found, err := replica.Peek(ctx, ks, []byte(key))
			switch {
			case err != nil:
				return "", err
			case !found || string(rec.Value) != acked[name]:
				all = false
				if len(lacking) < 3 {
					lacking = append(lacking, fmt.Sprintf("%s lacks %s (replicas %s)", id, name, strings.Join(ids, ",")))
				}
			}
		}
		if all {
			held++
		}
	}
	out := fmt.Sprintf("%d of %d keys on every replica", held, total)
	if len(lacking) > 0 {
		out += "\n" + strings.Join(lacking, "\n")
	}
	return out, nil
}

// decommissioned says what a decommission answered: the gainers, or why it failed.
func decommissioned(st ringchange.MoveStats, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("left; gainers %s", cmp.Or(strings.Join(st.Gainers, ","), "none")), nil
}

// writes reads the level and the number of keys a put or a load names.
func writes(arg func(string) string) (consistency.Level, int, error) {
	cl, err := consistency.Parse(arg("cl"))
	if err != nil {
		return 0, 0, err
	}
	keys, err := strconv.Atoi(arg("keys"))
	return cl, keys, err
}

// write puts key prefix-i through run's coordinator and, when acknowledged, remembers
// it for check.
func (s *scenario) write(ctx context.Context, run *node.Node, keyspace, prefix string, i int, cl consistency.Level) error {
	key := fmt.Sprintf("%s-%04d", prefix, i)
	value := fmt.Sprintf("%s@%s", key, time.Now().Format(time.StampMicro))
	if _, err := run.Coordinator().Put(ctx, keyspace, []byte(key), []byte(value), 0, cl); err != nil {
		return err
	}
	s.mu.Lock()
	s.acked[keyspace+"/"+key] = value
	s.ackedAt[keyspace+"/"+key] = time.Now()
	s.mu.Unlock()
	return nil
}

// holders lists the running nodes that hold a copy of key.
func (s *scenario) holders(ks, key string) string {
	var on []string
	for _, id := range s.c.Nodes() {
		if run, err := s.c.Running(id); err == nil {
			if _, found, err := run.Peek(context.Background(), ks, []byte(key)); err == nil && found {
				on = append(on, id)
			}
		}
	}
	return strings.Join(on, ",")
}

// summary says what succeeded and, sorted, what failed how often.
func summary(ok string, failed map[string]int) string {
	if len(failed) == 0 {
		return ok
	}
	var parts []string
	for why, n := range failed {
		parts = append(parts, fmt.Sprintf("%d: %s", n, why))
	}
	slices.Sort(parts)
	return ok + "; failed " + strings.Join(parts, "; ")
}

func firstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
