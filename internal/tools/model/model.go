// Package model predicts what a consistency level costs in latency on a given cluster
// (paper 002): for every token range it finds the replicas, the replies the coordinator
// waits for and when they arrive over the topology's links, and weighs each range by its
// share of the key space. It generalises the paper's two-point model, insert time =
// (1 − p) × t_proc + p × (t_proc + RTT), to any number of DCs, unequal latencies and
// narrow links, and reports the paper's p beside the exact mean. At the serial levels a
// write is a lightweight transaction, three such waits (prepare, propose, commit), and a
// read is one (prepare).
package model

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/transport"
)

// Op is the kind of request the model predicts.
type Op int

// The operations: a write goes to every replica and waits for the level's
// acknowledgements; a read asks only the nearest replicas the level needs. At a serial
// level a write is a lightweight transaction (compare-and-set: prepare, propose; the
// commit follows unawaited) and a read is a serial read (prepare).
const (
	Write Op = iota + 1
	Read
)

// String returns the operation's name as the command line writes it.
func (o Op) String() string {
	switch o {
	case Write:
		return "write"
	case Read:
		return "read"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Errors callers distinguish.
var (
	ErrUnknownOp          = errors.New("model: unknown operation")
	ErrUnknownCoordinator = errors.New("model: coordinator is not on the ring")
	ErrReadAtAny          = errors.New("model: ANY is a write level; reads need ONE or above")
	ErrInvalidParams      = errors.New("model: invalid parameters")
)

// ParseOp reads an operation name: "write" or "read".
func ParseOp(name string) (Op, error) {
	for _, op := range []Op{Write, Read} {
		if strings.EqualFold(strings.TrimSpace(name), op.String()) {
			return op, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want write or read)", ErrUnknownOp, name)
}

// Params are the figures that neither the ring nor the links give.
type Params struct {
	// Processing is t_proc: the time a request takes apart from waiting on the network,
	// added to every request. Paper 002 measured about 1 ms for Cassandra.
	Processing time.Duration
	// KeyBytes and ValueBytes size the messages, whose serialisation narrow links add.
	KeyBytes, ValueBytes int
}

// Model predicts request latency on one ring over one set of links.
type Model struct {
	ring   *ring.Ring
	params Params
	paths  map[dcPair]path // every ordered pair of the ring's DCs, a DC to itself included
	frames frameSizes
}

// dcPair is a direction between two DCs (or inside one).
type dcPair struct{ from, to string }

// path is one direction of a link in the figures the model needs.
type path struct {
	oneWay       time.Duration // latency plus the mean of the jitter
	bandwidthBps float64       // 0: unlimited
}

// transmit is how long a frame of the given size holds the path.
func (p path) transmit(frameBytes int) time.Duration {
	if p.bandwidthBps <= 0 {
		return 0
	}
	return time.Duration(float64(frameBytes) * 8 / p.bandwidthBps * float64(time.Second))
}

// New returns a model of r whose messages travel over links (a *topology.Topology, or
// links measured on a running system). Every DC pair of the ring must have a link.
func New(r *ring.Ring, links transport.LinkModel, params Params) (*Model, error) {
	if params.Processing < 0 || params.KeyBytes < 0 || params.ValueBytes < 0 {
		return nil, fmt.Errorf("%w: processing %v, key %d bytes, value %d bytes must not be negative",
			ErrInvalidParams, params.Processing, params.KeyBytes, params.ValueBytes)
	}
	m := &Model{ring: r, params: params, paths: map[dcPair]path{}, frames: newFrameSizes(params)}
	for _, from := range r.DCs() {
		for _, to := range r.DCs() {
			spec, err := links.Link(from, to)
			if err != nil {
				return nil, fmt.Errorf("model: link %s -> %s: %w", from, to, err)
			}
			m.paths[dcPair{from, to}] = path{oneWay: spec.Latency + spec.Jitter/2, bandwidthBps: spec.BandwidthBps}
		}
	}
	return m, nil
}

// Prediction is the model's answer for one coordinator, operation and level.
type Prediction struct {
	// Coordinator and DC name the node the requests go to.
	Coordinator, DC string
	// Op, Level and Strategy are the question: which requests, at which level, for keys
	// placed by which replication.
	Op       Op
	Level    consistency.Level
	Strategy ring.Strategy
	// P is paper 002's p: the share of the key space for which the request must wait on
	// a reply from outside the coordinator's DC (the ranges marked Remote). With one node
	// per DC, as in the paper's first setup, it is the paper's "other node" rate.
	P float64
	// Latency is the mean over the key space that can meet the level; LatencyMax is the
	// slowest range's.
	Latency, LatencyMax time.Duration
	// RoundTrips is how many times the request waits for the level's replies: 1, or for a
	// lightweight transaction 2 (prepare, which also reads; propose: the commit is not
	// waited for), for a serial read 1 (prepare).
	RoundTrips int
	// UnavailableShare is the share of the key space whose replicas can never meet the
	// level (LOCAL_ONE with no local replica, TWO with one replica).
	UnavailableShare float64
	// Ranges holds the per-range detail, in ring order.
	Ranges []RangePrediction
}

// Available reports whether any part of the key space can meet the level.
func (p Prediction) Available() bool {
	for _, r := range p.Ranges {
		if !r.Unavailable {
			return true
		}
	}
	return false
}

// RangePrediction is the model's answer for one token range.
type RangePrediction struct {
	Range ring.Range
	// Share is the range's fraction of the key space.
	Share float64
	// Replicas lists the range's replicas in placement order, primary first.
	Replicas []string
	// Awaited lists the replicas whose replies complete the request: the acknowledgements
	// that meet the level for a write, the replicas asked for a read.
	Awaited []string
	// Latency is Processing plus the wait for the last awaited reply, for each round trip.
	Latency time.Duration
	// Remote is true when the level cannot be met by replicas in the coordinator's DC
	// alone, so the request must wait on a reply from another DC whatever the latencies.
	Remote bool
	// Unavailable is true when the replicas can never meet the level.
	Unavailable bool
}

// Predict computes the latency of op at level cl for keys placed by s, coordinated by the
// node with id coordinator, assuming every replica is up.
func (m *Model) Predict(coordinator string, s ring.Strategy, cl consistency.Level, op Op) (Prediction, error) {
	self, ok := m.ring.Member(coordinator)
	if !ok {
		return Prediction{}, fmt.Errorf("%w: %q", ErrUnknownCoordinator, coordinator)
	}
	if op != Write && op != Read {
		return Prediction{}, fmt.Errorf("%w: %v", ErrUnknownOp, op)
	}
	if op == Read && cl == consistency.Any {
		return Prediction{}, ErrReadAtAny
	}
	if err := s.Validate(m.ring); err != nil {
		return Prediction{}, fmt.Errorf("model: replication %s: %w", s, err)
	}
	placement := m.ring.Placement(s)
	pred := Prediction{Coordinator: self.ID, DC: self.DC, Op: op, Level: cl, Strategy: s, RoundTrips: 1}
	if cl.IsSerial() && op == Write {
		pred.RoundTrips = 2
	}
	var availableShare, weightedNanos, remoteShare float64
	for _, rg := range m.ring.Ranges() {
		rp := m.predictRange(self, placement.ReplicasFor(rg.End), cl, op)
		rp.Range, rp.Share = rg, rg.Fraction()
		pred.Ranges = append(pred.Ranges, rp)
		if rp.Unavailable {
			pred.UnavailableShare += rp.Share
			continue
		}
		availableShare += rp.Share
		weightedNanos += rp.Share * float64(rp.Latency)
		if rp.Remote {
			remoteShare += rp.Share
		}
		pred.LatencyMax = max(pred.LatencyMax, rp.Latency)
	}
	if availableShare > 0 {
		pred.Latency = time.Duration(math.Round(weightedNanos / availableShare))
		pred.P = remoteShare / availableShare
	}
	return pred, nil
}

// predictRange computes one range's latency: which replies the coordinator waits for and
// when the last of them arrives.
func (m *Model) predictRange(self ring.Member, replicas []ring.Member, cl consistency.Level, op Op) RangePrediction {
	rp := RangePrediction{Replicas: memberIDs(replicas)}
	dcs := make([]string, len(replicas))
	for i, r := range replicas {
		dcs[i] = r.DC
	}
	counts := consistency.Counts(dcs)
	required := cl.Require(counts, self.DC)
	if cl.IsSerial() {
		return m.predictSerial(self, replicas, counts, required, cl, op, rp)
	}
	if !required.Hinted && !required.Satisfied(counts) {
		rp.Unavailable = true
		return rp
	}
	var awaited []reply
	if op == Write {
		awaited = awaitedAcks(m.replies(self, replicas, m.frames.writeRequest, m.frames.writeResponse), required)
	} else {
		awaited = m.replies(self, m.readAsked(self, replicas, required), m.frames.readRequest, m.frames.readResponse)
	}
	var wait time.Duration
	for _, r := range awaited {
		wait = max(wait, r.at)
		rp.Awaited = append(rp.Awaited, r.member.ID)
	}
	rp.Latency = m.params.Processing + wait
	// Whether the request must cross depends on the placement only, not on which reply
	// happens to arrive first: p stays the paper's at any delay, 0 included.
	rp.Remote = !required.Satisfied(map[string]int{self.DC: counts[self.DC]})
	return rp
}

// predictSerial computes one range's latency at a serial level, as coord runs a
// lightweight transaction that meets no other on its key: each phase is a request to
// every acceptor (every replica for SERIAL, those of the coordinator's DC for
// LOCAL_SERIAL) that waits for the level's quorum of them, and costs Processing besides.
// A transaction waits for two phases, prepare (which also reads the key) and propose;
// its commit, sent once the proposal is chosen, is not waited for; a serial read is the
// prepare alone. Cassandra's Paxos v1 reads in a separate round trip and waits for the
// commit: four, and two for a serial read.
func (m *Model) predictSerial(self ring.Member, replicas []ring.Member, counts map[string]int, required consistency.Requirement,
	cl consistency.Level, op Op, rp RangePrediction) RangePrediction {
	acceptors := replicas
	if cl == consistency.LocalSerial {
		acceptors = nil
		for _, r := range replicas {
			if r.DC == self.DC {
				acceptors = append(acceptors, r)
			}
		}
	}
	inDC := map[string]int{}
	for _, a := range acceptors {
		inDC[a.DC]++
	}
	if !required.Satisfied(inDC) {
		rp.Unavailable = true
		return rp
	}
	type phase struct {
		members                     []ring.Member
		required                    consistency.Requirement
		requestBytes, responseBytes int
	}
	phases := []phase{{acceptors, required, m.frames.prepareRequest, m.frames.prepareResponse}}
	if op == Write {
		phases = append(phases, phase{acceptors, required, m.frames.proposeRequest, m.frames.proposeResponse})
	}
	seen := map[string]bool{}
	for _, ph := range phases {
		var wait time.Duration
		for _, r := range awaitedAcks(m.replies(self, ph.members, ph.requestBytes, ph.responseBytes), ph.required) {
			wait = max(wait, r.at)
			if !seen[r.member.ID] {
				seen[r.member.ID] = true
				rp.Awaited = append(rp.Awaited, r.member.ID)
			}
		}
		rp.Latency += m.params.Processing + wait
	}
	rp.Remote = !required.Satisfied(map[string]int{self.DC: inDC[self.DC]})
	return rp
}

// reply is when one replica's answer reaches the coordinator.
type reply struct {
	member ring.Member
	rank   int // nearness class: 0 the coordinator, 1 its DC, 2 elsewhere
	index  int // order the request was sent in
	at     time.Duration
}

// replies returns when each of members answers a request the coordinator sends to all of
// them at once, in the given order. The coordinator's own answer costs no network time.
// Requests to one DC queue on the coordinator's link to it (the transport serialises
// them as a shaped interface would); each answer returns on its replica's own link.
func (m *Model) replies(self ring.Member, members []ring.Member, requestBytes, responseBytes int) []reply {
	queued := map[string]int{}
	out := make([]reply, len(members))
	for i, member := range members {
		r := reply{member: member, rank: nearness(self, member), index: i}
		if member.ID != self.ID {
			there, back := m.paths[dcPair{self.DC, member.DC}], m.paths[dcPair{member.DC, self.DC}]
			queued[member.DC]++
			r.at = time.Duration(queued[member.DC])*there.transmit(requestBytes) + there.oneWay +
				back.transmit(responseBytes) + back.oneWay
		}
		out[i] = r
	}
	return out
}

// awaitedAcks returns the write acknowledgements, in arrival order, up to the one that
// meets the requirement. Simultaneous acks count nearest first.
func awaitedAcks(replies []reply, required consistency.Requirement) []reply {
	sorted := slices.Clone(replies)
	slices.SortFunc(sorted, func(a, b reply) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.rank, b.rank), cmp.Compare(a.index, b.index))
	})
	acks := map[string]int{}
	for i, r := range sorted {
		acks[r.member.DC]++
		if required.Satisfied(acks) {
			return sorted[:i+1]
		}
	}
	return sorted
}

