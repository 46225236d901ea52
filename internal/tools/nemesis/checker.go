package nemesis

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
)

// Counts are the tallies of a checked history.
type Counts struct {
	// Operations in the history, and how the puts and deletes among them ended.
	Operations    int `json:"operations"`
	Acknowledged  int `json:"acknowledged"`  // puts and deletes that returned ok
	Failed        int `json:"failed"`        // puts and deletes that definitely did not happen
	Indeterminate int `json:"indeterminate"` // puts and deletes that may or may not have happened
	Reads         int `json:"reads"`         // keys observed by acknowledged gets and scans
	Faults        int `json:"faults"`
	// Violations, per check.
	Lost        int `json:"lost"`
	NotNewest   int `json:"not_newest"`
	Stale       int `json:"stale"`
	Impossible  int `json:"impossible"`
	Divergent   int `json:"divergent"`
	Resurrected int `json:"resurrected"`
	Counter     int `json:"counter"` // broken promises of the increments and their reads
}

// Verdict is one check's outcome.
type Verdict struct {
	Check string `json:"check"`
	// Checked is false when the check does not apply to the run (Summary says why).
	Checked    bool     `json:"checked"`
	Violations int      `json:"violations"`
	Summary    string   `json:"summary"`
	Examples   []string `json:"examples,omitempty"` // the first violations, described
}

// OK reports whether the check found nothing wrong.
func (v Verdict) OK() bool { return v.Violations == 0 }

// Report is the checker's answer.
type Report struct {
	Counts   Counts    `json:"counts"`
	Verdicts []Verdict `json:"verdicts"`
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, v := range r.Verdicts {
		if !v.OK() {
			return false
		}
	}
	return true
}

// maxExamples bounds the violations a verdict describes; the count covers them all.
const maxExamples = 10

// notLinearizable is the verdict on linearizability, which kura does not promise.
const notLinearizable = "not checked: the workload's plain reads and writes are last-writer-wins " +
	"on hybrid-logical-clock timestamps, which kura does not promise to be linearizable " +
	"(its lightweight transactions are: the counter check holds the increments to it)"

// Check checks a history, final versions included, against what kura promises. It is
// pure: the same history gives the same report.
func Check(events []Event) Report {
	h := rebuild(events)
	var r Report
	r.Counts.Operations = len(h.ops)
	r.Counts.Reads = len(h.reads)
	r.Counts.Faults = h.faults
	for _, o := range h.ops {
		if o.F != Put && o.F != Delete {
			continue
		}
		switch o.status {
		case TypeOK:
			r.Counts.Acknowledged++
		case TypeFail:
			r.Counts.Failed++
		default:
			r.Counts.Indeterminate++
		}
	}
	r.Verdicts = []Verdict{
		checkLost(h, &r.Counts),
		checkNewest(h, &r.Counts),
		checkReads(h, &r.Counts),
		checkReplicas(h, &r.Counts),
		checkDeletes(h, &r.Counts),
		checkCounters(h, &r.Counts),
		{Check: "linearizable", Summary: notLinearizable},
	}
	return r
}

func newVerdict(check string, checked bool) *Verdict {
	return &Verdict{Check: check, Checked: checked}
}

// violation counts one violation, and describes it while there are few.
func (v *Verdict) violation(format string, args ...any) {
	v.Violations++
	if len(v.Examples) < maxExamples {
		v.Examples = append(v.Examples, fmt.Sprintf(format, args...))
	}
}

// noFinal is the summary of a check that needs the final versions a history lacks.
const noFinal = "not checked: the history has no final versions (the run stopped before reading the replicas)"

