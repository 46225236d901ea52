package explore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/service/rebalance"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// alterWindow is how long a change of replication may keep the keyspace moving: its
// ring delays and copy or, cut short, until the settle after it has run. A node that
// starts meanwhile waits to join.
const alterWindow = 90 * time.Second

// settleAfter is when, after an alter, the operator looks whether it left the keyspace
// moving, and settles it once no alter runs.
const settleAfter = 40 * time.Second

// drawAlters draws none, one or two changes of the keyspace's replication at random
// times in the chaos, each followed by a settle: raising or lowering a DC's copies,
// adding a DC or dropping one, within what the DCs' first nodes hold then and keeping
// every leave drawn (drawn) as the rule judges it; one in ten asks a DC for more copies
// than it has nodes, to be refused.
func (p *plan) drawAlters(chaos time.Duration, drawn []Action) []Action {
	var times []time.Duration
	for range []int{0, 0, 0, 1, 1, 2}[p.alters.IntN(6)] {
		times = append(times, time.Duration(p.alters.Int64N(int64(chaos*2/3)))+chaos/10)
	}
	slices.Sort(times)
	var out []Action
	for _, at := range times {
		via := p.seedFor()
		if p.alters.IntN(10) == 0 {
			dc := p.dcs[p.alters.IntN(len(p.dcs))]
			rf := maps.Clone(p.current(at))
			rf[dc] = p.started(dc, at) + 1
			out = append(out, Action{Name: "alter short of nodes", Steps: []Step{{At: at, Do: "alter", Node: via, Replication: p.replicationOf(rf), Short: true}}})
			continue
		}
		rf, ok := p.drawReplication(at, drawn)
		if !ok {
			continue
		}
		out = append(out, Action{Name: "alter", Steps: []Step{
			{At: at, Do: "alter", Node: via, Replication: p.replicationOf(rf)},
			{At: at + settleAfter, Do: "settle", Node: via}}})
	}
	return out
}

// drawReplication draws a replication the keyspace may change to at time at and plans
// it, or reports false when no change keeps the actions drawn as the rule judges them.
// It counts only the DCs' first nodes still members then: a node that joined may still
// wait for an earlier move, and an alter asking more copies than a DC has normal nodes
// is refused.
func (p *plan) drawReplication(at time.Duration, drawn []Action) (map[string]int, bool) {
	cur := p.current(at)
	can := map[string]int{}
	for id, dc := range p.dcOf {
		if p.from[id] == 0 && p.surely(id, at) {
			can[dc]++
		}
	}
	withCopies := 0
	for _, n := range cur {
		if n > 0 {
			withCopies++
		}
	}
	var options []map[string]int
	option := func(dc string, n int) {
		rf := maps.Clone(cur)
		rf[dc] = n
		options = append(options, rf)
	}
	for _, dc := range p.dcs {
		most := min(3, can[dc])
		switch n := cur[dc]; {
		case n == 0 && most > 0: // add a DC
			option(dc, 1+p.alters.IntN(most))
		case n > 0:
			if n < most { // raise
				option(dc, n+1+p.alters.IntN(most-n))
			}
			if n > 1 { // lower
				option(dc, 1+p.alters.IntN(n-1))
			}
			// Drop a DC, unless the workload keeps to its coordinator's DC: a DC without
			// copies has no local replicas to answer it.
			if withCopies > 1 && !p.local {
				option(dc, 0)
			}
		}
	}
	p.alters.Shuffle(len(options), func(i, j int) { options[i], options[j] = options[j], options[i] })
	for _, rf := range options {
		p.altered = append(p.altered, alteration{at: at, rf: rf})
		if p.keeps() && p.shortsHold(drawn) {
			return rf, true
		}
		p.altered = p.altered[:len(p.altered)-1]
	}
	return nil, false
}

// current is the replication planned for time at: the last alter planned by then, or
// the first.
func (p *plan) current(at time.Duration) map[string]int {
	rf := p.rf
	for _, a := range p.altered {
		if a.at <= at {
			rf = a.rf
		}
	}
	return rf
}

// shortsHold reports whether every decommission drawn short of replicas is still short.
func (p *plan) shortsHold(drawn []Action) bool {
	for _, a := range drawn {
		if st := a.Steps[0]; st.Do == "decommission" && st.Short && !p.shortAt(st.Node, st.At) {
			return false
		}
	}
	return true
}

// started counts the nodes of dc started by time at, gone or not.
func (p *plan) started(dc string, at time.Duration) int {
	n := 0
	for id, other := range p.dcOf {
		if other == dc && p.from[id] <= at {
			n++
		}
	}
	return n
}

// replicationOf is kura keyspace alter's --replication for rf: every DC of the
// cluster, one without copies as 0.
func (p *plan) replicationOf(rf map[string]int) string {
	var parts []string
	for _, dc := range p.dcs {
		parts = append(parts, fmt.Sprintf("%s=%d", dc, rf[dc]))
	}
	return strings.Join(parts, ",")
}