// readAsked returns the replicas a read asks, mirroring coord's choice: candidates
// nearest first (the coordinator, then its DC, then the others, each group by round-trip
// time, placement order breaking ties), taken in turn until those asked could meet the
// level, preferring a replica of a DC the level still needs.
func (m *Model) readAsked(self ring.Member, replicas []ring.Member, required consistency.Requirement) []ring.Member {
	candidates := slices.Clone(replicas)
	slices.SortStableFunc(candidates, func(a, b ring.Member) int {
		return cmp.Or(cmp.Compare(nearness(self, a), nearness(self, b)), cmp.Compare(m.roundTrip(self, a), m.roundTrip(self, b)))
	})
	asked := map[string]int{}
	next := 0
	for ; !required.Satisfied(asked) && next < len(candidates); next++ {
		i := next + neededIndex(candidates[next:], required, asked)
		candidates[next], candidates[i] = candidates[i], candidates[next]
		asked[candidates[next].DC]++
	}
	return candidates[:next]
}

// neededIndex returns the index of the first candidate in a DC the requirement still
// needs replies from, or 0 when no DC is specially needed.
func neededIndex(candidates []ring.Member, required consistency.Requirement, asked map[string]int) int {
	for i, c := range candidates {
		if need, ok := required.PerDC[c.DC]; ok && asked[c.DC] < need {
			return i
		}
	}
	return 0
}