// checkLost: every acknowledged put or delete is still there after the run (its value,
// or its tombstone), or superseded: the final version is newer, or a put or delete that
// may have happened has a higher timestamp. A write whose timestamp is unknown (Redis,
// never read back) can only be found lost when no version of its key survives at all;
// tombstones are kept for days, far longer than a run. At a level that acknowledges one
// copy (ANY, ONE, LOCAL_ONE), a write lost after a wipe is counted apart: the wiped disk
// may have held that copy.
func checkLost(h *history, c *Counts) Verdict {
	v := newVerdict("lost", len(h.final) > 0)
	if !v.Checked {
		v.Summary = noFinal
		return *v
	}
	var acked, present, superseded, unknown, wiped int
	for _, o := range h.ops {
		if (o.F != Put && o.F != Delete) || o.status != TypeOK {
			continue
		}
		acked++
		f, ok := h.finalVersion(o.Key)
		switch {
		case ok && holds(f, o):
			present++
		case o.ts != 0 && (ok && lww.Newer(f, o.record()) || h.superseded(o)):
			superseded++
		case o.ts == 0 && ok:
			unknown++
		case h.lostToWipe(o):
			wiped++
		default:
			v.violation("%s acknowledged at %v (op %d) is lost: %s", o, o.ts, o.Op, describe(f, ok))
		}
	}
	c.Lost = v.Violations
	v.Summary = fmt.Sprintf("%d acknowledged puts and deletes: %d present, %d superseded by a newer version, %d with no known timestamp and a surviving version; %d lost",
		acked, present, superseded, unknown, v.Violations)
	if wiped > 0 {
		v.Summary += fmt.Sprintf(" (and %d lost after a wipe, allowed: the level acknowledges one copy)", wiped)
	}
	return *v
}

// holds reports whether a final version is the one o wrote: its value, or a tombstone
// at its timestamp (any tombstone when the timestamp is unknown).
func holds(f lww.Record, o *op) bool {
	if o.F == Put {
		return !f.Tombstone && string(f.Value) == o.Value
	}
	return f.Tombstone && (o.ts == 0 || f.Timestamp == o.ts)
}

// superseded reports whether a put or delete of o's key that may have happened has a
// timestamp above o's.
func (h *history) superseded(o *op) bool {
	for _, w := range h.writes[o.Key] {
		if w != o && w.possible() && w.ts != 0 && lww.Newer(w.record(), o.record()) {
			return true
		}
	}
	return false
}

// checkNewest: each key's final version is one last-writer-wins allows: written by a
// put or delete that may have happened (ok or indeterminate), under the timestamp it
// was acknowledged with, and no older than the newest acknowledged one.
func checkNewest(h *history, c *Counts) Verdict {
	v := newVerdict("final-lww", len(h.final) > 0)
	if !v.Checked {
		v.Summary = noFinal
		return *v
	}
	for _, o := range h.ops {
		if o.F == Put && o.conflict != 0 {
			v.violation("%s: value %q was acknowledged or first seen at %v, and seen at %v too", o.Key, o.Value, o.ts, o.conflict)
		}
	}
	keys := h.keys()
	for _, key := range keys {
		f, ok := h.finalVersion(key)
		newest := h.newestAcknowledged(key)
		switch {
		case ok && !f.Tombstone:
			src := h.puts[string(f.Value)]
			switch {
			case src == nil || src.Key != key:
				v.violation("%s: final value %q at %v was never written to it", key, f.Value, f.Timestamp)
				continue
			case !src.possible():
				v.violation("%s: final value %q at %v comes from a put that failed (op %d: %s)", key, f.Value, f.Timestamp, src.Op, src.Error)
				continue
			}
		case ok:
			if !h.tombstoneFrom(key, f.Timestamp) {
				v.violation("%s: final tombstone at %v comes from no delete that may have happened", key, f.Timestamp)
				continue
			}
		}
		switch {
		case newest == nil, h.lostToWipe(newest):
		case !ok && newest.F == Put:
			v.violation("%s: no version survives; the newest acknowledged is put %s at %v (op %d)", key, newest.Value, newest.ts, newest.Op)
		case ok && lww.Newer(newest.record(), f):
			v.violation("%s: final version %s is older than the acknowledged %s at %v (op %d)", key, describe(f, ok), newest, newest.ts, newest.Op)
		}
	}
	c.NotNewest = v.Violations
	v.Summary = fmt.Sprintf("%d keys: %d whose final version is not one last-writer-wins allows", len(keys), v.Violations)
	return *v
}

