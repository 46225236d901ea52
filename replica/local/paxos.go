package local

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/paxos"
	"github.com/kuradb/kura/replica"
)

// The Paxos acceptor of lightweight transactions: a replica's side of the prepare,
// propose and commit of package paxos, with its state stored per key in the engine.

// Prepare promises ballot for key if no higher one was promised, storing the promise
// before it answers, and answers with the acceptor state and the replica's data for the
// key, read after the promise. A refusal is an answer (Promised false), not an error.
func (l *Local) Prepare(_ context.Context, keyspace string, key []byte, ballot paxos.Ballot) (paxos.Promise, error) {
	var promise paxos.Promise
	err := l.updatePaxos(keyspace, key, func(s paxos.State) (paxos.State, bool) {
		next, ok := s.Prepare(ballot)
		promise = paxos.Promise{Promised: ok, Ballot: next.Promised}
		if ok {
			promise.Accepted, promise.Commits = next.Accepted, next.Commits
		}
		return next, ok
	})
	if err != nil || !promise.Promised {
		return promise, err
	}
	// A commit applies its record before it records itself, so a commit read above
	// comes with its record, or a newer one, here.
	promise.Record, promise.Found, err = l.engine.Get(keyspace, key)
	return promise, err
}

// Propose accepts p unless a higher ballot was promised since, storing the acceptance
// before it answers. A refusal is an answer (false, with the higher promise), not an
// error.
func (l *Local) Propose(_ context.Context, keyspace string, p paxos.Proposal) (bool, paxos.Ballot, error) {
	var accepted bool
	var promised paxos.Ballot
	err := l.updatePaxos(keyspace, p.Record.Key, func(s paxos.State) (paxos.State, bool) {
		next, ok := s.Propose(p)
		accepted, promised = ok, next.Promised
		return next, ok
	})
	return accepted, promised, err
}

// Commit applies p's record (last writer wins, synced), then records the commit. In that
// order: a crash between the two leaves the proposal accepted, and the next round
// completes it again, which the record's timestamp makes harmless.
func (l *Local) Commit(ctx context.Context, keyspace string, p paxos.Proposal) error {
	if err := l.Apply(ctx, keyspace, []lww.Record{p.Record}); err != nil {
		return err
	}
	return l.updatePaxos(keyspace, p.Record.Key, func(s paxos.State) (paxos.State, bool) {
		return s.Commit(p)
	})
}

// PaxosState returns key's acceptor state on this replica, for tests and the
// simulator's scenarios to show what a round left behind.
func (l *Local) PaxosState(keyspace string, key []byte) (paxos.State, error) {
	raw, err := l.engine.PaxosState(keyspace, key)
	if err != nil {
		return paxos.State{}, err
	}
	return decodeState(key, raw)
}

// updatePaxos runs one transition of key's acceptor state under the engine's lock of
// the key; fn says whether the state changed, and only a changed state is stored.
func (l *Local) updatePaxos(keyspace string, key []byte, fn func(paxos.State) (paxos.State, bool)) error {
	return l.engine.UpdatePaxos(keyspace, key, func(raw []byte) ([]byte, error) {
		s, err := decodeState(key, raw)
		if err != nil {
			return nil, err
		}
		next, changed := fn(s)
		if !changed {
			return nil, nil
		}
		return proto.Marshal(&kurav1.PaxosState{
			Promised: replica.BallotToProto(next.Promised),
			Accepted: replica.ProposalToProto(next.Accepted),
			Commits:  replica.CommitsToProto(next.Commits),
		})
	})
}

// decodeState reads a stored acceptor state; nil is the initial one.
func decodeState(key, raw []byte) (paxos.State, error) {
	var wire kurav1.PaxosState
	if err := proto.Unmarshal(raw, &wire); err != nil {
		return paxos.State{}, fmt.Errorf("decode paxos state of key %q: %w", key, err)
	}
	return paxos.State{
		Promised: replica.BallotFromProto(wire.GetPromised()),
		Accepted: replica.ProposalFromProto(wire.GetAccepted()),
		Commits:  replica.CommitsFromProto(wire.GetCommits()),
	}, nil
}
