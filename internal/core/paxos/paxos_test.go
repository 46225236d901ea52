package paxos

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// b is the ballot of node at time t.
func b(t hlc.Timestamp, node string) Ballot { return Ballot{Time: t, Node: node} }

// prop is a proposal of value under ballot, computed by the round origin.
func prop(ballot, origin Ballot, value string) Proposal {
	return Proposal{Ballot: ballot, Origin: origin, Record: lww.Record{Key: []byte("k"), Value: []byte(value), Timestamp: ballot.Time}}
}

func TestBallotOrder(t *testing.T) {
	tests := []struct {
		a, b Ballot
		want int
	}{
		{b(1, "n1"), b(2, "n1"), -1},
		{b(2, "n1"), b(1, "n2"), 1},
		{b(5, "n1"), b(5, "n2"), -1}, // a tie on time: the node id decides
		{b(5, "n2"), b(5, "n2"), 0},
		{Ballot{}, b(1, ""), -1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := tt.a.Less(tt.b); got != (tt.want < 0) {
			t.Errorf("%v.Less(%v) = %v", tt.a, tt.b, got)
		}
	}
	if got := Max(b(3, "a"), b(3, "b")); got != b(3, "b") {
		t.Errorf("Max = %v", got)
	}
}

// step is one acceptor transition and what it must answer.
type step struct {
	op       string // prepare, propose or commit
	ballot   Ballot
	proposal Proposal
	ok       bool // prepare: promised; propose: accepted; commit: changed
}

func TestAcceptor(t *testing.T) {
	p5 := prop(b(5, "x"), b(5, "x"), "five")
	p7 := prop(b(7, "y"), b(7, "y"), "seven")
	p9 := prop(b(9, "z"), b(7, "y"), "seven") // p7 completed by z's round
	tests := []struct {
		name  string
		steps []step
		want  State
	}{
		{"a first prepare is promised", []step{{op: "prepare", ballot: b(5, "x"), ok: true}},
			State{Promised: b(5, "x")}},
		{"a lower or equal ballot is refused", []step{
			{op: "prepare", ballot: b(5, "x"), ok: true},
			{op: "prepare", ballot: b(5, "x"), ok: false},
			{op: "prepare", ballot: b(4, "z"), ok: false},
			{op: "prepare", ballot: b(5, "w"), ok: false}, // same time, lower node
		}, State{Promised: b(5, "x")}},
		{"the promised ballot's proposal is accepted", []step{
			{op: "prepare", ballot: b(5, "x"), ok: true},
			{op: "propose", proposal: p5, ok: true},
		}, State{Promised: b(5, "x"), Accepted: p5}},
		{"a proposal below a later promise is refused", []step{
			{op: "prepare", ballot: b(5, "x"), ok: true},
			{op: "prepare", ballot: b(7, "y"), ok: true},
			{op: "propose", proposal: p5, ok: false},
		}, State{Promised: b(7, "y")}},
		{"a proposal above the promise is accepted, and raises it", []step{
			{op: "prepare", ballot: b(5, "x"), ok: true},
			{op: "propose", proposal: p7, ok: true},
			{op: "prepare", ballot: b(6, "x"), ok: false},
		}, State{Promised: b(7, "y"), Accepted: p7}},
		{"a commit clears its proposal and is remembered", []step{
			{op: "prepare", ballot: b(5, "x"), ok: true},
			{op: "propose", proposal: p5, ok: true},
			{op: "commit", proposal: p5, ok: true},
		}, State{Promised: b(5, "x"), Commits: []Commit{{b(5, "x"), b(5, "x")}}}},
		{"a commit raises the promise, so older rounds get nothing more", []step{
			{op: "prepare", ballot: b(5, "x"), ok: true},
			{op: "commit", proposal: p7, ok: true},
			{op: "propose", proposal: p5, ok: false},
			{op: "prepare", ballot: b(6, "q"), ok: false},
		}, State{Promised: b(7, "y"), Commits: []Commit{{b(7, "y"), b(7, "y")}}}},
		{"an older commit leaves a newer proposal in progress", []step{
			{op: "propose", proposal: p7, ok: true},
			{op: "commit", proposal: p5, ok: true},
		}, State{Promised: b(7, "y"), Accepted: p7, Commits: []Commit{{b(5, "x"), b(5, "x")}}}},
		{"a commit received twice changes nothing the second time", []step{
			{op: "commit", proposal: p5, ok: true},
			{op: "commit", proposal: p5, ok: false},
		}, State{Promised: b(5, "x"), Commits: []Commit{{b(5, "x"), b(5, "x")}}}},
		{"a completion's commit replaces its origin's earlier one", []step{
			{op: "commit", proposal: p7, ok: true},
			{op: "commit", proposal: p9, ok: true},
			{op: "commit", proposal: p7, ok: false},
		}, State{Promised: b(9, "z"), Commits: []Commit{{b(9, "z"), b(7, "y")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s State
			for i, st := range tt.steps {
				var ok bool
				switch st.op {
				case "prepare":
					s, ok = s.Prepare(st.ballot)
				case "propose":
					s, ok = s.Propose(st.proposal)
				case "commit":
					s, ok = s.Commit(st.proposal)
				}
				if ok != st.ok {
					t.Fatalf("step %d (%s): got %v, want %v", i, st.op, ok, st.ok)
				}
			}
			if got, want := fmt.Sprint(s), fmt.Sprint(tt.want); got != want {
				t.Errorf("state = %s\nwant    %s", got, want)
			}
		})
	}
}

func TestHistoryKeepsTheHighestCommits(t *testing.T) {
	var s State
	for i := range HistoryLen + 4 {
		ballot := b(hlc.Timestamp(10+2*i), "n")
		s, _ = s.Commit(prop(ballot, ballot, "v"))
	}
	if len(s.Commits) != HistoryLen || s.Commits[0].Ballot != b(10+2*4, "n") || s.Committed().Ballot != b(10+2*(HistoryLen+3), "n") {
		t.Fatalf("history = %v", s.Commits)
	}
	// A late commit below every one remembered is not remembered, nor recorded twice.
	late := b(11, "n")
	if next, changed := s.Commit(prop(late, late, "v")); changed || !slices.Equal(next.Commits, s.Commits) {
		t.Errorf("a late old commit changed the history: %v", next.Commits)
	}
	// One between them pushes the lowest out.
	between := b(19, "n")
	next, changed := s.Commit(prop(between, between, "v"))
	if !changed || next.Commits[0].Ballot != between || len(next.Commits) != HistoryLen {
		t.Errorf("history after a commit in between = %v", next.Commits)
	}
	if s.Commits[0].Ballot != b(18, "n") {
		t.Errorf("Commit changed the state it was called on: %v", s.Commits)
	}
}

func TestSummarize(t *testing.T) {
	rec := func(value string, ts hlc.Timestamp) lww.Record {
		return lww.Record{Key: []byte("k"), Value: []byte(value), Timestamp: ts}
	}
	c3, c8 := Commit{b(3, "a"), b(3, "a")}, Commit{b(8, "b"), b(6, "c")}
	p7 := prop(b(7, "x"), b(7, "x"), "seven")
	p9 := prop(b(9, "y"), b(2, "z"), "nine")
	tests := []struct {
		name       string
		promises   []Promise
		inProgress Proposal
		committed  Commit
		newest     string
		behind     []int
	}{
		{"nothing yet", []Promise{{Promised: true}, {Promised: true}}, Proposal{}, Commit{}, "", nil},
		{"the newest record wins, tombstones included", []Promise{
			{Promised: true, Found: true, Record: rec("old", 5)},
			{Promised: true, Found: true, Record: rec("new", 6)},
		}, Proposal{}, Commit{}, "new", nil},
		{"a replica behind on the latest commit", []Promise{
			{Promised: true, Commits: []Commit{c3}},
			{Promised: true, Commits: []Commit{c3, c8}},
			{Promised: true},
		}, Proposal{}, c8, "", []int{0, 2}},
		{"a proposal accepted below the latest commit is done with", []Promise{
			{Promised: true, Accepted: p7, Commits: []Commit{c3}},
			{Promised: true, Commits: []Commit{c3, c8}},
		}, Proposal{}, c8, "", []int{0}},
		{"the highest proposal above the latest commit is in progress", []Promise{
			{Promised: true, Accepted: p7, Commits: []Commit{c3}},
			{Promised: true, Accepted: p9, Commits: []Commit{c3, c8}},
			{Promised: true, Commits: []Commit{c3, c8}},
		}, p9, c8, "", []int{0}},
		{"a proposal completed again, racing its commit, is not in progress", []Promise{
			{Promised: true, Accepted: prop(b(9, "y"), b(6, "c"), "six"), Commits: []Commit{c3}},
			{Promised: true, Commits: []Commit{c3, c8}},
		}, Proposal{}, c8, "", []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.promises)
			if fmt.Sprint(s.InProgress) != fmt.Sprint(tt.inProgress) || s.Committed != tt.committed ||
				string(s.Newest.Value) != tt.newest || s.Found != (tt.newest != "") || !slices.Equal(s.Behind, tt.behind) {
				t.Errorf("summary: in progress %v, committed %v, newest %q (found %v), behind %v\nwant %v, %v, %q, %v",
					s.InProgress, s.Committed, s.Newest.Value, s.Found, s.Behind, tt.inProgress, tt.committed, tt.newest, tt.behind)
			}
		})
	}
}

func TestFate(t *testing.T) {
	mine := b(10, "me")
	history := func(first, n int) []Commit { // n commits of other origins from ballot time first, 2 apart
		var out []Commit
		for i := range n {
			ballot := b(hlc.Timestamp(first+2*i), "other")
			out = append(out, Commit{ballot, ballot})
		}
		return out
	}
	completed := Commit{b(12, "other"), mine} // mine, completed by another round
	full := history(11, HistoryLen)
	tests := []struct {
		name     string
		promises []Promise
		want     Fate
	}{
		{"nothing committed at all", []Promise{{Promised: true}, {Promised: true}}, Open},
		{"nothing committed since it", []Promise{{Commits: history(1, 3)}, {Commits: history(1, 4)}}, Open},
		{"committed by a round that completed it, on one replica only", []Promise{
			{Commits: history(1, 3)}, {Commits: append(history(1, 4), completed)}}, Chosen},
		{"another proposal committed since, and all replicas remember back to it", []Promise{
			{Commits: history(1, 8)}, {Commits: history(1, 9)}}, Lost},
		{"a full history reaching back to it", []Promise{{Commits: history(1, 2)}, {Commits: history(9, HistoryLen)}}, Lost},
		{"a full history that starts after it", []Promise{{Commits: history(1, 12)}, {Commits: full}}, Unknown},
		{"a full history that starts after it, yet the commit is remembered elsewhere", []Promise{
			{Commits: append(history(1, 3), completed)}, {Commits: full}}, Chosen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.promises).Fate(mine, mine); got != tt.want {
				t.Errorf("Fate = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLearn(t *testing.T) {
	c3 := Commit{b(3, "a"), b(3, "a")}
	p7 := prop(b(7, "x"), b(7, "x"), "seven") // chosen; its commit is on its way
	p9 := prop(b(9, "y"), b(9, "y"), "nine")  // a later round's, accepted after p7
	p8 := prop(b(8, "z"), b(7, "x"), "seven") // p7 completed by another round
	newer := lww.Record{Key: []byte("k"), Value: []byte("plain"), Timestamp: 20}
	tests := []struct {
		name       string
		promises   []Promise
		inProgress Proposal
		committed  Commit
		newest     string
		behind     []int
	}{
		{"no replica has the commit yet: none is in progress or behind, and p7 is the value", []Promise{
			{Promised: true, Accepted: p7, Commits: []Commit{c3}, Found: true, Record: prop(b(3, "a"), b(3, "a"), "three").Record},
			{Promised: true, Commits: []Commit{c3}}, // p7's acceptance did not reach it
		}, Proposal{}, Commit{p7.Ballot, p7.Origin}, "seven", nil},
		{"one replica has it, the other not yet: none is behind", []Promise{
			{Promised: true, Commits: []Commit{c3, {p7.Ballot, p7.Origin}}, Found: true, Record: p7.Record},
			{Promised: true, Accepted: p7, Commits: []Commit{c3}},
		}, Proposal{}, Commit{p7.Ballot, p7.Origin}, "seven", nil},
		{"a higher proposal accepted since stays in progress", []Promise{
			{Promised: true, Accepted: p9, Commits: []Commit{c3}},
			{Promised: true, Accepted: p7, Commits: []Commit{c3}},
		}, p9, Commit{p7.Ballot, p7.Origin}, "seven", nil},
		{"another round's completion of it is not in progress", []Promise{
			{Promised: true, Accepted: p8, Commits: []Commit{c3}},
			{Promised: true, Accepted: p7, Commits: []Commit{c3}},
		}, Proposal{}, Commit{p7.Ballot, p7.Origin}, "seven", nil},
		{"a newer record on a replica stays the newest", []Promise{
			{Promised: true, Accepted: p7, Commits: []Commit{c3}, Found: true, Record: newer},
			{Promised: true, Accepted: p7, Commits: []Commit{c3}},
		}, Proposal{}, Commit{p7.Ballot, p7.Origin}, "plain", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var learned []Promise
			for _, p := range tt.promises {
				learned = append(learned, p.Learn(p7))
			}
			s := Summarize(learned)
			if fmt.Sprint(s.InProgress) != fmt.Sprint(tt.inProgress) || s.Committed != tt.committed ||
				string(s.Newest.Value) != tt.newest || !slices.Equal(s.Behind, tt.behind) {
				t.Errorf("summary: in progress %v, committed %v, newest %q, behind %v\nwant %v, %v, %q, %v",
					s.InProgress, s.Committed, s.Newest.Value, s.Behind, tt.inProgress, tt.committed, tt.newest, tt.behind)
			}
			if s.Fate(p7.Origin, p7.Ballot) != Chosen {
				t.Errorf("Fate of the learned proposal = %v, want Chosen", s.Fate(p7.Origin, p7.Ballot))
			}
		})
	}
	refused := Promise{Ballot: b(30, "w")}
	if got := refused.Learn(p7); fmt.Sprint(got) != fmt.Sprint(refused) {
		t.Errorf("a refusal learned a commit: %v", got)
	}
}

// TestCrashAfterAcceptQuorum plays the round whose client is answered once a quorum
// accepted, on three acceptors, and whose coordinator dies before its commit reaches
// any of them. Whichever quorum the next round meets, it finds the proposal in progress,
// completes it, and the round after that sees its record and its origin committed.
func TestCrashAfterAcceptQuorum(t *testing.T) {
	p5 := prop(b(5, "x"), b(5, "x"), "v1")
	tests := []struct {
		name     string
		accepted []int // the acceptors p5 reached: a quorum, so the client was answered
		quorum   []int // the acceptors that answer the next round's prepare
	}{
		{"accepted by 0 and 1, next round meets 1 and 2", []int{0, 1}, []int{1, 2}},
		{"accepted by 0 and 1, next round meets 2 and 0", []int{0, 1}, []int{2, 0}},
		{"accepted by 0 and 1, next round meets 0 and 1", []int{0, 1}, []int{0, 1}},
		{"accepted by all, next round meets 2 and 0", []int{0, 1, 2}, []int{2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acceptors := make([]State, 3)
			for i := range acceptors {
				acceptors[i], _ = acceptors[i].Prepare(p5.Ballot)
			}
			for _, i := range tt.accepted {
				var ok bool
				if acceptors[i], ok = acceptors[i].Propose(p5); !ok {
					t.Fatalf("acceptor %d refused %v", i, p5)
				}
			}
			// The coordinator dies here: no commit. The next round, at ballot 9:
			next := b(9, "y")
			var promises []Promise
			for _, i := range tt.quorum {
				var ok bool
				if acceptors[i], ok = acceptors[i].Prepare(next); !ok {
					t.Fatalf("acceptor %d refused %v", i, next)
				}
				promises = append(promises, Promise{Promised: true, Accepted: acceptors[i].Accepted, Commits: acceptors[i].Commits})
			}
			s := Summarize(promises)
			if fmt.Sprint(s.InProgress) != fmt.Sprint(p5) {
				t.Fatalf("in progress = %v, want the acknowledged %v", s.InProgress, p5)
			}
			completion := Proposal{Ballot: next, Origin: s.InProgress.Origin, Record: s.InProgress.Record}
			for _, i := range tt.quorum {
				var ok bool
				if acceptors[i], ok = acceptors[i].Propose(completion); !ok {
					t.Fatalf("acceptor %d refused the completion", i)
				}
				acceptors[i], _ = acceptors[i].Commit(completion)
			}
			// The round after, at ballot 11, meets any two acceptors: the write is there.
			for _, q := range [][]int{{0, 1}, {1, 2}, {2, 0}} {
				var promises []Promise
				for _, i := range q {
					st, ok := acceptors[i].Prepare(b(11, "z"))
					if !ok {
						t.Fatalf("acceptor %d refused ballot 11", i)
					}
					promises = append(promises, Promise{Promised: true, Accepted: st.Accepted, Commits: st.Commits})
				}
				s := Summarize(promises)
				if !s.InProgress.IsZero() {
					t.Errorf("quorum %v: %v still in progress after its completion", q, s.InProgress)
				}
				if got := s.Fate(p5.Origin, p5.Ballot); got != Chosen {
					t.Errorf("quorum %v: fate of the acknowledged proposal = %v, want Chosen", q, got)
				}
			}
		})
	}
}

// batch is a partition's proposal under ballot, computed by origin, writing each key=value
// pair at the ballot's time.
func batch(ballot, origin Ballot, kv ...string) Proposal {
	p := Proposal{Ballot: ballot, Origin: origin, Partition: []byte("tag")}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Batch = append(p.Batch, lww.Record{Key: []byte(kv[i]), Value: []byte(kv[i+1]), Timestamp: ballot.Time})
	}
	return p
}

// read is a promise's read of key: value at ts, or absent when value is "".
func read(key, value string, ts hlc.Timestamp) Read {
	if value == "" {
		return Read{Key: []byte(key)}
	}
	return Read{Key: []byte(key), Record: lww.Record{Key: []byte(key), Value: []byte(value), Timestamp: ts}, Found: true}
}

// describeReads prints reads as key=value@ts, key=- for an absent one.
func describeReads(reads []Read) string {
	var out []string
	for _, r := range reads {
		if !r.Found {
			out = append(out, string(r.Key)+"=-")
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s@%d", r.Key, r.Record.Value, r.Record.Timestamp))
	}
	return fmt.Sprint(out)
}

// TestPartitionCommitKeepsTheLastBatch: a partition's acceptor keeps the most recent
// commit's proposal whole (a replica behind is sent it), an older commit arriving late
// does not replace it, and a key's acceptor keeps none.
func TestPartitionCommitKeepsTheLastBatch(t *testing.T) {
	first, second := batch(b(5, "n1"), b(5, "n1"), "{tag}a", "1", "{tag}b", "1"), batch(b(9, "n2"), b(9, "n2"), "{tag}c", "2")
	var s State
	s, _ = s.Propose(second)
	s, changed := s.Commit(second)
	if !changed || s.Last.Ballot != second.Ballot || len(s.Last.Batch) != 1 || !s.Accepted.IsZero() {
		t.Fatalf("after the commit of %v: %+v", second.Ballot, s)
	}
	s, _ = s.Commit(first)
	if s.Last.Ballot != second.Ballot || len(s.Commits) != 2 {
		t.Fatalf("an older commit replaced the last batch: %+v", s)
	}
	if got := second.Instance(); !got.Partition || string(got.Key) != "tag" || len(second.Records()) != 1 {
		t.Fatalf("instance of a batch = %+v, records %v", got, second.Records())
	}
	var k State
	k, _ = k.Commit(prop(b(5, "n1"), b(5, "n1"), "v"))
	if !k.Last.IsZero() {
		t.Fatalf("a key's acceptor kept %+v as its last batch", k.Last)
	}
}

// TestSummarizePartitionReads: each key read takes the newest record among the promises,
// whichever promise carries it, and the last commit's proposal comes from a promise that
// recorded it.
func TestSummarizePartitionReads(t *testing.T) {
	last := batch(b(7, "n2"), b(7, "n2"), "{tag}a", "x")
	promises := []Promise{
		{Promised: true, Reads: []Read{read("{tag}a", "old", 3), read("{tag}b", "", 0)}, Commits: []Commit{{Ballot: b(2, "n1"), Origin: b(2, "n1")}}},
		{Promised: true, Reads: []Read{read("{tag}a", "x", 7), read("{tag}b", "y", 4)}, Commits: []Commit{{Ballot: last.Ballot, Origin: last.Origin}}, Last: last},
		{Promised: true, Reads: []Read{read("{tag}a", "", 0), read("{tag}b", "z", 5)}},
	}
	s := Summarize(promises)
	if got, want := describeReads(s.Reads), "[{tag}a=x@7 {tag}b=z@5]"; got != want {
		t.Errorf("reads = %s, want %s", got, want)
	}
	if s.Last.Ballot != last.Ballot || s.Committed.Ballot != last.Ballot {
		t.Errorf("last = %v, committed %v; want %v", s.Last.Ballot, s.Committed.Ballot, last.Ballot)
	}
	if !slices.Equal(s.Behind, []int{0, 2}) {
		t.Errorf("behind = %v, want [0 2]", s.Behind)
	}
}

// TestLearnPartitionBatch: a promise read as its acceptor would answer once the commit of
// a batch chosen by this coordinator lands: the keys the batch wrote read its records
// (unless newer ones are there), the others as they were, and the batch is its last.
func TestLearnPartitionBatch(t *testing.T) {
	chosen := batch(b(8, "n1"), b(8, "n1"), "{tag}a", "new", "{tag}c", "c")
	p := Promise{Promised: true, Accepted: chosen, Reads: []Read{read("{tag}a", "old", 3), read("{tag}b", "b", 2), read("{tag}c", "later", 9)}}
	got := p.Learn(chosen)
	if want := "[{tag}a=new@8 {tag}b=b@2 {tag}c=later@9]"; describeReads(got.Reads) != want {
		t.Errorf("learned reads = %s, want %s", describeReads(got.Reads), want)
	}
	if !got.Accepted.IsZero() || got.Last.Ballot != chosen.Ballot {
		t.Errorf("learned promise: accepted %v, last %v; want none accepted, last %v", got.Accepted.Ballot, got.Last.Ballot, chosen.Ballot)
	}
	if describeReads(p.Reads) != "[{tag}a=old@3 {tag}b=b@2 {tag}c=later@9]" {
		t.Errorf("Learn changed the promise it was given: %s", describeReads(p.Reads))
	}
}

// TestInProgressBatchIsWhole: a batch accepted by one acceptor above the last commit is
// the proposal in progress with every record it carries, so that a round completes it
// whole.
func TestInProgressBatchIsWhole(t *testing.T) {
	inProgress := batch(b(9, "n3"), b(9, "n3"), "{tag}a", "1", "{tag}b", "2")
	s := Summarize([]Promise{{Promised: true, Accepted: inProgress}, {Promised: true}})
	if s.InProgress.Ballot != inProgress.Ballot || len(s.InProgress.Records()) != 2 || string(s.InProgress.Partition) != "tag" {
		t.Fatalf("in progress = %+v, want the whole batch", s.InProgress)
	}
}