// tombstoneFrom reports whether a delete that may have happened could have written a
// tombstone of key at ts: one acknowledged at ts, or one whose timestamp is unknown.
func (h *history) tombstoneFrom(key string, ts hlc.Timestamp) bool {
	for _, w := range h.writes[key] {
		if w.F == Delete && w.possible() && (w.ts == ts || w.ts == 0) {
			return true
		}
	}
	return false
}

// checkReads: no read returns a value that was never written, that comes from a put that
// failed, or from one invoked after the read answered; and, when the level makes read
// and write replica sets overlap (R + W > RF), a read invoked after a put or delete was
// acknowledged returns that version or a newer one. Reads overlapping a wiped disk's
// rebuild are not held to freshness (the wiped node pulls each range from one other
// replica, which may have missed a write); their stale ones are counted apart.
func checkReads(h *history, c *Counts) Verdict {
	fresh, why := h.freshReads()
	v := newVerdict("stale-reads", true)
	var checked, unknown, wiped, wipedStale int
	for _, r := range h.reads {
		if bad := h.impossible(r); bad != "" {
			v.violation("%s", bad)
			c.Impossible++
			continue
		}
		if !fresh.any() {
			continue
		}
		stale, known := h.stale(r, fresh)
		switch {
		case !known:
			unknown++
		case h.inWipe(r.op):
			wiped++
			if stale != "" {
				wipedStale++
			}
		default:
			checked++
			if stale != "" {
				v.violation("%s", stale)
				c.Stale++
			}
		}
	}
	if !fresh.any() {
		v.Summary = fmt.Sprintf("%d key reads (%s: stale reads are allowed, only impossible ones are checked); %d impossible",
			len(h.reads), why, c.Impossible)
		return *v
	}
	v.Summary = fmt.Sprintf("%d key reads (%s): %d checked for freshness, %d with no known timestamp, %d during a wiped node's rebuild (%d of them stale, allowed); %d stale, %d impossible",
		len(h.reads), why, checked, unknown, wiped, wipedStale, c.Stale, c.Impossible)
	return *v
}

// impossible describes what is wrong with a read no cluster may return: a value never
// written to its key, a value of a put that failed, or of one invoked after the read
// answered; "" when the read is possible.
func (h *history) impossible(r read) string {
	if !r.found {
		return ""
	}
	src := h.puts[r.value]
	switch {
	case src == nil || src.Key != r.key:
		return fmt.Sprintf("%s: read %q (op %d), which was never written to it", r.key, r.value, r.op.Op)
	case !src.possible():
		return fmt.Sprintf("%s: read %q (op %d) from a put that failed (op %d: %s)", r.key, r.value, r.op.Op, src.Op, src.Error)
	case src.invoke.After(r.op.complete):
		return fmt.Sprintf("%s: read %q (op %d) before its put was invoked (op %d)", r.key, r.value, r.op.Op, src.Op)
	}
	return ""
}

