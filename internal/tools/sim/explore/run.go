package explore

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/tools/nemesis"
	"github.com/kuradb/kura/internal/tools/sim"
	"github.com/kuradb/kura/internal/tools/sim/lifecycle"
)

// Violation is one broken promise of a run.
type Violation struct {
	Seed   uint64 `json:"seed"`
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

// Result is what one run of a schedule found.
type Result struct {
	Schedule   Schedule
	Violations []Violation
	// Log is what happened, step by step, for a person reading a failing seed, and
	// NodeLog what the nodes logged at warning level and above.
	Log     []string
	NodeLog string
	// Acknowledged counts the writes the clients were told succeeded, Increments the
	// increments of counters.
	Acknowledged int
	Increments   int
	Operations   int
	// Events is the history the checker judged.
	Events []nemesis.Event
	// Outcomes are the operator commands' outcomes, "name: outcome", sorted by name.
	Outcomes []string
}

// Keyspace is the workload's keyspace.
const keyspace = "app"

// Tunables of a run, in virtual time.
const (
	clients      = 2
	keys         = 40 // few enough that keys are overwritten and read back often
	opInterval   = 100 * time.Millisecond
	opTimeout    = 5 * time.Second
	commandLimit = 5 * time.Minute // a ring change that takes longer has stalled
)

// The counters' workload: counterClients increment counters and read them at the
// schedule's serial level, beside the clients; few counters, so that their transactions
// contend.
const (
	counterClients = 2
	counters       = 3
)

// Run executes a schedule on a fresh simulated cluster and checks it. Call it inside a
// synctest bubble.
func Run(s Schedule) Result {
	r := &runner{s: s, res: Result{Schedule: s}, rec: nemesis.NewRecorder(nil), commands: map[string]*command{}, revived: map[string]bool{}, begin: time.Now()}
	r.run()
	return r.res
}

// runner is one run in progress.
type runner struct {
	s   Schedule
	c   *lifecycle.Cluster
	res Result
	rec *nemesis.Recorder

	begin   time.Time // when the run started, in virtual time
	nodeLog lockedBuffer

	mu       sync.Mutex
	opID     int64
	commands map[string]*command // operator commands by description
	wiped    []string            // faults open until the end: a wiped disk
	revived  map[string]bool     // nodes heal started again
}

// command is an operator command running in the background.
type command struct {
	started time.Time
	done    bool
	outcome string
	// mustRefuse says why the node must refuse the command, drawn short of nodes (empty
	// when it may accept it); accepted says whether it was done, and wrong why its
	// outcome breaks a promise.
	mustRefuse string
	accepted   bool
	wrong      string
}

// startCommand records operator command name as started now; mustRefuse says why the
// node must refuse it (empty when it may accept it).
func (r *runner) startCommand(name, mustRefuse string) *command {
	cmd := &command{started: time.Now(), mustRefuse: mustRefuse}
	r.mu.Lock()
	r.commands[name] = cmd
	r.mu.Unlock()
	return cmd
}

func (r *runner) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Log = append(r.res.Log, fmt.Sprintf("%7.1fs ", time.Since(r.begin).Seconds())+fmt.Sprintf(format, args...))
}

func (r *runner) violate(check, format string, args ...any) {
	r.res.Violations = append(r.res.Violations, Violation{Seed: r.s.Seed, Check: check, Reason: fmt.Sprintf(format, args...)})
}