// roundTrip is the round-trip time the coordinator's heartbeat would measure to member.
func (m *Model) roundTrip(self, member ring.Member) time.Duration {
	if member.ID == self.ID {
		return 0
	}
	return m.paths[dcPair{self.DC, member.DC}].oneWay + m.paths[dcPair{member.DC, self.DC}].oneWay
}

// nearness is the coordinator's proximity class of member: itself, its DC, elsewhere.
func nearness(self, member ring.Member) int {
	switch {
	case member.ID == self.ID:
		return 0
	case member.DC == self.DC:
		return 1
	default:
		return 2
	}
}

func memberIDs(members []ring.Member) []string {
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	return ids
}

// frameHeaderBytes is the transport's frame header (length, kind, type, request id) that
// every message carries in front of its payload.
const frameHeaderBytes = 4 + 1 + 1 + 8

// sizingKeyspace names the keyspace in the messages the model sizes: kura's default
// keyspace; a longer name adds a byte per character.
const sizingKeyspace = "default"

// sizingNode names the coordinator in the ballots the model sizes.
const sizingNode = "node-1"

// frameSizes are the bytes on the wire of each message of a request.
type frameSizes struct {
	writeRequest, writeResponse, readRequest, readResponse int
	// The phases of a lightweight transaction.
	prepareRequest, prepareResponse, proposeRequest, proposeResponse int
}