// stale describes how a read missed a put or delete acknowledged before it was invoked
// that fresh binds it to, "" when it did not; known is false when the version read has
// no known timestamp.
func (h *history) stale(r read, fresh freshness) (stale string, known bool) {
	bound := h.acknowledgedBefore(r.key, r.op, fresh)
	if bound == nil {
		return "", true
	}
	if r.found {
		ts := r.ts
		if ts == 0 {
			ts = h.puts[r.value].ts
		}
		if ts == 0 {
			return "", false
		}
		if lww.Newer(bound.record(), lww.Record{Key: []byte(r.key), Value: []byte(r.value), Timestamp: ts}) {
			return fmt.Sprintf("%s: stale read of %q at %v (op %d), invoked after %s at %v was acknowledged (op %d)",
				r.key, r.value, ts, r.op.Op, bound, bound.ts, bound.Op), true
		}
		return "", true
	}
	if bound.F == Put && !h.deleteCouldHide(r, bound) {
		return fmt.Sprintf("%s: read not found (op %d), invoked after %s at %v was acknowledged (op %d), and no delete could hide it",
			r.key, r.op.Op, bound, bound.ts, bound.Op), true
	}
	return "", true
}

// acknowledgedBefore is the newest put or delete of key, with a known timestamp,
// acknowledged before read o was invoked, that fresh binds o to; nil when there is none.
func (h *history) acknowledgedBefore(key string, o *op, fresh freshness) *op {
	var newest *op
	for _, w := range h.writes[key] {
		if w.status == TypeOK && w.ts != 0 && w.complete.Before(o.invoke) && fresh.binds(o, w) && (newest == nil || lww.Newer(w.record(), newest.record())) {
			newest = w
		}
	}
	return newest
}

// deleteCouldHide reports whether some delete of r's key could explain r not finding
// put p: one that may have happened, invoked before r answered (or at the same instant:
// in virtual time, events of one instant are concurrent), with a timestamp above p's or
// unknown.
func (h *history) deleteCouldHide(r read, p *op) bool {
	for _, w := range h.writes[r.key] {
		if w.F == Delete && w.possible() && !w.invoke.After(r.op.complete) && (w.ts == 0 || lww.Newer(w.record(), p.record())) {
			return true
		}
	}
	return false
}

// freshness says which acknowledged writes a read must return or supersede: those
// coordinated in a DC whose write replicas the read's DC's read replicas always meet
// (R + W > RF, in total or within one DC).
type freshness struct {
	all   bool               // every read overlaps every write, wherever coordinated
	pairs map[[2]string]bool // (the read's coordinator's DC, the write's) that overlap
	dcOf  map[string]string  // node → DC; nil with simple placement, which ignores DCs
}

// any reports whether some reads must be fresh.
func (f freshness) any() bool { return len(f.pairs) > 0 }

// binds reports whether read r must see write w.
func (f freshness) binds(r, w *op) bool {
	return f.all || f.pairs[[2]string{f.dcOf[r.Node], f.dcOf[w.Node]}]
}

// freshReads works out, from the run's level and replication, which reads must overlap
// which writes: every read every write (QUORUM, EACH_QUORUM, ALL), those coordinated in
// the same DC (LOCAL_QUORUM with per-DC replication), or none (ONE); and says which
// levels and replication it judged. With replications an alter may have given the
// keyspace (Meta.Altered), a pair must overlap under each of them: a read may run under
// one and the write it must see under another.
func (h *history) freshReads() (freshness, string) {
	levels, err := h.levelsOn()
	if err != nil {
		return freshness{}, err.Error()
	}
	var f freshness
	var whys []string
	for i, on := range levels {
		fi, why := on.fresh(h.meta)
		whys = append(whys, why)
		if i == 0 {
			f = fi
			continue
		}
		for pair := range f.pairs {
			if !fi.pairs[pair] {
				delete(f.pairs, pair)
			}
		}
		f.all = f.all && fi.all
	}
	return f, strings.Join(whys, "; ")
}