func (r *runner) run() {
	logger := slog.New(slog.NewTextHandler(&r.nodeLog, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.String("t", fmt.Sprintf("%.1fs", a.Value.Time().Sub(r.begin).Seconds()))
			}
			return a
		}}))
	c, err := lifecycle.Start(lifecycle.Config{Seed: r.s.Seed, DCs: r.s.DCs, Links: links(), Logger: logger})
	if err != nil {
		r.violate("setup", "%v", err)
		return
	}
	r.c = c
	defer func() {
		if err := c.Close(); err != nil {
			r.logf("close: %v", err)
		}
	}()
	for _, spec := range r.s.Nodes {
		if err := c.StartNode(spec); err != nil {
			r.violate("setup", "start %s: %v", spec.ID, err)
			return
		}
	}
	// As an operator would, wait until every node is normal before creating the keyspace.
	for waited := time.Duration(0); !r.allNormal(); waited += time.Second {
		if waited > commandLimit {
			r.violate("liveness", "the first nodes are not all normal after %v", waited)
			return
		}
		c.Run(time.Second)
	}
	r.logf("every node is normal")
	first, _ := c.Running("n1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = first.CreateKeyspace(ctx, schema.Keyspace{Name: keyspace, Replication: r.s.Replication, Timestamp: hlc.FromTime(time.Now())})
	cancel()
	if err != nil {
		r.violate("setup", "create keyspace: %v", err)
		return
	}
	c.Run(5 * time.Second)
	r.recordMeta()

	chaosStart := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.client(i+1, stop)
		}()
	}
	for i := range counterClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.counterClient(clients+i+1, stop)
		}()
	}
	for _, st := range r.s.steps() {
		if wait := st.At - time.Since(chaosStart); wait > 0 {
			time.Sleep(wait)
		}
		r.do(st)
	}
	if wait := r.s.Chaos - time.Since(chaosStart); wait > 0 {
		time.Sleep(wait)
	}
	close(stop)
	wg.Wait()
	r.heal()
	c.Run(r.s.Settle)
	r.checkLiveness()
	r.finalReads()
	r.finalCounterReads()
	r.recordFinal()
	r.checkHistory()
	if len(r.res.Violations) > 0 {
		for _, id := range r.c.Nodes() {
			if view, err := r.c.View(id); err == nil {
				r.logf("view %s", view)
			}
		}
	}
	r.res.NodeLog = r.nodeLog.String()
}

// lockedBuffer is a log the nodes write to from their goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// allNormal reports whether every running node is normal in its own view.
func (r *runner) allNormal() bool {
	for _, id := range r.c.Nodes() {
		if run, err := r.c.Running(id); err == nil && run.Self().Status != cluster.StatusNormal {
			return false
		}
	}
	return true
}

// links is the simulated network: half a millisecond inside a DC, 20-40 ms between DCs.
func links() sim.LinkModel {
	return sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
		if from == to {
			return sim.LinkSpec{Latency: 500 * time.Microsecond, Jitter: 100 * time.Microsecond, BandwidthBps: 1e9}, nil
		}
		oneWay := 20 * time.Millisecond
		if from == "dc3" || to == "dc3" {
			oneWay = 40 * time.Millisecond
		}
		return sim.LinkSpec{Latency: oneWay, Jitter: time.Millisecond, BandwidthBps: 100e6}, nil
	})
}

// do carries out one step. A step that no longer applies (its node is not running,
// because an earlier step failed) is logged and skipped.
func (r *runner) do(st Step) {
	c := r.c
	var err error
	switch st.Do {
	case "start":
		err = c.StartNode(r.withLiveSeed(st.Spec))
	case "stop":
		err = c.Stop(st.Node)
	case "kill":
		if err = c.Kill(st.Node); err == nil && !r.plannedMember(st.Node) {
			// Its disk is lost for good (it will be removed or replaced): as a wipe, a
			// write only it acknowledged may be gone, and reads may miss it meanwhile.
			r.fault(st.Node+" lost", "start", true)
			r.wiped = append(r.wiped, st.Node+" lost")
		}
	case "restart":
		var spec lifecycle.NodeSpec
		if spec, err = c.Spec(st.Node); err == nil {
			err = c.StartNode(r.withLiveSeed(spec))
		}
	case "wipe":
		if err = c.Wipe(st.Node); err == nil {
			r.fault(st.Node+" wiped", "start", true)
			r.wiped = append(r.wiped, st.Node+" wiped")
		}
	case "decommission", "remove":
		err = r.command(st)
	case "alter", "settle":
		err = r.alter(st)
	case "partition":
		err = c.Partition(st.Node, st.Target)
		r.fault("partition "+st.Node+"-"+st.Target, "start", false)
	case "heal":
		err = c.Heal(st.Node, st.Target)
		r.fault("partition "+st.Node+"-"+st.Target, "heal", false)
	case "cut":
		c.Cut(st.Node, st.Target)
		r.fault("cut "+st.Node+"->"+st.Target, "start", false)
	case "mend":
		c.Mend(st.Node, st.Target)
		r.fault("cut "+st.Node+"->"+st.Target, "heal", false)
	case "skew":
		err = c.SetClockOffset(st.Node, st.Offset)
		phase := "start"
		if st.Offset == 0 {
			phase = "heal"
		}
		r.fault("clock skew "+st.Node, phase, false)
	}
	if err != nil {
		r.logf("%s: %v", st, err)
		return
	}
	r.logf("%s", st)
}

