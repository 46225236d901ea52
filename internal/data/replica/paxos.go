package replica

import (
	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
)

// The protobuf forms of a lightweight transaction's ballots, proposals and commits,
// shared by the wire (package internal/data/replica/remote) and the acceptor state the local replica
// stores (package internal/data/replica/local).

// BallotToProto converts a ballot to its wire form; the zero ballot is nil.
func BallotToProto(b paxos.Ballot) *kurav1.Ballot {
	if b.IsZero() {
		return nil
	}
	return &kurav1.Ballot{Time: uint64(b.Time), Node: b.Node}
}

// BallotFromProto converts a ballot from its wire form.
func BallotFromProto(b *kurav1.Ballot) paxos.Ballot {
	return paxos.Ballot{Time: hlc.Timestamp(b.GetTime()), Node: b.GetNode()}
}

// ProposalToProto converts a proposal to its wire form; the zero proposal is nil.
func ProposalToProto(p paxos.Proposal) *kurav1.PaxosProposal {
	if p.IsZero() {
		return nil
	}
	out := &kurav1.PaxosProposal{Ballot: BallotToProto(p.Ballot), Origin: BallotToProto(p.Origin)}
	if p.Partition == nil {
		out.Record = ToProto(p.Record)
		return out
	}
	out.Partition, out.Batch = p.Partition, make([]*kurav1.Record, len(p.Batch))
	for i, r := range p.Batch {
		out.Batch[i] = ToProto(r)
	}
	return out
}

// ProposalFromProto converts a proposal from its wire form.
func ProposalFromProto(p *kurav1.PaxosProposal) paxos.Proposal {
	if p == nil {
		return paxos.Proposal{}
	}
	out := paxos.Proposal{Ballot: BallotFromProto(p.GetBallot()), Origin: BallotFromProto(p.GetOrigin())}
	if len(p.GetPartition()) == 0 {
		out.Record = FromProto(p.GetRecord())
		return out
	}
	out.Partition, out.Batch = p.GetPartition(), make([]lww.Record, len(p.GetBatch()))
	for i, r := range p.GetBatch() {
		out.Batch[i] = FromProto(r)
	}
	return out
}

// CommitsToProto converts an acceptor's commits to their wire form.
func CommitsToProto(commits []paxos.Commit) []*kurav1.PaxosCommit {
	out := make([]*kurav1.PaxosCommit, len(commits))
	for i, c := range commits {
		out[i] = &kurav1.PaxosCommit{Ballot: BallotToProto(c.Ballot), Origin: BallotToProto(c.Origin)}
	}
	return out
}

// CommitsFromProto converts an acceptor's commits from their wire form; none is nil.
func CommitsFromProto(commits []*kurav1.PaxosCommit) []paxos.Commit {
	if len(commits) == 0 {
		return nil
	}
	out := make([]paxos.Commit, len(commits))
	for i, c := range commits {
		out[i] = paxos.Commit{Ballot: BallotFromProto(c.GetBallot()), Origin: BallotFromProto(c.GetOrigin())}
	}
	return out
}
