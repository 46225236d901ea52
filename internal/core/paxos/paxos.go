// Package paxos owns the rules of kura's lightweight transactions: per-key Paxos among
// the key's replicas, as Cassandra's LWT runs it, or in a keyspace whose transactions run
// per partition, one instance per hash tag whose proposals carry a batch of records. A round is a prepare (promise a
// ballot; learn the proposal in progress, the recent commits and the replica's data), a
// propose (accept a record under the ballot) and a commit (apply the record, last writer
// wins, and end the instance). As in Cassandra's Paxos v2, the client is answered once a
// quorum accepted: the commit follows without being waited for, and a round that finds
// the proposal still accepted and uncommitted completes it before anything else.
//
// The package does no I/O. State is one key's acceptor state with its transitions, which
// local.Local persists; Summarize folds a quorum's promises into what the coordinator
// must do next (complete a proposal left in progress, repair replicas behind on the most
// recent commit, or go on with its own), Promise.Learn lets a coordinator count a commit
// of its own still on its way as arrived, and Summary.Fate tells a coordinator whose
// proposal got no clear answer whether it was committed.
package paxos

import (
	"cmp"
	"slices"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// Ballot orders the rounds on one key. Time comes from the proposing coordinator's hybrid
// logical clock; Node, its id, breaks a tie, so two coordinators never share a ballot.
// The zero Ballot is below every other and means "none".
type Ballot struct {
	Time hlc.Timestamp
	Node string
}

// Compare orders ballots by time, then node id: -1, 0 or +1.
func (b Ballot) Compare(o Ballot) int {
	return cmp.Or(cmp.Compare(b.Time, o.Time), cmp.Compare(b.Node, o.Node))
}

// Less reports whether b is below o.
func (b Ballot) Less(o Ballot) bool { return b.Compare(o) < 0 }

// IsZero reports whether b is the zero ballot (none).
func (b Ballot) IsZero() bool { return b == Ballot{} }

// Max returns the higher of two ballots.
func Max(a, b Ballot) Ballot {
	if a.Less(b) {
		return b
	}
	return a
}

// Proposal is a record proposed under a ballot. Origin is the ballot of the round that
// computed the record: a coordinator that completes another's proposal re-proposes it
// under its own Ballot but keeps its Origin, so that the round that computed it can
// recognise it as its own, committed, when its own answers were lost.
type Proposal struct {
	Ballot Ballot
	Origin Ballot
	Record lww.Record
	// Partition, in a keyspace whose transactions run per partition, names the instance
	// (the hash tag the keys share), and Batch holds the records of every key the
	// transaction writes, applied together; Record is then zero. Nil in a per-key
	// instance, whose instance is Record's key.
	Partition []byte
	Batch     []lww.Record
}

// IsZero reports whether p is no proposal.
func (p Proposal) IsZero() bool { return p.Ballot.IsZero() }

// Records returns the records p writes: its batch, or its one record.
func (p Proposal) Records() []lww.Record {
	if p.Partition != nil {
		return p.Batch
	}
	return []lww.Record{p.Record}
}

// Instance returns the instance p belongs to.
func (p Proposal) Instance() Instance {
	if p.Partition != nil {
		return Instance{Key: p.Partition, Partition: true}
	}
	return Instance{Key: p.Record.Key}
}

// Instance names the Paxos instance a round runs on: one key's, or in a keyspace whose
// transactions run per partition, a partition's, whose rounds read several of its keys.
type Instance struct {
	// Key is the key, or the partition (the hash tag its keys share) when Partition.
	Key       []byte
	Partition bool
	// Reads are the keys a partition instance's prepare reads, each promise answering
	// with the replica's record of each, in this order. A per-key prepare reads Key.
	Reads [][]byte
}

// Commit is a commit as an acceptor remembers it: its ballot and its proposal's origin.
type Commit struct {
	Ballot Ballot
	Origin Ballot
}

// HistoryLen is how many commits an acceptor remembers: the highest-ballot ones. It
// bounds how many later commits a coordinator may meet and still tell whether its own
// unanswered proposal was committed (Summary.Fate). With 16, eight clients racing INCRs
// on one key through three nodes got "outcome unknown" in about one trial in eight
// (kura bench redis-races); with 64, in none of 50. Each entry is two ballots more in
// the state every phase writes and every promise carries.
const HistoryLen = 64

// State is one key's acceptor state on one replica. Every transition must be stored
// durably before its answer leaves the replica: a promise or an acceptance forgotten in a
// crash would let two values be chosen.
type State struct {
	// Promised is the highest ballot promised, accepted or committed: the replica
	// promises no ballot up to it and accepts no proposal below it.
	Promised Ballot
	// Accepted is the proposal accepted and not yet superseded by a commit (zero: none).
	Accepted Proposal
	// Commits are the HistoryLen highest-ballot commits recorded, lowest first.
	Commits []Commit
	// Last, in a partition instance, is the proposal of the most recent commit recorded,
	// whole: a replica the commit did not reach is sent it, since the keys it wrote need
	// not be among those the repairing round read. A per-key round repairs with the
	// newest record it read instead, and leaves Last zero.
	Last Proposal
}

// Committed returns the most recent commit, zero if none.
func (s State) Committed() Commit { return last(s.Commits) }

// Prepare promises b if it is above every ballot promised so far. It returns the next
// state and whether b was promised; a refusal leaves the state as it was, and its
// Promised is the higher ballot that refused b.
func (s State) Prepare(b Ballot) (State, bool) {
	if !s.Promised.Less(b) {
		return s, false
	}
	s.Promised = b
	return s, true
}

// Propose accepts p unless a higher ballot than p's was promised since. It returns the
// next state and whether p was accepted.
func (s State) Propose(p Proposal) (State, bool) {
	if p.Ballot.Less(s.Promised) {
		return s, false
	}
	s.Promised, s.Accepted = p.Ballot, p
	return s, true
}

// Commit records that p was chosen (its record is applied beside, last writer wins). A
// commit ends its instance: the accepted proposal, if no newer than p, is done with, and
// the promise is raised to p's ballot, so that no round below it, which may have read the
// data before this commit reached the replica, gets a promise or an acceptance here. A
// commit already recorded, or older than every one remembered, changes nothing. Of the
// commits of one origin (a proposal committed again by a round that completed it) the
// history keeps the highest. It returns the next state and whether it differs from s.
func (s State) Commit(p Proposal) (State, bool) {
	var changed bool
	s.Commits, changed = remember(s.Commits, Commit{Ballot: p.Ballot, Origin: p.Origin})
	if s.Promised.Less(p.Ballot) {
		s.Promised, changed = p.Ballot, true
	}
	if !s.Accepted.IsZero() && !p.Ballot.Less(s.Accepted.Ballot) {
		s.Accepted, changed = Proposal{}, true
	}
	if p.Partition != nil && s.Last.Ballot.Less(p.Ballot) {
		s.Last, changed = p, true
	}
	return s, changed
}

// Promise is one replica's answer to a prepare.
type Promise struct {
	// Promised: the ballot was promised. When false, Ballot is the higher ballot the
	// replica promised before, and nothing else is set.
	Promised bool
	Ballot   Ballot
	// Accepted and Commits are the replica's acceptor state.
	Accepted Proposal
	Commits  []Commit
	// Record is the replica's data for the key, read after the promise was stored;
	// Found is false when it has none. A commit stores the data before its ballot, so a
	// replica that remembers a commit answers with that commit's record or a newer one:
	// the prepare is also the round's read.
	Record lww.Record
	Found  bool
	// Reads, in a partition instance, are the replica's records of the keys the prepare
	// read, in its order, read after the promise; Last is its State.Last. Record and
	// Found are then unset.
	Reads []Read
	Last  Proposal
}

// Read is a replica's record of one key a partition instance's prepare read; Found is
// false when it has none.
type Read struct {
	Key    []byte
	Record lww.Record
	Found  bool
}

// newer reports whether r is newer than o: found where o is not, or lww.Newer.
func (r Read) newer(o Read) bool { return r.Found && (!o.Found || lww.Newer(r.Record, o.Record)) }

// Learn returns the answer the acceptor would have given had the commit of chosen
// reached it before the prepare. A coordinator that saw chosen accepted by a quorum (so
// chosen, whatever happens next) sends its commit without waiting for it; its next round
// on the key may be answered before that commit arrives, and would otherwise find chosen
// in progress and complete it again, or the replica behind, each costing round trips.
// Commit and Prepare commute (the commit raises no promise above the prepare's, which is
// higher), so this answer is the one the replica gives once the commit lands. A refusal
// is returned as it is.
func (p Promise) Learn(chosen Proposal) Promise {
	if !p.Promised || chosen.IsZero() {
		return p
	}
	s, _ := State{Accepted: p.Accepted, Commits: p.Commits, Last: p.Last}.Commit(chosen)
	p.Accepted, p.Commits, p.Last = s.Accepted, s.Commits, s.Last
	if chosen.Partition == nil {
		if !p.Found || lww.Newer(chosen.Record, p.Record) {
			p.Record, p.Found = chosen.Record, true
		}
		return p
	}
	p.Reads = slices.Clone(p.Reads)
	for i, r := range p.Reads {
		for _, rec := range chosen.Batch {
			if string(rec.Key) == string(r.Key) && (Read{Key: r.Key, Record: rec, Found: true}).newer(r) {
				p.Reads[i] = Read{Key: r.Key, Record: rec, Found: true}
			}
		}
	}
	return p
}

// Summary is what a quorum of promises says.
type Summary struct {
	// InProgress is the highest-ballot proposal accepted above the most recent commit,
	// of an origin not committed yet: a round that may have been chosen and must be
	// completed before any other (zero: none).
	InProgress Proposal
	// Committed is the most recent commit any replica knows of.
	Committed Commit
	// Newest is the newest data record among the answers (lww.Newer), Found whether any
	// replica had one.
	Newest lww.Record
	Found  bool
	// Reads, in a partition instance, are the newest record of each key read among the
	// answers, in the prepare's order; Last is the whole proposal of Committed, from an
	// answer that recorded it (zero if none did, or in a per-key instance).
	Reads []Read
	Last  Proposal
	// Behind lists the indexes of the promises whose most recent commit is older than
	// Committed: replicas a commit did not reach, to repair.
	Behind []int
	// origins are the origins of every commit the replicas remember; recordedFrom is the
	// ballot from which every replica remembers every commit it recorded.
	origins      map[Ballot]bool
	recordedFrom Ballot
}

// Summarize folds promises (all of them promised) into a Summary.
func Summarize(promises []Promise) Summary {
	s := Summary{origins: map[Ballot]bool{}}
	for _, p := range promises {
		if c := last(p.Commits); s.Committed.Ballot.Less(c.Ballot) {
			s.Committed = c
		}
		for _, c := range p.Commits {
			s.origins[c.Origin] = true
		}
		if len(p.Commits) == HistoryLen {
			// A full history may have dropped commits below its lowest.
			s.recordedFrom = Max(s.recordedFrom, p.Commits[0].Ballot)
		}
		if p.Found && (!s.Found || lww.Newer(p.Record, s.Newest)) {
			s.Newest, s.Found = p.Record, true
		}
		if s.Reads == nil && p.Reads != nil {
			s.Reads = make([]Read, len(p.Reads))
		}
		for i, r := range p.Reads {
			if i < len(s.Reads) && (s.Reads[i].Key == nil || r.newer(s.Reads[i])) {
				s.Reads[i] = r
			}
		}
	}
	for i, p := range promises {
		if !p.Last.IsZero() && p.Last.Ballot == s.Committed.Ballot {
			s.Last = p.Last
		}
		// A proposal whose origin was committed already is a round that completed it
		// again, racing that commit: completing it once more would only apply the same
		// record again, and two coordinators could go on completing each other's.
		if s.Committed.Ballot.Less(p.Accepted.Ballot) && s.InProgress.Ballot.Less(p.Accepted.Ballot) && !s.origins[p.Accepted.Origin] {
			s.InProgress = p.Accepted
		}
		if last(p.Commits).Ballot.Less(s.Committed.Ballot) {
			s.Behind = append(s.Behind, i)
		}
	}
	return s
}

// Fate is what a quorum's promises say of a proposal that some acceptors accepted, or
// may have, without the proposer learning that a quorum did.
type Fate int

const (
	// Chosen: a commit of its origin is on record; its write took effect.
	Chosen Fate = iota + 1
	// Open: nothing was committed since its ballot. It may still be completed by a round
	// that finds it in progress; once a round that saw it so gets another proposal
	// chosen, it never will be.
	Open
	// Lost: another proposal was committed since its ballot and it never was, nor can
	// be: a round completes only proposals above the most recent commit.
	Lost
	// Unknown: another proposal was committed since, and the replicas' histories do not
	// reach back far enough to tell whether it was committed before that.
	Unknown
)

// Fate tells what became of the proposal of the given origin and ballot. It rests on a
// rule every coordinator keeps: a round proposes a value of its own only when every
// replica that promised it has recorded the most recent commit (Behind is empty), so
// every commit is in the history of a quorum before the next value is proposed, and any
// quorum meets one replica that remembers it. The one exception is a commit a
// coordinator counts as arrived by Promise.Learn: its origin is a proposal that
// coordinator saw chosen and answered for, which no round asks the fate of.
func (s Summary) Fate(origin, ballot Ballot) Fate {
	switch {
	case s.origins[origin]:
		return Chosen
	case s.Committed.Ballot.Less(ballot):
		return Open
	case !ballot.Less(s.recordedFrom):
		return Lost
	}
	return Unknown
}

// remember returns history with c recorded, and whether that changed it. history itself
// is left as it was: a changed history is a new slice.
func remember(history []Commit, c Commit) ([]Commit, bool) {
	changed := false
	if i := slices.IndexFunc(history, func(h Commit) bool { return h.Origin == c.Origin }); i >= 0 {
		if !history[i].Ballot.Less(c.Ballot) {
			return history, false
		}
		history, changed = slices.Delete(slices.Clone(history), i, i+1), true
	}
	i, found := slices.BinarySearchFunc(history, c, func(a, b Commit) int { return a.Ballot.Compare(b.Ballot) })
	if found || (len(history) == HistoryLen && i == 0) {
		return history, changed
	}
	history = slices.Insert(slices.Clone(history), i, c)
	if len(history) > HistoryLen {
		history = history[1:]
	}
	return history, true
}

// last returns the last commit of a history, zero if none.
func last(commits []Commit) Commit {
	if len(commits) == 0 {
		return Commit{}
	}
	return commits[len(commits)-1]
}