// placed is replication as the keyspace holds it: the DCs without copies left out.
func placed(replication string) string {
	var kept []string
	for _, part := range strings.Split(replication, ",") {
		if !strings.HasSuffix(part, "=0") {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, ",")
}

// altered are the replications the schedule's alters may give the keyspace, those
// short of nodes left out.
func (s Schedule) altered() []string {
	var out []string
	for _, st := range s.steps() {
		if st.Do == "alter" && !st.Short {
			out = append(out, placed(st.Replication))
		}
	}
	return out
}

// alter starts kura keyspace alter (or, for a settle step, --settle) in the background
// through st.Node, or through the first running node when it is down, as an operator
// would; it ends with that node's process.
func (r *runner) alter(st Step) error {
	id := st.Node
	if _, err := r.c.Running(id); err != nil {
		if id = r.firstRunning(); id == "" {
			return err
		}
	}
	run, err := r.c.Running(id)
	if err != nil {
		return err
	}
	alive, err := r.c.Alive(id)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("settle %s through %s at %v", keyspace, id, st.At)
	if st.At == 0 {
		name = fmt.Sprintf("settle %s through %s when healing", keyspace, id)
	}
	if st.Do == "alter" {
		name = fmt.Sprintf("alter %s to %s through %s at %v", keyspace, st.Replication, id, st.At)
	}
	mustRefuse := ""
	if st.Short {
		mustRefuse = "it asks more copies of a DC than the DC has nodes"
	}
	cmd := r.startCommand(name, mustRefuse)
	go func() {
		ctx, cancel := context.WithTimeout(alive, commandLimit)
		defer cancel()
		report := func(p rebalance.Progress) { r.logf("%s: %s", name, p.Step) }
		var outcome string
		var err error
		if st.Do == "alter" {
			outcome, err = r.runAlter(ctx, run, name, cmd, st, report)
		} else {
			outcome, err = r.runSettle(ctx, run, report)
		}
		r.mu.Lock()
		cmd.done, cmd.outcome, cmd.accepted = true, outcome, err == nil
		r.mu.Unlock()
		r.logf("%s: %s", name, outcome)
	}()
	return nil
}

// runAlter runs kura keyspace alter and judges its refusal: one short of nodes must
// change nothing; one the plan counted nodes for may be refused only for what holds at
// that moment (a ring change, a node down, a member not yet announcing, another move,
// the replication it asks being the one the keyspace has after an earlier alter was
// refused), or cut short by a fault, which leaves the keyspace moving for the settle. A
// refusal it judges wrong it records in cmd, for checkLiveness.
func (r *runner) runAlter(ctx context.Context, run *node.Node, name string, cmd *command, st Step, report func(rebalance.Progress)) (string, error) {
	before, _ := run.Keyspace(keyspace)
	err := run.AlterKeyspace(ctx, keyspace, st.Replication, false, report)
	if err == nil {
		after, _ := run.Keyspace(keyspace)
		return "accepted: replication " + after.Replication, nil
	}
	outcome := "refused or failed: " + err.Error()
	after, aerr := run.Keyspace(keyspace)
	var wrong string
	switch {
	case st.Short && (aerr != nil || after.Replication != before.Replication || after.Moving != before.Moving) && !r.othersRun(name, "alter ", "settle "):
		wrong = fmt.Sprintf("it was refused, yet changed the keyspace: replication %s, moving %v before; %s, moving %v after (%v)",
			before.Replication, before.Moving, after.Replication, after.Moving, aerr)
	case !st.Short && errors.Is(err, coord.ErrInvalidArgument) && !strings.Contains(err.Error(), "is moving"):
		wrong = "it was refused, though within the nodes the plan counts in each DC then: " + err.Error()
	}
	r.mu.Lock()
	cmd.wrong = wrong
	r.mu.Unlock()
	return outcome, err
}

// runSettle runs kura keyspace alter --settle once no alter runs, if the keyspace is
// moving; while a ring change is in progress, which it refuses, it asks again every
// few seconds, as an operator would.
func (r *runner) runSettle(ctx context.Context, run *node.Node, report func(rebalance.Progress)) (string, error) {
	for r.othersRun("", "alter ") {
		if !sleep(ctx, time.Second) {
			return "gave up waiting for the alters to end", ctx.Err()
		}
	}
	for {
		ks, err := run.Keyspace(keyspace)
		switch {
		case err != nil:
			return "failed: " + err.Error(), err
		case !ks.Moving:
			return keyspace + " is not moving: nothing to settle", nil
		}
		err = run.AlterKeyspace(ctx, keyspace, "", true, report)
		if err == nil {
			return "settled", nil
		}
		if !errors.Is(err, ringchange.ErrBadMove) || !sleep(ctx, 5*time.Second) {
			return "failed: " + err.Error(), err
		}
	}
}

// sleep waits d, or reports false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// othersRun reports whether a command other than self whose name starts with one of
// prefixes is still running.
func (r *runner) othersRun(self string, prefixes ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, cmd := range r.commands {
		if name == self || cmd.done {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	return false
}

// firstRunning returns the first running node that is normal in its own view, or "".
func (r *runner) firstRunning() string {
	for _, id := range r.c.Nodes() {
		if run, err := r.c.Running(id); err == nil && run.Self().Status == cluster.StatusNormal {
			return id
		}
	}
	return ""
}

// checkKeyspace: once healed and settled, the keyspace moves on no node, and every
// running node holds the same replication.
func (r *runner) checkKeyspace() {
	replications := map[string][]string{}
	for _, id := range r.c.Nodes() {
		run, err := r.c.Running(id)
		if err != nil {
			continue
		}
		ks, err := run.Keyspace(keyspace)
		switch {
		case err != nil:
			r.violate("liveness", "%s cannot tell keyspace %s's definition: %v", id, keyspace, err)
		case ks.Moving:
			r.violate("liveness", "keyspace %s is still moving on %s (to %s) after healing and %v", keyspace, id, ks.NextReplication, r.s.Settle)
		default:
			replications[ks.Replication] = append(replications[ks.Replication], id)
		}
	}
	if len(replications) > 1 {
		r.violate("convergence", "the nodes hold keyspace %s with different replications: %v", keyspace, replications)
	}
}