// newFrameSizes sizes the coordinator's messages exactly as it encodes them.
func newFrameSizes(p Params) frameSizes {
	key, value := make([]byte, p.KeyBytes), make([]byte, p.ValueBytes)
	// Any timestamp of this era encodes to the same number of bytes.
	record := &kurav1.Record{Key: key, Value: value, Timestamp: uint64(hlc.FromTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))}
	ballot := &kurav1.Ballot{Time: record.Timestamp, Node: sizingNode}
	proposal := &kurav1.PaxosProposal{Ballot: ballot, Origin: ballot, Record: record}
	// A key that has seen many transactions: its replicas answer with a full history.
	commits := make([]*kurav1.PaxosCommit, paxos.HistoryLen)
	for i := range commits {
		commits[i] = &kurav1.PaxosCommit{Ballot: ballot, Origin: ballot}
	}
	return frameSizes{
		writeRequest:  frameHeaderBytes + proto.Size(&kurav1.MutateRequest{Keyspace: sizingKeyspace, Records: []*kurav1.Record{record}}),
		writeResponse: frameHeaderBytes, // an acknowledgement has no payload
		readRequest:   frameHeaderBytes + proto.Size(&kurav1.ReadRequest{Keyspace: sizingKeyspace, Key: key}),
		readResponse:  frameHeaderBytes + proto.Size(&kurav1.ReadResponse{Found: true, Record: record}),

		prepareRequest:  frameHeaderBytes + proto.Size(&kurav1.PaxosPrepareRequest{Keyspace: sizingKeyspace, Key: key, Ballot: ballot}),
		prepareResponse: frameHeaderBytes + proto.Size(&kurav1.PaxosPrepareResponse{Promised: true, Ballot: ballot, Commits: commits, Found: true, Record: record}),
		proposeRequest:  frameHeaderBytes + proto.Size(&kurav1.PaxosProposeRequest{Keyspace: sizingKeyspace, Proposal: proposal}),
		proposeResponse: frameHeaderBytes + proto.Size(&kurav1.PaxosProposeResponse{Accepted: true, Promised: ballot}),
	}
}