// fresh is freshReads under one replication.
func (on levelOn) fresh(meta *Meta) (freshness, string) {
	level, rf, strategy := on.level, on.rf, on.strategy
	what := fmt.Sprintf("%s on %s", level, strategy)
	if _, perDC := strategy.(ring.DCStrategy); !perDC && (level == consistency.LocalOne || level == consistency.LocalQuorum) {
		// Simple placement puts replicas in any DC: two local levels need not meet.
		return freshness{}, what + ": R + W <= RF"
	}
	f := freshness{pairs: map[[2]string]bool{}}
	if _, perDC := strategy.(ring.DCStrategy); perDC {
		f.dcOf = map[string]string{}
		for i, node := range meta.Nodes {
			if i < len(meta.DCs) {
				f.dcOf[node] = meta.DCs[i]
			}
		}
	}
	coordinators := slices.Sorted(maps.Keys(rf))
	for _, readDC := range coordinators {
		for _, writeDC := range coordinators {
			r, w := level.Require(rf, readDC), level.Require(rf, writeDC)
			if !r.Hinted && !w.Hinted && overlap(r, w, rf, strategy.ReplicationFactor()) {
				f.pairs[[2]string{readDC, writeDC}] = true
			}
		}
	}
	switch len(f.pairs) {
	case 0:
		return f, what + ": R + W <= RF"
	case len(coordinators) * len(coordinators):
		f.all = true
		return f, what + ": R + W > RF"
	}
	return f, what + ": R + W > RF within a DC, so each read is held to the writes coordinated in its own DC"
}

// lostToWipe reports whether a wiped disk may have taken an acknowledged write along: the
// run's level acknowledges a write held by a single node (a replica, or a hint's holder
// at ANY), and a disk was wiped after the acknowledgement. The checks do not count such
// a write's absence against kura.
func (h *history) lostToWipe(o *op) bool {
	return h.wipedAfter(o) && h.oneCopy()
}

// oneCopy reports whether the run's level acknowledges a write held by a single node,
// under any of the run's replications.
func (h *history) oneCopy() bool {
	levels, err := h.levelsOn()
	if err != nil {
		return false
	}
	for _, on := range levels {
		for dc := range on.rf {
			if w := on.level.Require(on.rf, dc); w.Hinted || w.Total <= 1 {
				return true
			}
		}
	}
	return false
}

// levelOn is the run's level on one of its replications; rf counts replicas per DC (""
// for simple placement, which ignores DCs).
type levelOn struct {
	level    consistency.Level
	rf       map[string]int
	strategy ring.Strategy
}

// levelsOn parses the run's level and its replications: the keyspace's first, then
// those an alter may have given it (Meta.Altered).
func (h *history) levelsOn() ([]levelOn, error) {
	if h.meta == nil {
		return nil, errors.New("no meta line: levels unknown")
	}
	level, err := consistency.Parse(h.meta.Consistency)
	if err != nil {
		return nil, err
	}
	var out []levelOn
	for _, replication := range append([]string{h.meta.Replication}, h.meta.Altered...) {
		strategy, err := ring.ParseReplication(replication)
		if err != nil {
			return nil, err
		}
		rf := map[string]int{"": strategy.ReplicationFactor()}
		if dcs, ok := strategy.(ring.DCStrategy); ok {
			rf = dcs.RFPerDC()
		}
		out = append(out, levelOn{level: level, rf: rf, strategy: strategy})
	}
	return out, nil
}

// overlap reports whether any replicas meeting r and any meeting w share one.
func overlap(r, w consistency.Requirement, rf map[string]int, total int) bool {
	if r.Total+w.Total > total {
		return true
	}
	for dc, n := range rf {
		if r.PerDC[dc]+w.PerDC[dc] > n {
			return true
		}
	}
	return false
}

