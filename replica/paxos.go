package replica

import (
	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/paxos"
)

// The protobuf forms of a lightweight transaction's ballots, proposals and commits,
// shared by the wire (package replica/remote) and the acceptor state the local replica
// stores (package replica/local).

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
	return &kurav1.PaxosProposal{Ballot: BallotToProto(p.Ballot), Origin: BallotToProto(p.Origin), Record: ToProto(p.Record)}
}

// ProposalFromProto converts a proposal from its wire form.
func ProposalFromProto(p *kurav1.PaxosProposal) paxos.Proposal {
	if p == nil {
		return paxos.Proposal{}
	}
	return paxos.Proposal{Ballot: BallotFromProto(p.GetBallot()), Origin: BallotFromProto(p.GetOrigin()), Record: FromProto(p.GetRecord())}
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
