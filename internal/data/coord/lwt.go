package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
)

// Lightweight transactions: a linearizable read-modify-write of one key, by Paxos among
// the key's replicas as Cassandra's LWT (Paxos v2) runs it, with the read folded into the
// prepare and the commit not waited for. A round that meets no other takes two round
// trips to a quorum of acceptors:
//
//   - prepare: each acceptor promises the ballot and answers with the proposal it
//     accepted and did not see committed, its most recent commit, and its record of the
//     key. A proposal left in progress by an interrupted round is completed first, under
//     this round's ballot, and the round starts over; replicas behind on the most recent
//     commit are sent it.
//   - propose: fn computes the next record from the newest one the promises carried, and
//     the acceptors accept it unless they promised a higher ballot since.
//   - once the requirement's acceptors accepted, the record is chosen and the client is
//     answered; the commit follows in the background: every replica applies the record
//     (last writer wins) and ends the round, the replicas that are down get a hint, as
//     for a write. Until a quorum has it, a round that finds the proposal accepted and
//     uncommitted completes it first, so nothing acknowledged is lost; this
//     coordinator's own next round on the key counts it as arrived (paxos.Promise.Learn)
//     instead of paying for that.
//
// A round refused for a higher ballot backs off for a random time below a ceiling that
// doubles with each lost round, then tries again with a higher ballot. A proposal of its
// own that got no clear answer is followed through the acceptors' commit histories
// (paxos.Summary.Fate), so a transaction tells "applied" from "not applied" where
// Cassandra answers a timeout. docs/lwt.md tells the whole story.

// UpdateFunc computes a key's next record from its current one. current is the key's
// live record: zero, with found false, when the key is absent, deleted or expired. It
// returns the record to write (Value, Tombstone, ExpiresAt, Type: the coordinator sets Key
// and Timestamp) and whether to write at all. It runs once per round that gets that far,
// possibly more than once, so it must be pure.
type UpdateFunc func(current lww.Record, found bool) (next lww.Record, write bool, err error)

// UpdateResult is what a lightweight transaction found and did.
type UpdateResult struct {
	// Applied is true when fn asked for a write and the write was chosen: every serial
	// read sees it from then on, and plain reads once its commit, sent after, reached
	// their replicas.
	Applied bool
	// Previous is the live record fn was given in the deciding round, PreviousFound
	// whether there was one: the value the write replaced, or the one that made fn
	// decline.
	Previous      lww.Record
	PreviousFound bool
	// Record is the record written when Applied, with the timestamp it was given.
	Record lww.Record
}

// Update runs a linearizable read-modify-write of key at serial level SERIAL or
// LOCAL_SERIAL: fn sees the key's current live record and returns the next one, which is
// written only if no other write of a lightweight transaction on the key came between.
// The written record's timestamp is above the replaced record's, so a plain write stamped
// by a clock slightly ahead does not make it lose. Plain writes mixed with lightweight
// transactions on one key, and SERIAL mixed with LOCAL_SERIAL, are not linearizable. In a
// keyspace whose transactions run per partition it is a batch of one on the partition's
// instance, so that it is serialized with every transaction over the key's hash tag: for
// an element record of a keyspace of schema.Keyspace.CollectionInstances, its collection
// key's (schema.Keyspace.TransactionPartition), so that a pop and a transaction over the
// collection are serialized whatever the collection key's tag.
func (c *Coordinator) Update(ctx context.Context, keyspace string, key []byte, serial consistency.Level, fn UpdateFunc) (UpdateResult, error) {
	if fn == nil {
		return UpdateResult{}, invalid("no update function")
	}
	l, err := c.newLWT(ctx, keyspace, [][]byte{key}, serial)
	if err != nil {
		return UpdateResult{}, err
	}
	res, err := l.run(ctx, func(_ hlc.Timestamp, cur []KeyRecord) ([]lww.Record, bool, any, error) {
		next, write, err := fn(cur[0].Record, cur[0].Found)
		next.Key = key
		return []lww.Record{next}, write, nil, err
	})
	if err != nil {
		return UpdateResult{}, err
	}
	out := UpdateResult{Applied: res.Applied, Previous: res.Previous[0].Record, PreviousFound: res.Previous[0].Found}
	if res.Applied {
		out.Record = res.Records[0]
	}
	return out, nil
}

// KeyRecord is one key's live record as a transaction over several keys finds it: zero,
// with Found false, when the key is absent, deleted or expired.
type KeyRecord struct {
	Key    []byte
	Record lww.Record
	Found  bool
	// Ended, when not Found, is the timestamp of the key's last version (a tombstone, or
	// a record whose expiry passed): the end of its previous life, Collection.Ended.
	Ended hlc.Timestamp
	// Reset and Elements, for a key the transaction reads as a collection (UpdateBatch's
	// collections), are its reset point and its live element records newer than it, in
	// key order (Collection's), read by the round after its promises; empty unless Found
	// with a collection's type.
	Reset    hlc.Timestamp
	Elements []lww.Record
}