// withLiveSeed returns spec, or, when it names seeds and none of them runs, spec with the
// first running node as its seed: what an operator does on reading "no seed answers
// yet". (A node with a ring of its own finds its cluster from it; one with an empty
// disk has only its seeds.)
func (r *runner) withLiveSeed(spec lifecycle.NodeSpec) lifecycle.NodeSpec {
	if len(spec.Seeds) == 0 {
		return spec
	}
	for _, seed := range spec.Seeds {
		if _, err := r.c.Running(seed); err == nil {
			return spec
		}
	}
	for _, id := range r.c.Nodes() {
		if _, err := r.c.Running(id); err == nil && id != spec.ID {
			r.logf("%s: its seeds %v are down; seed %s instead", spec.ID, spec.Seeds, id)
			spec.Seeds = []string{id}
			return spec
		}
	}
	return spec
}

// command starts an operator's ring change in the background, on the node that runs it;
// it ends with that node's process.
func (r *runner) command(st Step) error {
	run, err := r.c.Running(st.Node)
	if err != nil {
		return err
	}
	alive, err := r.c.Alive(st.Node)
	if err != nil {
		return err
	}
	name := st.Do + " " + st.Node
	if st.Do == "remove" {
		name = "remove " + st.Target
	}
	mustRefuse := ""
	if st.Short {
		mustRefuse = fmt.Sprintf("it leaves its DC fewer nodes than keyspace %s places copies there (%s)", keyspace, r.s.Replication)
	}
	cmd := r.startCommand(name, mustRefuse)
	go func() {
		ctx, cancel := context.WithTimeout(alive, commandLimit)
		defer cancel()
		var err error
		if st.Do == "decommission" {
			_, err = run.Decommission(ctx, false) // never forced: a refusal is an outcome like any other
		} else {
			_, err = run.RemoveNode(ctx, st.Target, false)
		}
		outcome := "done"
		if err != nil {
			outcome = "refused or failed: " + err.Error()
		} else if st.Do == "decommission" {
			// The README's next step: stop the process of the node that left.
			if err := r.c.Stop(st.Node); err != nil {
				outcome += "; stop: " + err.Error()
			}
		}
		r.mu.Lock()
		cmd.done, cmd.outcome, cmd.accepted = true, outcome, err == nil
		r.mu.Unlock()
		r.logf("%s: %s", name, outcome)
	}()
	return nil
}

// fault records a fault's start or heal in the history.
func (r *runner) fault(what, phase string, wipe bool) {
	r.rec.Record(nemesis.Event{Type: nemesis.TypeNemesis, Fault: what, Phase: phase, Wipe: wipe})
}

// heal ends every fault: partitions and cuts healed, every node that is down and still a
// member started again with its last command.
func (r *runner) heal() {
	for _, st := range r.s.steps() {
		switch st.Do {
		case "partition":
			r.c.Heal(st.Node, st.Target)
		case "cut":
			r.c.Mend(st.Node, st.Target)
		case "skew":
			r.c.SetClockOffset(st.Node, 0) // a node not running has none
		}
	}
	for _, id := range r.c.Nodes() {
		if _, err := r.c.Running(id); err == nil || r.gone(id) {
			continue
		}
		spec, _ := r.c.Spec(id)
		if err := r.c.StartNode(r.withLiveSeed(spec)); err != nil {
			r.logf("heal: restart %s: %v", id, err)
			continue
		}
		r.revived[id] = true
		r.logf("heal: restarted %s", id)
	}
	if len(r.s.altered()) > 0 {
		// An alter cut short, whose settle failed too (its node died), leaves the keyspace
		// moving: the operator settles it once no alter runs.
		if err := r.alter(Step{Do: "settle"}); err != nil {
			r.logf("heal: settle: %v", err)
		}
	}
	r.logf("healed")
}

// gone reports whether a running node holds id as left or removed: it is no member to
// bring back.
func (r *runner) gone(id string) bool {
	for _, other := range r.c.Nodes() {
		run, err := r.c.Running(other)
		if err != nil {
			continue
		}
		if n, ok := run.View().Node(id); ok && (n.Status == cluster.StatusLeft || n.Status == cluster.StatusRemoved) {
			return true
		}
	}
	return false
}

