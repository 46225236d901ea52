package replica

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/paxos"
	"github.com/kuradb/kura/transport"
)

// The Paxos acceptor of lightweight transactions: a replica's side of the prepare,
// propose and commit of package paxos, with its state stored per key in the engine.

// Message kinds of the Paxos rounds.
var (
	kindPaxosPrepare = transport.RegisterKind(17, "paxos_prepare")
	kindPaxosPropose = transport.RegisterKind(18, "paxos_propose")
	kindPaxosCommit  = transport.RegisterKind(19, "paxos_commit")
)

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
			Promised: ballotToProto(next.Promised),
			Accepted: proposalToProto(next.Accepted),
			Commits:  commitsToProto(next.Commits),
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
		Promised: ballotFromProto(wire.GetPromised()),
		Accepted: proposalFromProto(wire.GetAccepted()),
		Commits:  commitsFromProto(wire.GetCommits()),
	}, nil
}

// Prepare sends a paxos_prepare request.
func (r *Remote) Prepare(ctx context.Context, keyspace string, key []byte, ballot paxos.Ballot) (paxos.Promise, error) {
	raw, err := r.call(ctx, kindPaxosPrepare, &kurav1.PaxosPrepareRequest{Keyspace: keyspace, Key: key, Ballot: ballotToProto(ballot)})
	if err != nil {
		return paxos.Promise{}, err
	}
	var resp kurav1.PaxosPrepareResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return paxos.Promise{}, fmt.Errorf("replica %s: decode paxos_prepare: %w", r.peer.ID, err)
	}
	return promiseFromProto(&resp), nil
}

// Propose sends a paxos_propose request.
func (r *Remote) Propose(ctx context.Context, keyspace string, p paxos.Proposal) (bool, paxos.Ballot, error) {
	raw, err := r.call(ctx, kindPaxosPropose, &kurav1.PaxosProposeRequest{Keyspace: keyspace, Proposal: proposalToProto(p)})
	if err != nil {
		return false, paxos.Ballot{}, err
	}
	var resp kurav1.PaxosProposeResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return false, paxos.Ballot{}, fmt.Errorf("replica %s: decode paxos_propose: %w", r.peer.ID, err)
	}
	return resp.GetAccepted(), ballotFromProto(resp.GetPromised()), nil
}

// Commit sends a paxos_commit request.
func (r *Remote) Commit(ctx context.Context, keyspace string, p paxos.Proposal) error {
	_, err := r.call(ctx, kindPaxosCommit, &kurav1.PaxosCommitRequest{Keyspace: keyspace, Proposal: proposalToProto(p)})
	return err
}

// handlePaxos serves the three Paxos kinds. Every ballot and record timestamp is
// observed as a mutation's is: a ballot from a clock too far ahead is refused before it
// is promised, so it cannot shut every later round on the key out.
func (s *Server) handlePaxos(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	switch kind {
	case kindPaxosPrepare:
		var req kurav1.PaxosPrepareRequest
		if err := decodeRequest(payload, &req, kindPaxosPrepare, from); err != nil {
			return nil, err
		}
		ballot := ballotFromProto(req.GetBallot())
		if err := s.observeBallot(ballot); err != nil {
			return nil, fmt.Errorf("paxos_prepare from %s: %w", from.ID, err)
		}
		promise, err := s.local.Prepare(ctx, req.GetKeyspace(), req.GetKey(), ballot)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(promiseToProto(promise))
	case kindPaxosPropose:
		var req kurav1.PaxosProposeRequest
		if err := decodeRequest(payload, &req, kindPaxosPropose, from); err != nil {
			return nil, err
		}
		p, err := s.observeProposal(req.GetProposal())
		if err != nil {
			return nil, fmt.Errorf("paxos_propose from %s: %w", from.ID, err)
		}
		accepted, promised, err := s.local.Propose(ctx, req.GetKeyspace(), p)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(&kurav1.PaxosProposeResponse{Accepted: accepted, Promised: ballotToProto(promised)})
	default: // kindPaxosCommit
		var req kurav1.PaxosCommitRequest
		if err := decodeRequest(payload, &req, kindPaxosCommit, from); err != nil {
			return nil, err
		}
		p, err := s.observeProposal(req.GetProposal())
		if err != nil {
			return nil, fmt.Errorf("paxos_commit from %s: %w", from.ID, err)
		}
		return nil, s.local.Commit(ctx, req.GetKeyspace(), p)
	}
}

