package local

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/data/replica"
)

// The Paxos acceptor of lightweight transactions: a replica's side of the prepare,
// propose and commit of package paxos, with its state stored per instance (a key, or a
// partition) in the engine.

// Prepare promises ballot for the instance in if no higher one was promised, storing the
// promise before it answers, and answers with the acceptor state and the replica's data
// for the instance's key, or for each key a partition's prepare reads, read after the
// promise. A refusal is an answer (Promised false), not an error.
func (l *Local) Prepare(_ context.Context, keyspace string, in paxos.Instance, ballot paxos.Ballot) (paxos.Promise, error) {
	var promise paxos.Promise
	err := l.updatePaxos(keyspace, in, func(s paxos.State) (paxos.State, bool) {
		next, ok := s.Prepare(ballot)
		promise = paxos.Promise{Promised: ok, Ballot: next.Promised}
		if ok {
			promise.Accepted, promise.Commits, promise.Last = next.Accepted, next.Commits, next.Last
		}
		return next, ok
	})
	if err != nil || !promise.Promised {
		return promise, err
	}
	// A commit applies its records before it records itself, so a commit read above
	// comes with its records, or newer ones, here.
	if !in.Partition {
		promise.Record, promise.Found, err = l.engine.Get(keyspace, in.Key)
		return promise, err
	}
	promise.Reads = make([]paxos.Read, len(in.Reads))
	for i, key := range in.Reads {
		promise.Reads[i].Key = key
		if promise.Reads[i].Record, promise.Reads[i].Found, err = l.engine.Get(keyspace, key); err != nil {
			return paxos.Promise{}, err
		}
	}
	return promise, nil
}

// Propose accepts p unless a higher ballot was promised since, storing the acceptance
// before it answers. A refusal is an answer (false, with the higher promise), not an
// error.
func (l *Local) Propose(_ context.Context, keyspace string, p paxos.Proposal) (bool, paxos.Ballot, error) {
	var accepted bool
	var promised paxos.Ballot
	err := l.updatePaxos(keyspace, p.Instance(), func(s paxos.State) (paxos.State, bool) {
		next, ok := s.Propose(p)
		accepted, promised = ok, next.Promised
		return next, ok
	})
	return accepted, promised, err
}

// Commit applies p's records (last writer wins, synced, a batch's in one engine batch, so
// that no reader of this replica sees part of it), then records the commit. In that
// order: a crash between the two leaves the proposal accepted, and the next round
// completes it again, which the records' timestamps make harmless.
func (l *Local) Commit(ctx context.Context, keyspace string, p paxos.Proposal) error {
	if err := l.Apply(ctx, keyspace, p.Records()); err != nil {
		return err
	}
	return l.updatePaxos(keyspace, p.Instance(), func(s paxos.State) (paxos.State, bool) {
		return s.Commit(p)
	})
}

// PaxosState returns an instance's acceptor state on this replica, for tests and the
// simulator's scenarios to show what a round left behind.
func (l *Local) PaxosState(keyspace string, in paxos.Instance) (paxos.State, error) {
	raw, err := l.engine.PaxosState(keyspace, in.Key, in.Partition)
	if err != nil {
		return paxos.State{}, err
	}
	return decodeState(in.Key, raw)
}

// updatePaxos runs one transition of an instance's acceptor state under the engine's
// lock of its key; fn says whether the state changed, and only a changed state is stored.
func (l *Local) updatePaxos(keyspace string, in paxos.Instance, fn func(paxos.State) (paxos.State, bool)) error {
	return l.engine.UpdatePaxos(keyspace, in.Key, in.Partition, func(raw []byte) ([]byte, error) {
		s, err := decodeState(in.Key, raw)
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
			Last:     replica.ProposalToProto(next.Last),
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
		Last:     replica.ProposalFromProto(wire.GetLast()),
	}, nil
}