// plannedMember reports whether the schedule leaves id a member: not replaced, and not
// decommissioned or removed, but for a decommission short of replicas and a ring change
// that has ended refused.
func (r *runner) plannedMember(id string) bool {
	for _, st := range r.s.steps() {
		switch {
		case st.Do == "decommission" && !st.Short && st.Node == id && !r.refused("decommission "+id),
			st.Do == "remove" && st.Target == id && !r.refused("remove "+id),
			st.Do == "start" && st.Spec.Replace == id:
			return false
		}
	}
	return true
}

// refused reports whether the ring change name has ended refused or failed, which
// leaves its node a member.
func (r *runner) refused(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd, ok := r.commands[name]
	return ok && cmd.done && !cmd.accepted
}

// client runs one client until stop: puts (each value unique), gets and deletes of a
// few keys at the schedule's level, through a node it picks at random for each.
func (r *runner) client(id int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(r.s.Seed, uint64(id)))
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		case <-time.After(opInterval):
		}
		nodes := r.c.Nodes()
		via := nodes[rng.IntN(len(nodes))]
		run, err := r.c.Running(via)
		if err != nil {
			continue // the client's node is down: it would not connect
		}
		key := fmt.Sprintf("k%02d", rng.IntN(keys))
		invoke := nemesis.Event{Type: nemesis.TypeInvoke, Client: id, Node: via, Key: key}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		switch p := rng.Float64(); {
		case p < 0.6:
			invoke.F, invoke.Value = nemesis.Put, fmt.Sprintf("c%d-%d", id, seq)
			invoke = r.invoke(invoke)
			ts, err := run.Coordinator().Put(ctx, keyspace, []byte(key), []byte(invoke.Value), 0, r.s.Level)
			r.complete(invoke, err, func(e *nemesis.Event) { e.Timestamp = uint64(ts) })
		case p < 0.67:
			invoke.F = nemesis.Delete
			invoke = r.invoke(invoke)
			ts, err := run.Coordinator().Delete(ctx, keyspace, []byte(key), r.s.Level)
			r.complete(invoke, err, func(e *nemesis.Event) { e.Timestamp = uint64(ts) })
		default:
			invoke.F = nemesis.Get
			invoke = r.invoke(invoke)
			rec, found, err := run.Coordinator().Get(ctx, keyspace, []byte(key), r.s.Level)
			r.complete(invoke, err, func(e *nemesis.Event) {
				e.Found = found && !rec.Tombstone
				if e.Found {
					e.Value, e.Timestamp = string(rec.Value), uint64(rec.Timestamp)
				}
			})
		}
		cancel()
	}
}

// counterClient runs one client until stop: increments (four in five) and serial reads
// of the counters, at the schedule's serial level, through a node it picks at random for
// each (in dc1 at LOCAL_SERIAL, among whose clients alone it is linearizable). Its
// random stream is its own, so the other clients' stay as they were.
func (r *runner) counterClient(id int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(r.s.Seed, uint64(id)))
	for {
		select {
		case <-stop:
			return
		case <-time.After(opInterval):
		}
		nodes := r.counterNodes()
		if len(nodes) == 0 {
			continue
		}
		via := nodes[rng.IntN(len(nodes))]
		run, err := r.c.Running(via)
		if err != nil {
			continue // the client's node is down: it would not connect
		}
		key := fmt.Sprintf("c%d", rng.IntN(counters))
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		if rng.Float64() < 0.8 {
			invoke := r.invoke(nemesis.Event{Type: nemesis.TypeInvoke, Client: id, Node: via, F: nemesis.Incr, Key: key})
			res, err := run.Coordinator().Update(ctx, keyspace, []byte(key), r.s.Serial, nemesis.Increment)
			r.completeIncrement(invoke, res, err)
		} else {
			r.serialRead(ctx, id, via, run.Coordinator(), key)
		}
		cancel()
	}
}

// counterNodes are the nodes a counter client may go through: every node at SERIAL,
// dc1's at LOCAL_SERIAL.
func (r *runner) counterNodes() []string {
	var out []string
	for _, id := range r.c.Nodes() {
		if spec, err := r.c.Spec(id); err == nil && (r.s.Serial == consistency.Serial || spec.DC == r.s.DCs[0]) {
			out = append(out, id)
		}
	}
	return out
}