// observeBallot refuses the zero ballot, and a ballot too far ahead of the cluster's
// clock, and merges the others into the node's clock.
func (s *Server) observeBallot(b paxos.Ballot) error {
	if b.IsZero() {
		return fmt.Errorf("no ballot")
	}
	return s.clock.Observe(b.Time)
}

// observeProposal converts a proposal from its wire form, observing its ballot and its
// record's timestamp.
func (s *Server) observeProposal(wire *kurav1.PaxosProposal) (paxos.Proposal, error) {
	p := proposalFromProto(wire)
	if err := s.observeBallot(p.Ballot); err != nil {
		return paxos.Proposal{}, err
	}
	if p.Record.Timestamp == 0 {
		return paxos.Proposal{}, fmt.Errorf("proposal without a timestamped record")
	}
	records, err := s.observe([]*kurav1.Record{wire.GetRecord()})
	if err != nil {
		return paxos.Proposal{}, err
	}
	p.Record = records[0]
	return p, nil
}

func ballotToProto(b paxos.Ballot) *kurav1.Ballot {
	if b.IsZero() {
		return nil
	}
	return &kurav1.Ballot{Time: uint64(b.Time), Node: b.Node}
}

func ballotFromProto(b *kurav1.Ballot) paxos.Ballot {
	return paxos.Ballot{Time: hlc.Timestamp(b.GetTime()), Node: b.GetNode()}
}

func proposalToProto(p paxos.Proposal) *kurav1.PaxosProposal {
	if p.IsZero() {
		return nil
	}
	return &kurav1.PaxosProposal{Ballot: ballotToProto(p.Ballot), Origin: ballotToProto(p.Origin), Record: ToProto(p.Record)}
}

func proposalFromProto(p *kurav1.PaxosProposal) paxos.Proposal {
	if p == nil {
		return paxos.Proposal{}
	}
	return paxos.Proposal{Ballot: ballotFromProto(p.GetBallot()), Origin: ballotFromProto(p.GetOrigin()), Record: FromProto(p.GetRecord())}
}

func commitsToProto(commits []paxos.Commit) []*kurav1.PaxosCommit {
	out := make([]*kurav1.PaxosCommit, len(commits))
	for i, c := range commits {
		out[i] = &kurav1.PaxosCommit{Ballot: ballotToProto(c.Ballot), Origin: ballotToProto(c.Origin)}
	}
	return out
}

func commitsFromProto(commits []*kurav1.PaxosCommit) []paxos.Commit {
	if len(commits) == 0 {
		return nil
	}
	out := make([]paxos.Commit, len(commits))
	for i, c := range commits {
		out[i] = paxos.Commit{Ballot: ballotFromProto(c.GetBallot()), Origin: ballotFromProto(c.GetOrigin())}
	}
	return out
}

func promiseToProto(p paxos.Promise) *kurav1.PaxosPrepareResponse {
	resp := &kurav1.PaxosPrepareResponse{
		Promised: p.Promised, Ballot: ballotToProto(p.Ballot), Accepted: proposalToProto(p.Accepted),
		Commits: commitsToProto(p.Commits), Found: p.Found,
	}
	if p.Found {
		resp.Record = ToProto(p.Record)
	}
	return resp
}

func promiseFromProto(resp *kurav1.PaxosPrepareResponse) paxos.Promise {
	p := paxos.Promise{
		Promised: resp.GetPromised(), Ballot: ballotFromProto(resp.GetBallot()), Accepted: proposalFromProto(resp.GetAccepted()),
		Commits: commitsFromProto(resp.GetCommits()), Found: resp.GetFound(),
	}
	if p.Found {
		p.Record = FromProto(resp.GetRecord())
	}
	return p
}