// BatchFunc computes the writes of a transaction over several keys of one partition from
// their current records, given in the order of the keys the transaction reads. at is the
// timestamp the round's records get, above every record it read (so a collection write
// can name its element tags and reset points). It returns the records to write, each
// naming its Key: one of the keys read, an element record of a key read as a collection,
// or the reset record of a key read (element.Reset kind, stamped with the point it holds,
// at most at: coord.ResetRecord); whether to write at all; and a value of its own that
// BatchResult.Reply gives back from the round that decided (what a client is answered:
// Redis's EXEC replies). The coordinator stamps the other records at at. It runs once per
// round that gets that far, possibly more than once, so it must be pure.
type BatchFunc func(at hlc.Timestamp, current []KeyRecord) (next []lww.Record, write bool, reply any, err error)

// BatchResult is what a transaction over several keys found and did.
type BatchResult struct {
	// Applied is true when fn asked for writes and they were chosen, together.
	Applied bool
	// Previous are the live records fn was given in the deciding round, one per key read.
	Previous []KeyRecord
	// Records are the records written when Applied, with the timestamp they were given.
	Records []lww.Record
	// Reply is what fn returned in the round that decided: the one whose writes were
	// chosen, which need not be the last fn ran, or the one that declined to write.
	Reply any
}

// UpdateBatch runs a linearizable read-modify-write of several keys of one partition
// (keys sharing a hash tag) as one lightweight transaction: fn sees each key's current
// live record and returns the records to write, which are chosen together on the
// partition's Paxos instance and applied in one batch on each replica. Keys named twice
// are read once. A keyspace whose transactions run per key takes only one key; keys of
// different tags are refused (invalid argument), as is a keyspace whose transactions run
// per key given more than one.
//
// collections are the keys among keys that fn reads as collections (KeyRecord.Elements):
// each round reads their element records at the serial level's commit quorum once its
// promises are in, which every commit of the instance reached (a promiser behind on one
// is repaired first), so fn sees the partition's records as the instance's last commit
// left them. A transaction with collections runs on its partition's instance even in a
// keyspace whose transactions run per key (with one key only, as there): only a
// partition's proposal carries a batch of records and repairs a replica behind on it
// whole.
func (c *Coordinator) UpdateBatch(ctx context.Context, keyspace string, keys, collections [][]byte, serial consistency.Level, fn BatchFunc) (BatchResult, error) {
	if fn == nil {
		return BatchResult{}, invalid("no update function")
	}
	l, err := c.newBatchLWT(ctx, keyspace, keys, collections, serial)
	if err != nil {
		return BatchResult{}, err
	}
	return l.run(ctx, fn)
}

// newBatchLWT is newLWT for UpdateBatch: its keys once each, and its collections, which
// put the transaction on its partition's instance in any keyspace.
func (c *Coordinator) newBatchLWT(ctx context.Context, keyspace string, keys, collections [][]byte, serial consistency.Level) (*lwt, error) {
	var distinct [][]byte
	for _, k := range keys {
		if !slices.ContainsFunc(distinct, func(d []byte) bool { return bytes.Equal(d, k) }) {
			distinct = append(distinct, k)
		}
	}
	for _, k := range collections {
		if !slices.ContainsFunc(distinct, func(d []byte) bool { return bytes.Equal(d, k) }) {
			return nil, invalid("collection %q is not among the transaction's keys", k)
		}
		if _, err := c.collectionKeyspace(keyspace, k); err != nil {
			return nil, err
		}
	}
	l, err := c.newLWT(ctx, keyspace, distinct, serial)
	if err != nil {
		return nil, err
	}
	if len(collections) > 0 && l.partition == nil {
		l.partition = l.ks.TransactionPartition(distinct[0])
		l.id = inflightPartition(keyspace, l.partition)
	}
	l.collections = collections
	return l, nil
}

// serialGet is a linearizable read: a prepare round, completing any proposal left in
// progress, whose promises carry the newest record.
func (c *Coordinator) serialGet(ctx context.Context, keyspace string, key []byte, serial consistency.Level) (lww.Record, bool, error) {
	l, err := c.newLWT(ctx, keyspace, [][]byte{key}, serial)
	if err != nil {
		return lww.Record{}, false, err
	}
	res, err := l.run(ctx, nil)
	if err != nil {
		return lww.Record{}, false, err
	}
	return res.Previous[0].Record, res.Previous[0].Found, nil
}

// lwt is one lightweight transaction on one Paxos instance, a key's or a partition's: the
// keys it reads, their replicas, the acceptors its Paxos phases ask, and the levels they
// wait for.
type lwt struct {
	c        *Coordinator
	ks       schema.Keyspace
	keyspace string
	// keys are the keys the transaction reads; a per-key instance has one.
	keys [][]byte
	// collections are the keys among keys whose element records each round reads.
	collections [][]byte
	// partition is the partition (hash tag) whose instance the transaction runs on, nil
	// for a per-key instance.
	partition []byte
	// id names the instance in lwtKeys and lwtCommits.
	id     string
	serial consistency.Level
	// commit is the level the commit waits for.
	commit consistency.Level
	// members are every replica of the keys, pending ones included: the commit goes to all.
	members []placement.Member
	// acceptors are the replicas the Paxos phases ask, and required what each phase
	// waits for from them.
	acceptors []placement.Member
	required  consistency.Requirement
}