// completeIncrement records an increment's end (nemesis.IncrementDone).
func (r *runner) completeIncrement(invoke nemesis.Event, res coord.UpdateResult, err error) {
	r.rec.Record(nemesis.IncrementDone(invoke, res, err))
}

// serialRead reads a counter at the schedule's serial level through co and records it;
// it returns the error.
func (r *runner) serialRead(ctx context.Context, client int, via string, co *coord.Coordinator, key string) error {
	invoke := r.invoke(nemesis.Event{Type: nemesis.TypeInvoke, Client: client, Node: via, F: nemesis.Get, Key: key})
	rec, found, err := co.Get(ctx, keyspace, []byte(key), r.s.Serial)
	r.complete(invoke, err, func(e *nemesis.Event) {
		e.Found = found && !rec.Tombstone
		if e.Found {
			e.Value, e.Timestamp = string(rec.Value), uint64(rec.Timestamp)
		}
	})
	return err
}

func (r *runner) invoke(e nemesis.Event) nemesis.Event {
	r.mu.Lock()
	r.opID++
	e.Op = r.opID
	r.mu.Unlock()
	return r.rec.Record(e)
}

// complete records an operation's end: ok, or indeterminate whatever the error (a
// refusal after some replica took the write may still have taken effect).
func (r *runner) complete(invoke nemesis.Event, err error, ok func(*nemesis.Event)) {
	e := nemesis.Event{Type: nemesis.TypeOK, Op: invoke.Op, Client: invoke.Client, Node: invoke.Node, F: invoke.F, Key: invoke.Key}
	if err != nil {
		e.Type, e.Error = nemesis.TypeInfo, err.Error()
	} else {
		ok(&e)
	}
	r.rec.Record(e)
}

// recordMeta writes the history's first line: the level, the replication and the nodes
// the checker's freshness rules need.
func (r *runner) recordMeta() {
	meta := &nemesis.Meta{Seed: int64(r.s.Seed), Keyspace: keyspace, Replication: r.s.Replication, Consistency: r.s.Level.String(), Serial: r.s.Serial.String(),
		Altered: r.s.altered()}
	for _, st := range append(r.s.Nodes, r.startedSpecs()...) {
		meta.Nodes = append(meta.Nodes, st.ID)
		meta.DCs = append(meta.DCs, st.DC)
	}
	r.rec.Record(nemesis.Event{Type: nemesis.TypeMeta, Meta: meta})
}

// startedSpecs are the nodes the actions start.
func (r *runner) startedSpecs() []lifecycle.NodeSpec {
	var out []lifecycle.NodeSpec
	for _, st := range r.s.steps() {
		if st.Do == "start" {
			out = append(out, st.Spec)
		}
	}
	return out
}

// checkLiveness: every ring change ended (done, or refused with a reason; refused when
// short of replicas), every running
// node sees every other as it is, and each is normal: no join, leave or rebuild is stuck.
// A replacement still booting after heal restarted its target is refusing, as it must.
func (r *runner) checkLiveness() {
	r.mu.Lock()
	names := make([]string, 0, len(r.commands))
	for name := range r.commands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		r.res.Outcomes = append(r.res.Outcomes, name+": "+r.commands[name].outcome)
		switch cmd := r.commands[name]; {
		case !cmd.done:
			r.violate("liveness", "%s has run %v and not ended", name, time.Since(cmd.started).Round(time.Second))
		case cmd.mustRefuse != "" && cmd.accepted:
			r.violate("refusal", "%s was accepted, though %s", name, cmd.mustRefuse)
		case cmd.wrong != "":
			r.violate("refusal", "%s: %s", name, cmd.wrong)
		}
	}
	r.mu.Unlock()
	if ok, why := r.c.Converged(); !ok {
		r.violate("convergence", "views differ after healing and %v: %s", r.s.Settle, why)
	}
	r.checkKeyspace()
	for _, id := range r.c.Nodes() {
		run, err := r.c.Running(id)
		if err != nil {
			continue
		}
		st := run.Self().Status
		if spec, _ := r.c.Spec(id); st == cluster.StatusBooting && r.revived[spec.Replace] {
			// Heal brought back the node it was to replace, which no stuck replacement
			// may take over: refusing is the expected outcome.
			r.logf("%s refuses to replace %s, which heal restarted", id, spec.Replace)
			continue
		}
		if st != cluster.StatusNormal && r.plannedMember(id) {
			r.violate("liveness", "%s is %s after healing and %v", id, st, r.s.Settle)
		}
	}
}