// checkReplicas: after repair every replica of a key stores the same version of it; a
// replica that lacks a version another replica holds diverges.
func checkReplicas(h *history, c *Counts) Verdict {
	v := newVerdict("replicas", len(h.final) > 0)
	if !v.Checked {
		v.Summary = noFinal
		return *v
	}
	scanned := map[string]bool{}
	for _, n := range h.scanned {
		scanned[n] = true
	}
	keys := slices.Sorted(maps.Keys(h.final))
	for _, key := range keys {
		versions := h.final[key]
		replicas := map[string]bool{}
		for _, ver := range versions {
			for _, r := range ver.Replicas {
				replicas[r] = true
			}
		}
		var differ []string
		var first lww.Record
		firstSet, diverges := false, false
		for _, node := range slices.Sorted(maps.Keys(replicas)) {
			if !scanned[node] {
				continue
			}
			ver, ok := versions[node]
			rec := finalRecord(ver)
			differ = append(differ, fmt.Sprintf("%s: %s", node, describe(rec, ok)))
			if !ok {
				diverges = true
				continue
			}
			if firstSet && !sameRecord(rec, first) {
				diverges = true
			}
			first, firstSet = rec, true
		}
		if diverges {
			v.violation("%s diverges: %s", key, strings.Join(differ, "; "))
		}
	}
	c.Divergent = v.Violations
	v.Summary = fmt.Sprintf("%d keys on %d nodes: %d divergent", len(keys), len(h.scanned), v.Violations)
	return *v
}

// checkDeletes: a key whose newest acknowledged operation is a delete is not found after
// the run, unless a put with a higher timestamp that may have happened brought it back.
func checkDeletes(h *history, c *Counts) Verdict {
	v := newVerdict("resurrection", len(h.final) > 0)
	if !v.Checked {
		v.Summary = noFinal
		return *v
	}
	deletedLast := 0
	for _, key := range h.keys() {
		newest := h.newestAcknowledged(key)
		if newest == nil || newest.F != Delete || h.lostToWipe(newest) {
			continue
		}
		deletedLast++
		f, ok := h.finalVersion(key)
		if ok && !f.Tombstone && lww.Newer(newest.record(), f) {
			v.violation("%s: deleted at %v (op %d), yet %q at %v came back", key, newest.ts, newest.Op, f.Value, f.Timestamp)
		}
	}
	c.Resurrected = v.Violations
	v.Summary = fmt.Sprintf("%d keys deleted last: %d resurrected", deletedLast, v.Violations)
	return *v
}

// keys returns every key the history writes or the final versions hold, sorted.
func (h *history) keys() []string {
	seen := map[string]bool{}
	for k := range h.writes {
		seen[k] = true
	}
	for k := range h.final {
		seen[k] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

func sameRecord(a, b lww.Record) bool {
	return a.Timestamp == b.Timestamp && a.Tombstone == b.Tombstone && string(a.Value) == string(b.Value)
}

// describe words a final version for a violation.
func describe(rec lww.Record, ok bool) string {
	switch {
	case !ok:
		return "no version"
	case rec.Tombstone:
		return fmt.Sprintf("tombstone at %v", rec.Timestamp)
	}
	return fmt.Sprintf("%q at %v", rec.Value, rec.Timestamp)
}

// Print writes the report: the tallies, then one line per check, with examples of
// violations.
func (r Report) Print(w io.Writer) {
	c := r.Counts
	fmt.Fprintf(w, "history: %d operations, %d faults; puts and deletes: %d acknowledged, %d failed, %d indeterminate; %d key reads\n",
		c.Operations, c.Faults, c.Acknowledged, c.Failed, c.Indeterminate, c.Reads)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range r.Verdicts {
		word := "PASS"
		switch {
		case !v.OK():
			word = "FAIL"
		case !v.Checked:
			word = "N/A"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", word, v.Check, v.Summary)
	}
	tw.Flush()
	for _, v := range r.Verdicts {
		for _, ex := range v.Examples {
			fmt.Fprintf(w, "  %s: %s\n", v.Check, ex)
		}
		if v.Violations > len(v.Examples) {
			fmt.Fprintf(w, "  %s: ... and %d more\n", v.Check, v.Violations-len(v.Examples))
		}
	}
	if r.OK() {
		fmt.Fprintln(w, "verdict: no violation")
	} else {
		fmt.Fprintln(w, "verdict: VIOLATIONS FOUND")
	}
}