// newLWT checks a lightweight transaction's request and finds its acceptors; it fails
// with unavailable when they cannot meet the serial level.
func (c *Coordinator) newLWT(ctx context.Context, keyspace string, keys [][]byte, serial consistency.Level) (*lwt, error) {
	if err := c.member(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, invalid("a lightweight transaction names no key")
	}
	for _, key := range keys {
		if err := c.checkKey(key); err != nil {
			return nil, err
		}
	}
	if !serial.IsSerial() {
		return nil, invalid("a lightweight transaction runs at SERIAL or LOCAL_SERIAL, not %v", serial)
	}
	if c.transactionsReady != nil {
		// Before the definition is read: once ready, the definition no longer changes
		// but by an operator's, so the one read below is the one every node runs on.
		if err := c.transactionsReady(keyspace); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	ks, err := c.keyspaces.Get(keyspace)
	if err != nil {
		return nil, err
	}
	if ks.Erasure.Enabled() {
		return nil, invalid("keyspace %s is erasure-coded: a value has no replicas to run Paxos among, so it takes no lightweight transaction", keyspace)
	}
	l := &lwt{c: c, ks: ks, keyspace: keyspace, keys: keys, serial: serial, commit: serial.Commit(), id: inflightKey(keyspace, keys[0])}
	switch {
	case ks.PartitionTransactions():
		l.partition = ks.TransactionPartition(keys[0])
		for _, key := range keys[1:] {
			if !bytes.Equal(ks.TransactionPartition(key), l.partition) {
				return nil, invalid("keys %q and %q have different hash tags: a transaction covers the keys of one partition", keys[0], key)
			}
		}
		l.id = inflightPartition(keyspace, l.partition)
	case len(keys) > 1:
		return nil, invalid("keyspace %s runs its lightweight transactions per key: a transaction over several keys needs a keyspace created with transactions %s", keyspace, schema.TransactionsPartition)
	}
	// The keys of a partition share a token, so the first key's replicas are all of them.
	members, err := c.replicaSet(ctx, ks, keys[0], nil)
	if err != nil {
		return nil, err
	}
	self := c.view.Self()
	l.members = members
	l.required = withPending(serial.Require(countedPerDC(members), self.DC), members)
	alive := map[string]int{}
	for _, m := range members {
		// A rebuilding replica is no acceptor: it lost its promises with its data. A
		// pending one is, and the requirement was raised for it, so that a quorum of the
		// current replicas answers in every phase whichever of them answer (Cassandra's
		// rule).
		if (m.Reads() || m.Receives()) && (serial == consistency.Serial || m.DC == self.DC) {
			l.acceptors = append(l.acceptors, m)
			alive[m.DC]++
		}
	}
	if !l.required.Satisfied(alive) {
		return nil, &UnavailableError{Level: serial, Required: l.required, Alive: alive}
	}
	return l, nil
}

// instance is the Paxos instance the transaction runs on, with the keys its prepare reads.
func (l *lwt) instance() paxos.Instance {
	if l.partition == nil {
		return paxos.Instance{Key: l.keys[0]}
	}
	return paxos.Instance{Key: l.partition, Partition: true, Reads: l.keys}
}

// pendingProposal is a proposal of this transaction that some acceptors accepted, or may
// have, with no quorum known to: a later round may yet complete it.
type pendingProposal struct {
	proposal paxos.Proposal
	result   BatchResult
	// dead: known never to be committed.
	dead bool
}

// run runs rounds until one decides: with fn, the transaction; without, a serial read.
func (l *lwt) run(ctx context.Context, fn BatchFunc) (BatchResult, error) {
	unlock, err := l.c.lwtKeys.lock(ctx, l.id)
	if err != nil {
		return BatchResult{}, err
	}
	defer unlock()
	// Its ballots stamp the records it commits: a cluster snapshot holds it as a write
	// (writeGate) until its commit is answered, which a chosen write's commit, sent in the
	// background, takes over. Entered with the key's lock held, so that a hold never
	// waits for a transaction that waits for the lock.
	if err := l.c.gate.enter(ctx); err != nil {
		return BatchResult{}, err
	}
	committing := false
	defer func() {
		if !committing {
			l.c.gate.exit()
		}
	}()
	var pending []*pendingProposal
	var above paxos.Ballot // the highest ballot that beat a round of this transaction
	lost := 0              // rounds lost to other coordinators: the back-off grows with them
	for round := 0; round < l.c.cfg.LWTRounds; round++ {
		start := time.Now()
		ballot, err := l.c.ballot(above)
		if err != nil {
			return l.fail(pending, err)
		}
		inFlight := l.c.lwtCommits.get(l.id)
		pr, err := l.prepare(ctx, ballot, inFlight)
		if err != nil {
			return l.fail(pending, err)
		}
		if !pr.refused.IsZero() {
			above = paxos.Max(above, pr.refused)
			if err := l.backoff(ctx, ballot, lost, time.Since(start)); err != nil {
				return l.fail(pending, err)
			}
			lost++
			continue
		}
		s := pr.summary
		for _, p := range pending {
			if !p.dead && s.Fate(p.proposal.Origin, p.proposal.Ballot) == paxos.Chosen {
				return p.result, nil // committed by a round that completed it
			}
		}
		if !s.InProgress.IsZero() {
			// Completed whole under this round's ballot, keeping its origin: a batch is
			// chosen with every record it carries, or not at all.
			p := s.InProgress
			p.Ballot = ballot
			outcome, promised, _ := l.propose(ctx, p)
			if mine := pendingWith(pending, p.Origin); outcome == accepted && mine != nil {
				committing = true
				l.commitInBackground(ctx, p)
				return mine.result, nil
			}
			switch {
			case outcome == accepted:
				// Another's: committed before this transaction goes on, so that its
				// origin is on record (the rule Summary.Fate rests on). This round's
				// ballot is spent; the next one is this transaction's, or completes a
				// commit that fell short.
				if err := l.commitRound(ctx, p); err != nil {
					l.c.log.Debug("paxos commit of a completed proposal", "keyspace", l.keyspace, "err", err)
				}
				if ctx.Err() != nil {
					return l.fail(pending, ctx.Err())
				}
				continue
			case ctx.Err() != nil:
				return l.fail(pending, ctx.Err())
			}
			above = paxos.Max(above, promised)
			if err := l.backoff(ctx, ballot, lost, time.Since(start)); err != nil {
				return l.fail(pending, err)
			}
			lost++
			continue
		}
		for _, p := range pending {
			if p.dead {
				continue
			}
			switch s.Fate(p.proposal.Origin, p.proposal.Ballot) {
			case paxos.Lost:
				p.dead = true
			case paxos.Unknown:
				return l.fail(pending, fmt.Errorf("more writes on the key were committed since than the replicas remember"))
			}
		}
		cur := l.current(s, ballot)
		if fn == nil {
			go l.repairBehind(pr)
			return BatchResult{Previous: cur}, nil
		}
		if len(s.Behind) > 0 {
			// A value of its own is proposed only once every acceptor that promised has
			// recorded the most recent commit (the rule Summary.Fate rests on).
			switch {
			case l.repairable(s):
				l.repairBehind(pr)
				continue
			case l.partition != nil:
				// Every acceptor that records a partition's commit keeps it whole; none
				// did here, which no round should leave. Refused rather than guessed.
				return l.fail(pending, fmt.Errorf("%w: acceptors are behind on the partition's last commit, and no answer carried it whole", ErrUnavailable))
			}
		}
		at, err := l.readCollections(ctx, s, ballot, cur)
		if err != nil {
			return l.fail(pending, err)
		}
		next, write, reply, err := fn(at, cur)
		switch {
		case err != nil:
			return l.fail(pending, err)
		case !write && live(pending):
			return l.fail(pending, fmt.Errorf("the update declined to write in a later round"))
		case !write:
			return BatchResult{Previous: cur, Reply: reply}, nil
		}
		p, err := l.proposal(next, at, ballot, inFlight)
		if err != nil {
			return l.fail(pending, err)
		}
		result := BatchResult{Applied: true, Previous: cur, Records: p.Records()[:len(next)], Reply: reply}
		outcome, promised, err := l.propose(ctx, p)
		switch outcome {
		case accepted:
			// Chosen in a round that found every earlier proposal of this transaction
			// open or lost: none of them can be committed now. The commit goes on
			// without the client, holding the gate in its place.
			committing = true
			l.commitInBackground(ctx, p)
			return result, nil
		case refused:
			above = paxos.Max(above, promised)
		case uncertain:
			pending = append(pending, &pendingProposal{proposal: p, result: result})
			if ctx.Err() != nil {
				return l.fail(pending, err)
			}
			// No back-off: the next round most likely finds this proposal in progress
			// and completes it, which is progress, not contention; waiting would let
			// other commits bury it beyond what the replicas remember.
			continue
		}
		if err := l.backoff(ctx, ballot, lost, time.Since(start)); err != nil {
			return l.fail(pending, err)
		}
		lost++
	}
	return l.fail(pending, &ContentionError{Level: l.serial, Rounds: l.c.cfg.LWTRounds, Lost: lost})
}

// current is each key's live record as the promises summarised in s carry it, at the
// round's ballot: what fn decides on.
func (l *lwt) current(s paxos.Summary, ballot paxos.Ballot) []KeyRecord {
	reads := s.Reads
	if l.partition == nil {
		reads = []paxos.Read{{Key: l.keys[0], Record: s.Newest, Found: s.Found}}
	}
	out := make([]KeyRecord, len(reads))
	for i, r := range reads {
		out[i].Key = l.keys[i]
		switch {
		case r.Found && visible(l.ks, r.Record, ballot.Time):
			out[i].Record, out[i].Found = r.Record, true
		case r.Found && r.Record.Timestamp > l.ks.TruncatedAt:
			out[i].Ended = r.Record.Timestamp
		}
	}
	return out
}

// readCollections reads the element records of the transaction's collections into cur
// (KeyRecord.Reset, Elements), at the commit level: after the round's promises, every
// commit of the instance is on a quorum of the replicas, which such a read meets, and a
// commit of this coordinator still on its way is waited for (scanPartition). It returns
// the timestamp the round's records get: the ballot's, or one past the newest record the
// round read when a clock ahead stamped that one later (observed by the clock), so that
// every record written is newer than what it replaces, and a reset point just below it
// covers every element read.
func (l *lwt) readCollections(ctx context.Context, s paxos.Summary, ballot paxos.Ballot, cur []KeyRecord) (hlc.Timestamp, error) {
	var newest hlc.Timestamp
	if l.partition == nil {
		newest = s.Newest.Timestamp
	}
	for _, r := range s.Reads {
		newest = max(newest, r.Record.Timestamp)
	}
	for _, key := range l.collections {
		i := slices.IndexFunc(cur, func(r KeyRecord) bool { return bytes.Equal(r.Key, key) })
		recs, err := l.c.scanPartition(ctx, l.ks, key, element.Prefix(key), element.PrefixEnd(key), l.commit)
		if err != nil {
			return 0, err
		}
		for _, rec := range recs {
			newest = max(newest, rec.Timestamp)
		}
		if cur[i].Found && cur[i].Record.Type != lww.String {
			cur[i].Reset, cur[i].Elements = liveElements(l.ks, key, recs, ballot.Time)
		}
	}
	if newest < ballot.Time {
		return ballot.Time, nil
	}
	if err := l.c.clock.Observe(newest + 1); err != nil {
		return 0, fmt.Errorf("%w: the key's record is further ahead of the cluster's clock than allowed: %w", ErrUnavailable, err)
	}
	return newest + 1, nil
}

// repairable reports whether the promises give what the acceptors behind on the most
// recent commit must be sent: for a key, a record (none is left of a collected
// tombstone, and nothing needs sending); for a partition, the commit's proposal whole.
func (l *lwt) repairable(s paxos.Summary) bool {
	if l.partition == nil {
		return s.Found
	}
	return !s.Last.IsZero()
}

// fail returns err, or an UnknownOutcomeError when a proposal of this transaction may
// still be chosen (the caller cannot know whether its write took effect).
func (l *lwt) fail(pending []*pendingProposal, err error) (BatchResult, error) {
	if live(pending) {
		return BatchResult{}, &UnknownOutcomeError{Level: l.serial, Cause: err}
	}
	return BatchResult{}, err
}

// live reports whether any pending proposal may still be chosen.
func live(pending []*pendingProposal) bool {
	for _, p := range pending {
		if !p.dead {
			return true
		}
	}
	return false
}

// pendingWith returns the pending proposal of the given origin, nil if none.
func pendingWith(pending []*pendingProposal, origin paxos.Ballot) *pendingProposal {
	for _, p := range pending {
		if p.proposal.Origin == origin {
			return p
		}
	}
	return nil
}

// ballot returns a ballot of this node above above: its clock merges above first, so
// the stamp exceeds it.
func (c *Coordinator) ballot(above paxos.Ballot) (paxos.Ballot, error) {
	if !above.IsZero() {
		if err := c.clock.Observe(above.Time); err != nil {
			return paxos.Ballot{}, fmt.Errorf("%w: a higher ballot on the key is further ahead of the cluster's clock than allowed: %w", ErrUnavailable, err)
		}
	}
	ts, err := c.stamp()
	return paxos.Ballot{Time: ts, Node: c.view.Self().ID}, err
}

// proposal makes this round's proposal of fn's next records: each completed (the key, no
// value for a tombstone) and stamped with one timestamp above every record they replace.
// The ballot's time is that timestamp unless a replaced record was stamped later, by a
// clock ahead of this one (a plain write from a node a little ahead): one past it then,
// which the clock observes, or the new record would lose to the old one under last
// writer wins. A partition's proposal also carries the records of inFlight, a proposal
// of this coordinator chosen on the instance whose commit is still on its way, for the
// keys it does not write itself: this round counted that commit as arrived
// (paxos.Promise.Learn), and once this proposal is accepted, the other is accepted
// nowhere, so if its commit were lost its records would be too. A key's next record
// derives from the one in flight, which needs no such care.
func (l *lwt) proposal(next []lww.Record, ts hlc.Timestamp, ballot paxos.Ballot, inFlight paxos.Proposal) (paxos.Proposal, error) {
	if len(next) == 0 {
		return paxos.Proposal{}, invalid("the update wrote no record")
	}
	records := make([]lww.Record, len(next))
	for i, rec := range next {
		if err := l.c.checkValue(rec.Value); err != nil {
			return paxos.Proposal{}, err
		}
		if rec.Tombstone {
			// A tombstone holds neither a value nor a type: the key is absent.
			rec.Value, rec.Type = nil, lww.String
		}
		if err := l.c.checkType(rec.Type); err != nil {
			return paxos.Proposal{}, err
		}
		reset, err := l.checkWritten(rec, ts)
		if err != nil {
			return paxos.Proposal{}, err
		}
		if slices.ContainsFunc(records[:i], func(r lww.Record) bool { return bytes.Equal(r.Key, rec.Key) }) {
			return paxos.Proposal{}, invalid("the update writes key %q twice", rec.Key)
		}
		if !reset {
			rec.Timestamp = ts
		}
		records[i] = rec
	}
	p := paxos.Proposal{Ballot: ballot, Origin: ballot}
	if l.partition == nil {
		p.Record = records[0]
		return p, nil
	}
	for _, rec := range inFlight.Batch {
		if !slices.ContainsFunc(records, func(r lww.Record) bool { return bytes.Equal(r.Key, rec.Key) }) {
			records = append(records, rec)
		}
	}
	p.Partition, p.Batch = l.partition, records
	return p, nil
}

// checkWritten refuses a record the round may not write: one not among the keys it read,
// nor an element record of a key read as a collection, nor a reset record of a key read
// stamped with the point it holds, in (0, ts]. reset reports a reset record, which keeps
// its timestamp (resetRecord's rule: of two resets, the later point wins).
func (l *lwt) checkWritten(rec lww.Record, ts hlc.Timestamp) (reset bool, err error) {
	read := func(key []byte) bool {
		return slices.ContainsFunc(l.keys, func(k []byte) bool { return bytes.Equal(k, key) })
	}
	if read(rec.Key) {
		return false, nil
	}
	coll, kind, _, ok := element.Parse(rec.Key)
	switch {
	case ok && kind == element.Reset && read(coll):
		at, valid := element.ParseResetValue(rec.Value)
		if !valid || rec.Tombstone || at != rec.Timestamp || at == 0 || at > ts {
			return false, invalid("the update writes a reset record of %q that is not a reset point at or before its timestamp", coll)
		}
		return true, nil
	case ok && slices.ContainsFunc(l.collections, func(k []byte) bool { return bytes.Equal(k, coll) }):
		return false, nil
	}
	return false, invalid("the update writes key %q, which the transaction did not read", rec.Key)
}

// backoff waits after a lost round: a random time below a ceiling that starts at the
// longer of LWTBackoff and the lost round's duration (a WAN round trip or more, so that
// across DCs a winner's round can finish) and doubles with each round lost. The
// randomness is drawn from the ballot, unique to the round, so that a run in virtual time
// is reproducible.
func (l *lwt) backoff(ctx context.Context, ballot paxos.Ballot, lost int, roundTook time.Duration) error {
	ceiling := l.c.cfg.LWTBackoffMax
	if lost < 30 {
		ceiling = min(max(l.c.cfg.LWTBackoff, roundTook)<<lost, ceiling)
	}
	node := fnv.New64a()
	node.Write([]byte(ballot.Node))
	wait := time.Duration(rand.New(rand.NewPCG(uint64(ballot.Time), node.Sum64())).Int64N(int64(ceiling) + 1))
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// targets are the acceptors as the gatherer asks them, nearest first.
func (l *lwt) targets() []target {
	out := make([]target, len(l.acceptors))
	for i, m := range l.acceptors {
		out[i] = target{Member: m, slot: i}
	}
	return l.c.nearestFirst(out)
}

// refusal is an acceptor's answer that it promised a higher ballot. It travels as an
// error so that the gatherer does not count it as a promise or an acceptance.
type refusal struct{ promised paxos.Ballot }

func (r *refusal) Error() string {
	return fmt.Sprintf("ballot refused: %s of %s promised", r.promised.Time, r.promised.Node)
}

// prepared is a prepare phase's outcome: a quorum's promises summarised, with the
// acceptors that made them (in the summary's order), or the higher ballot that refused
// the round.
type prepared struct {
	summary paxos.Summary
	from    []placement.Member
	refused paxos.Ballot
}

// prepare asks every acceptor to promise ballot and waits for the requirement's
// promises; the first refusal ends it, the round being lost. committing is a proposal of
// this coordinator chosen on the key whose commit is still on its way (zero: none): each
// promise counts it as arrived.
func (l *lwt) prepare(ctx context.Context, ballot paxos.Ballot, committing paxos.Proposal) (prepared, error) {
	var out prepared
	var promises []paxos.Promise
	q := &quorum{self: l.c.view.Self().ID, groups: []*group{newGroup(l.required, l.targets())}, askAll: true,
		abort: func(err error) bool {
			var r *refusal
			if errors.As(err, &r) {
				out.refused = paxos.Max(out.refused, r.promised)
				return true
			}
			return false
		}}
	in := l.instance()
	res, err := gather(ctx, q, func(m placement.Member, _ []target) (paxos.Promise, error) {
		r, err := l.c.replica(m)
		if err != nil {
			return paxos.Promise{}, err
		}
		rctx, cancel := l.c.replicaContext()
		defer cancel()
		promise, err := r.Prepare(rctx, l.keyspace, in, ballot)
		switch {
		case err == nil && !promise.Promised:
			return promise, &refusal{promised: promise.Ballot}
		case err == nil && in.Partition && len(promise.Reads) != len(in.Reads):
			// Not a read of every key: it must not pass for one that found nothing.
			return promise, fmt.Errorf("replica %s answered %d reads for %d keys", m.ID, len(promise.Reads), len(in.Reads))
		}
		return promise, err
	}, func(ts []target, p paxos.Promise) {
		promises = append(promises, p.Learn(committing))
		out.from = append(out.from, ts[0].Member)
	})
	switch {
	case !out.refused.IsZero():
		return out, nil
	case err != nil || !res.met:
		return out, unmet(l.serial, l.required, res, 0, err)
	}
	out.summary = paxos.Summarize(promises)
	return out, nil
}

// proposed is a propose phase's outcome.
type proposed int

const (
	// accepted: the requirement's acceptors accepted; the proposal is chosen.
	accepted proposed = iota + 1
	// refused: every acceptor asked answered, and each refused: nothing was accepted,
	// and the round can simply be tried again.
	refused
	// uncertain: some acceptors accepted, or may have (no answer), short of the
	// requirement: a later round may complete the proposal, or not.
	uncertain
)

// propose asks every acceptor to accept p. Unless the requirement is met, it waits for
// every answer: only when all refused is the proposal known never to be completed.
func (l *lwt) propose(ctx context.Context, p paxos.Proposal) (proposed, paxos.Ballot, error) {
	targets := l.targets()
	var (
		mu                 sync.Mutex
		acceptedN, failedN int
		promised           paxos.Ballot
		answered           sync.WaitGroup
	)
	q := &quorum{self: l.c.view.Self().ID, groups: []*group{newGroup(l.required, targets)}, askAll: true}
	answered.Add(len(targets)) // askAll asks every target, each once
	res, err := gather(ctx, q, func(m placement.Member, _ []target) (struct{}, error) {
		defer answered.Done()
		ok, prom, err := l.proposeTo(m, p)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			failedN++
			return struct{}{}, err
		case !ok:
			promised = paxos.Max(promised, prom)
			return struct{}{}, &refusal{promised: prom}
		}
		acceptedN++
		return struct{}{}, nil
	}, func([]target, struct{}) {})
	if res.met {
		return accepted, paxos.Ballot{}, nil
	}
	if err != nil {
		return uncertain, paxos.Ballot{}, err
	}
	answered.Wait() // each answers within the replica timeout
	mu.Lock()
	defer mu.Unlock()
	if acceptedN == 0 && failedN == 0 {
		return refused, promised, nil
	}
	return uncertain, promised, res.lastErr
}

// proposeTo sends p to one acceptor within the replica timeout.
func (l *lwt) proposeTo(m placement.Member, p paxos.Proposal) (bool, paxos.Ballot, error) {
	r, err := l.c.replica(m)
	if err != nil {
		return false, paxos.Ballot{}, err
	}
	ctx, cancel := l.c.replicaContext()
	defer cancel()
	return r.Propose(ctx, l.keyspace, p)
}

// commitRound sends the chosen proposal to every replica, as a write: those down get a
// hint of its record. It waits for the commit level. A commit short of it leaves the
// proposal chosen; the next round on the key completes it.
func (l *lwt) commitRound(ctx context.Context, p paxos.Proposal) error {
	required := withPending(l.commit.Require(countedPerDC(l.members), l.c.view.Self().DC), l.members)
	op := l.c.newWriteOp(l.keyspace)
	op.required = required
	l.c.planWrites(op, l.members)
	for i := range op.writes {
		op.writes[i].record, op.writes[i].commit = p.Records()[0], &p
	}
	err := l.c.applyWrites(ctx, op, l.commit, func(alive map[string]int) error {
		return &TimeoutError{Level: l.commit, Required: required, Cause: fmt.Errorf("no replica takes writes, %s alive", consistency.CountPerDC(sumPerDC(alive), alive))}
	})
	if err != nil {
		return fmt.Errorf("the write was chosen, but its commit is short of %v (the next round on the key completes it): %w", l.commit, err)
	}
	return nil
}

// repairBehind sends the most recent commit to the acceptors that promised without
// having recorded it, and returns once each answered: a key's with the newest record the
// promises carried (the committed one or a newer one; last writer wins keeps it right),
// a partition's whole, as an acceptor that recorded it keeps it (paxos.State.Last), since
// the keys it wrote need not be among those this round read.
func (l *lwt) repairBehind(pr prepared) {
	s := pr.summary
	if !l.repairable(s) {
		return // a key with no record left anywhere (a collected tombstone): nothing to send
	}
	fix := s.Last
	if l.partition == nil {
		fix = paxos.Proposal{Ballot: s.Committed.Ballot, Origin: s.Committed.Origin, Record: s.Newest}
	}
	var done sync.WaitGroup
	for _, i := range s.Behind {
		done.Add(1)
		go func(m placement.Member) {
			defer done.Done()
			if err := l.c.apply(replicaWrite{member: m, record: fix.Records()[0], commit: &fix}, l.keyspace); err != nil {
				l.c.log.Debug("paxos commit repair", "replica", m.ID, "err", err)
			}
		}(pr.from[i])
	}
	done.Wait()
}

// commitInBackground commits the chosen proposal p of the transaction without the client
// waiting: it is remembered as on its way (inflightCommits), under the instance and, for
// a partition's, each key it writes (the keys a plain read waits on), until the commit is
// answered, then the gate the transaction entered is left. A commit short of its level
// leaves p chosen and accepted by a quorum: the next round on the instance completes it.
// The commit is a background task, which Close waits for; once closed, none is sent,
// with the same outcome as a commit that fell short.
func (l *lwt) commitInBackground(ctx context.Context, p paxos.Proposal) {
	ids := []string{l.id}
	if l.partition != nil {
		for _, rec := range p.Batch {
			if id := inflightKey(l.keyspace, rec.Key); !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	for _, id := range ids {
		l.c.lwtCommits.add(id, p)
	}
	arrived := func() {
		for _, id := range ids {
			l.c.lwtCommits.done(id, p)
		}
	}
	commit := func() {
		defer l.c.gate.exit()
		defer arrived()
		if err := l.commitRound(context.WithoutCancel(ctx), p); err != nil {
			l.c.log.Debug("paxos commit", "keyspace", l.keyspace, "err", err)
		}
	}
	if !l.c.tasks.background(commit) {
		arrived()
		l.c.gate.exit()
	}
}

// inflightCommits are the proposals a coordinator's transactions got chosen whose
// commits are still on their way, by key (keyspace, 0x00, key): at most one per key, the
// transactions on a key running one at a time. Forgetting one is safe (the next round
// completes the proposal or repairs the replicas behind on it); remembering it saves
// those round trips, and lets a plain read through this coordinator wait for the commit
// (await), so that a client reads its own transaction's write. The zero value is empty
// and ready.
type inflightCommits struct {
	mu    sync.Mutex
	byKey map[string]inflightCommit
	// count is len(byKey), read without the lock: a read checks it on every call.
	count atomic.Int64
}

// inflightCommit is one commit on its way; arrived is closed once it was answered.
type inflightCommit struct {
	proposal paxos.Proposal
	arrived  chan struct{}
}

// add remembers p as chosen on key, its commit on its way.
func (f *inflightCommits) add(key string, p paxos.Proposal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byKey == nil {
		f.byKey = map[string]inflightCommit{}
	}
	if old, ok := f.byKey[key]; ok {
		close(old.arrived)
	} else {
		f.count.Add(1)
	}
	f.byKey[key] = inflightCommit{proposal: p, arrived: make(chan struct{})}
}

// get returns the proposal on key whose commit is on its way, zero if none.
func (f *inflightCommits) get(key string) paxos.Proposal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byKey[key].proposal
}

// done forgets p once its commit was answered, unless a later proposal on key replaced
// it.
func (f *inflightCommits) done(key string, p paxos.Proposal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in, ok := f.byKey[key]; ok && in.proposal.Ballot == p.Ballot {
		close(in.arrived)
		delete(f.byKey, key)
		f.count.Add(-1)
	}
}

// awaitKeyspace returns once every commit of this coordinator on its way on a key of
// keyspace when it was called has been answered, or with ctx's error: a scan or a key
// walk (SCAN, KEYS, DBSIZE, a whole hash) after a transaction through the same
// coordinator then reads what its commit wrote. Commits begun after the call are not
// waited for, so a steady stream of transactions cannot hold a scan back.
func (f *inflightCommits) awaitKeyspace(ctx context.Context, keyspace string) error {
	if f.count.Load() == 0 {
		return nil
	}
	prefix := keyspace + "\x00"
	var waits []chan struct{}
	f.mu.Lock()
	for key, in := range f.byKey {
		if strings.HasPrefix(key, prefix) {
			waits = append(waits, in.arrived)
		}
	}
	f.mu.Unlock()
	for _, arrived := range waits {
		select {
		case <-arrived:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// inflightKey names key of keyspace in inflightCommits.
func inflightKey(keyspace string, key []byte) string { return keyspace + "\x00" + string(key) }

// inflightPartition names a partition's instance of keyspace in inflightCommits and
// lwtKeys: apart from every key's, by a byte no keyspace name holds.
func inflightPartition(keyspace string, partition []byte) string {
	return keyspace + "\x01" + string(partition)
}

// await returns once no commit of this coordinator is on its way on key of keyspace, or
// with ctx's error: a plain read after a transaction the client was answered for,
// through the same coordinator, then reads what the commit wrote (the client was
// answered before it). With no commit on its way anywhere, it costs one atomic load.
func (f *inflightCommits) await(ctx context.Context, keyspace string, key []byte) error {
	for f.count.Load() > 0 {
		f.mu.Lock()
		in, ok := f.byKey[inflightKey(keyspace, key)]
		f.mu.Unlock()
		if !ok {
			return nil
		}
		select {
		case <-in.arrived:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