// finalReads reads every key at the run's level through every running member: with
// every node up, each must answer, and the checker holds each to the freshness the
// level promises.
func (r *runner) finalReads() {
	for _, id := range r.c.Nodes() {
		run, err := r.c.Running(id)
		if err != nil || run.Self().Status != cluster.StatusNormal {
			continue
		}
		failed := map[string]int{}
		for k := range keys {
			key := fmt.Sprintf("k%02d", k)
			invoke := r.invoke(nemesis.Event{Type: nemesis.TypeInvoke, Node: id, F: nemesis.Get, Key: key})
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			rec, found, err := run.Coordinator().Get(ctx, keyspace, []byte(key), r.s.Level)
			cancel()
			if err != nil {
				failed[firstLine(err)]++
			}
			r.complete(invoke, err, func(e *nemesis.Event) {
				e.Found = found && !rec.Tombstone
				if e.Found {
					e.Value, e.Timestamp = string(rec.Value), uint64(rec.Timestamp)
				}
			})
		}
		for why, n := range failed {
			r.violate("availability", "with every node up, %d reads at %s through %s failed: %s", n, r.s.Level, id, why)
		}
	}
}

// finalCounterReads reads every counter at the serial level through every running member
// a counter client may use: with every node up, each must answer, and the checker holds
// the values to the increments.
func (r *runner) finalCounterReads() {
	for _, id := range r.counterNodes() {
		run, err := r.c.Running(id)
		if err != nil || run.Self().Status != cluster.StatusNormal {
			continue
		}
		failed := map[string]int{}
		for k := range counters {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			if err := r.serialRead(ctx, 0, id, run.Coordinator(), fmt.Sprintf("c%d", k)); err != nil {
				failed[firstLine(err)]++
			}
			cancel()
		}
		for why, n := range failed {
			r.violate("availability", "with every node up, %d counter reads at %s through %s failed: %s", n, r.s.Serial, id, why)
		}
	}
}

// recordFinal writes every running node's own copy of every key, with the replicas it
// places the key on, for the checker.
func (r *runner) recordFinal() {
	for _, w := range r.wiped {
		r.fault(w, "heal", true)
	}
	ctx := context.Background()
	for _, id := range r.c.Nodes() {
		run, err := r.c.Running(id)
		if err != nil {
			continue
		}
		for k := range keys {
			key := fmt.Sprintf("k%02d", k)
			rec, found, err := run.Peek(ctx, keyspace, []byte(key))
			if err != nil || !found {
				continue
			}
			replicas, _ := run.Replicas(ctx, keyspace, []byte(key))
			r.rec.Record(nemesis.Event{Type: nemesis.TypeFinal, Node: id, Key: key, Value: string(rec.Value), Timestamp: uint64(rec.Timestamp),
				Deleted: rec.Tombstone, Replicas: replicas})
		}
	}
}

// checkHistory judges the history with nemesis's checker: nothing acknowledged lost,
// each key's newest version one the history allows, no stale read where the level
// promises freshness, no deleted key back. Replicas that differ are not judged: without
// a repair they may, and reads repair what they touch.
func (r *runner) checkHistory() {
	report := nemesis.Check(r.rec.Events())
	for _, v := range report.Verdicts {
		if v.OK() || !v.Checked || v.Check == "replicas" {
			continue
		}
		reason := v.Summary
		if len(v.Examples) > 0 {
			reason += "; first: " + v.Examples[0]
		}
		r.violate(v.Check, "%s", reason)
	}
	r.res.Events = r.rec.Events()
	r.res.Acknowledged = report.Counts.Acknowledged
	for _, e := range r.res.Events {
		if e.F == nemesis.Incr && e.Type == nemesis.TypeOK {
			r.res.Increments++
		}
	}
	r.res.Operations = report.Counts.Operations
}

func firstLine(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// Shrink looks for the fewest actions of a failing schedule that still fail: it drops
// one action at a time and keeps every drop after which the run still fails. Each try
// is a run; tries bounds them.
func Shrink(s Schedule, tries int) (Schedule, Result) {
	best := Run(s)
	for i := 0; i < len(s.Actions) && tries > 0; {
		candidate := s.without(i)
		tries--
		if res := Run(candidate); len(res.Violations) > 0 {
			s, best = candidate, res
			continue
		}
		i++
	}
	return s, best
}
