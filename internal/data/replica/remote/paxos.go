package remote

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/transport"
)

// The wire of a lightweight transaction's Paxos rounds: the prepare, propose and commit
// of package paxos sent to an acceptor (Remote), and the acceptor's answers (Server).

// Prepare sends a paxos_prepare request.
func (r *Remote) Prepare(ctx context.Context, keyspace string, in paxos.Instance, ballot paxos.Ballot) (paxos.Promise, error) {
	req := &kurav1.PaxosPrepareRequest{Keyspace: keyspace, Key: in.Key, Ballot: replica.BallotToProto(ballot)}
	if in.Partition {
		req.Partition, req.Keys = true, in.Reads
	}
	raw, err := r.call(ctx, transport.KindPaxosPrepare, req)
	if err != nil {
		return paxos.Promise{}, err
	}
	var resp kurav1.PaxosPrepareResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return paxos.Promise{}, fmt.Errorf("replica %s: decode paxos_prepare: %w", r.peer.ID, err)
	}
	p := promiseFromProto(&resp)
	if in.Partition && p.Promised {
		// A promise answers for every key asked, in order; one that does not is no
		// read of the partition, and must not pass for one that found nothing.
		if len(resp.GetReads()) != len(in.Reads) {
			return paxos.Promise{}, fmt.Errorf("replica %s: paxos_prepare answered %d reads for %d keys", r.peer.ID, len(resp.GetReads()), len(in.Reads))
		}
		p.Reads = make([]paxos.Read, len(in.Reads))
		for i, read := range resp.GetReads() {
			p.Reads[i] = paxos.Read{Key: in.Reads[i], Found: read.GetFound()}
			if p.Reads[i].Found {
				p.Reads[i].Record = replica.FromProto(read.GetRecord())
			}
		}
	}
	return p, nil
}

// Propose sends a paxos_propose request.
func (r *Remote) Propose(ctx context.Context, keyspace string, p paxos.Proposal) (bool, paxos.Ballot, error) {
	raw, err := r.call(ctx, transport.KindPaxosPropose, &kurav1.PaxosProposeRequest{Keyspace: keyspace, Proposal: replica.ProposalToProto(p)})
	if err != nil {
		return false, paxos.Ballot{}, err
	}
	var resp kurav1.PaxosProposeResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return false, paxos.Ballot{}, fmt.Errorf("replica %s: decode paxos_propose: %w", r.peer.ID, err)
	}
	return resp.GetAccepted(), replica.BallotFromProto(resp.GetPromised()), nil
}

// Commit sends a paxos_commit request.
func (r *Remote) Commit(ctx context.Context, keyspace string, p paxos.Proposal) error {
	_, err := r.call(ctx, transport.KindPaxosCommit, &kurav1.PaxosCommitRequest{Keyspace: keyspace, Proposal: replica.ProposalToProto(p)})
	return err
}

// handlePaxos serves the three Paxos kinds. Every ballot and record timestamp is
// observed as a mutation's is: a ballot from a clock too far ahead is refused before it
// is promised, so it cannot shut every later round on the key out.
func (s *Server) handlePaxos(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	switch kind {
	case transport.KindPaxosPrepare:
		var req kurav1.PaxosPrepareRequest
		if err := decodeRequest(payload, &req, transport.KindPaxosPrepare, from); err != nil {
			return nil, err
		}
		ballot := replica.BallotFromProto(req.GetBallot())
		if err := s.observeBallot(ballot); err != nil {
			return nil, fmt.Errorf("paxos_prepare from %s: %w", from.ID, err)
		}
		in := paxos.Instance{Key: req.GetKey(), Partition: req.GetPartition(), Reads: req.GetKeys()}
		if in.Partition && len(in.Reads) == 0 {
			return nil, fmt.Errorf("paxos_prepare from %s: a partition's prepare names no key to read", from.ID)
		}
		promise, err := s.local.Prepare(ctx, req.GetKeyspace(), in, ballot)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(promiseToProto(promise))
	case transport.KindPaxosPropose:
		var req kurav1.PaxosProposeRequest
		if err := decodeRequest(payload, &req, transport.KindPaxosPropose, from); err != nil {
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
		return proto.Marshal(&kurav1.PaxosProposeResponse{Accepted: accepted, Promised: replica.BallotToProto(promised)})
	default: // transport.KindPaxosCommit
		var req kurav1.PaxosCommitRequest
		if err := decodeRequest(payload, &req, transport.KindPaxosCommit, from); err != nil {
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
	p := replica.ProposalFromProto(wire)
	if err := s.observeBallot(p.Ballot); err != nil {
		return paxos.Proposal{}, err
	}
	if p.Partition == nil {
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
	if len(p.Batch) == 0 {
		return paxos.Proposal{}, fmt.Errorf("a partition's proposal without records")
	}
	for _, r := range p.Batch {
		if r.Timestamp == 0 {
			return paxos.Proposal{}, fmt.Errorf("proposal without a timestamped record")
		}
	}
	records, err := s.observe(wire.GetBatch())
	if err != nil {
		return paxos.Proposal{}, err
	}
	p.Batch = records
	return p, nil
}

func promiseToProto(p paxos.Promise) *kurav1.PaxosPrepareResponse {
	resp := &kurav1.PaxosPrepareResponse{
		Promised: p.Promised, Ballot: replica.BallotToProto(p.Ballot), Accepted: replica.ProposalToProto(p.Accepted),
		Commits: replica.CommitsToProto(p.Commits), Found: p.Found, Last: replica.ProposalToProto(p.Last),
	}
	if p.Found {
		resp.Record = replica.ToProto(p.Record)
	}
	for _, r := range p.Reads {
		read := &kurav1.PaxosRead{Found: r.Found}
		if r.Found {
			read.Record = replica.ToProto(r.Record)
		}
		resp.Reads = append(resp.Reads, read)
	}
	return resp
}

func promiseFromProto(resp *kurav1.PaxosPrepareResponse) paxos.Promise {
	p := paxos.Promise{
		Promised: resp.GetPromised(), Ballot: replica.BallotFromProto(resp.GetBallot()), Accepted: replica.ProposalFromProto(resp.GetAccepted()),
		Commits: replica.CommitsFromProto(resp.GetCommits()), Found: resp.GetFound(), Last: replica.ProposalFromProto(resp.GetLast()),
	}
	if p.Found {
		p.Record = replica.FromProto(resp.GetRecord())
	}
	return p
}
