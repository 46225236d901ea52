package chord

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"
)

// Protocol selects how a node routes and which tables it keeps.
type Protocol uint8

// The three protocols kura compares, each named as the bench prints it.
const (
	// ProtocolChord is plain Chord: global fingers only, the paper's baseline.
	ProtocolChord Protocol = iota + 1
	// ProtocolMLChordPaper is ML-Chord with the next-hop rule of the paper's Fig. 4 as
	// printed: local fingers first, global fingers when no local finger precedes the key.
	ProtocolMLChordPaper
	// ProtocolMLChord is kura's ML-Chord: the paper's two tables plus a gap list (the
	// global successor list, run on until it reaches the own DC again), with which a node
	// sends a request straight to its owner; it never makes more than one inter-DC hop.
	ProtocolMLChord
)

var protocolNames = [...]string{
	ProtocolChord:        "chord",
	ProtocolMLChordPaper: "mlchord-paper",
	ProtocolMLChord:      "mlchord",
}

// String returns the protocol's name as ParseProtocol accepts it.
func (p Protocol) String() string {
	if p >= ProtocolChord && p <= ProtocolMLChord {
		return protocolNames[p]
	}
	return fmt.Sprintf("Protocol(%d)", uint8(p))
}

// multiLayer reports whether the protocol keeps a local ring beside the global one.
func (p Protocol) multiLayer() bool { return p == ProtocolMLChordPaper || p == ProtocolMLChord }

// ErrUnknownProtocol is returned by ParseProtocol for a name it does not know.
var ErrUnknownProtocol = errors.New("chord: unknown protocol")

// ParseProtocol returns the protocol named "chord", "mlchord-paper" or "mlchord".
func ParseProtocol(name string) (Protocol, error) {
	for p := ProtocolChord; p <= ProtocolMLChord; p++ {
		if protocolNames[p] == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want chord, mlchord-paper or mlchord)", ErrUnknownProtocol, name)
}

// DefaultSuccessorListLen is Chord's r unless configured: O(log N) for clusters up to tens
// of thousands of nodes, and long enough that routing through the list cuts a third of
// the hops at 1000 nodes.
const DefaultSuccessorListLen = 16

// Config sets up a Node. Zero durations and lengths take the defaults documented on each
// field.
type Config struct {
	// Self is the node itself; its ID must fit in IDBits.
	Self     Peer
	Protocol Protocol
	// IDBits is the width m of the identifier circle; 0 means Bits (64). Tests narrow it
	// to replay the paper's 4-bit example.
	IDBits int
	// SuccessorListLen is r, the successors kept for fault tolerance; 0 means
	// DefaultSuccessorListLen. kura's mlchord keeps more on
	// its global ring when the gap to the own DC is longer, and routes through the list.
	SuccessorListLen int
	// GapListMax caps mlchord's global successor list; 0 means 1024. A DC whose gaps are
	// longer than this loses the one-inter-DC-hop bound for keys beyond the cap.
	GapListMax int
	// StabilizeInterval is the period of stabilize on each ring; 0 means 1 s.
	StabilizeInterval time.Duration
	// FixFingersInterval is the period of fix_fingers, which refreshes one finger whose
	// start lies beyond the successor per round; 0 means 1 s.
	FixFingersInterval time.Duration
	// CheckPredecessorInterval is the period of check_predecessor; 0 means 2 s.
	CheckPredecessorInterval time.Duration
	// RequestTimeout bounds the wait for an answer to GetNeighbors or Ping and for the
	// HopAck of a forwarded lookup; a peer that misses it is taken for failed. 0 means
	// 1 s; it must exceed the longest round trip.
	RequestTimeout time.Duration
	// LookupTimeout bounds one attempt of a lookup this node started; 0 means 5 s.
	LookupTimeout time.Duration
	// LookupAttempts is how many attempts a client lookup gets; 0 means 3.
	LookupAttempts int
	// SuspectFor is how long a failed or departed peer is kept out of the tables, so a
	// stale successor list from a neighbour does not bring it back; 0 means 30 s.
	SuspectFor time.Duration
	// KeepGateways makes the node keep a gateway to each DC other than its own, its
	// nearest node of that DC clockwise, learnt from its successor's answers to stabilize
	// (members.go): what a node that holds no directory needs to reach any DC.
	KeepGateways bool
	// TraceLookups makes the lookups this node starts carry their path, which
	// LookupResult.Path then reports (8 bytes per hop on the wire).
	TraceLookups bool
	// Rand is the node's only source of randomness (timer jitter); required.
	Rand *rand.Rand
}

// Errors of New and of lookups.
var (
	// ErrInvalidConfig marks a Config that New rejects.
	ErrInvalidConfig = errors.New("chord: invalid config")
	// ErrLookupTimeout is reported by a lookup whose attempts all timed out.
	ErrLookupTimeout = errors.New("chord: lookup timed out")
	// ErrNotJoined is reported by a lookup started before Join.
	ErrNotJoined = errors.New("chord: node has not joined")
)

func (c Config) withDefaults() Config {
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setDuration := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setInt(&c.IDBits, Bits)
	setInt(&c.SuccessorListLen, DefaultSuccessorListLen)
	setInt(&c.GapListMax, 1024)
	setInt(&c.LookupAttempts, 3)
	setDuration(&c.StabilizeInterval, time.Second)
	setDuration(&c.FixFingersInterval, time.Second)
	setDuration(&c.CheckPredecessorInterval, 2*time.Second)
	setDuration(&c.RequestTimeout, time.Second)
	setDuration(&c.LookupTimeout, 5*time.Second)
	setDuration(&c.SuspectFor, 30*time.Second)
	return c
}

func (c Config) validate() error {
	switch {
	case c.Self.IsZero():
		return fmt.Errorf("%w: Self has no name", ErrInvalidConfig)
	case c.Rand == nil:
		return fmt.Errorf("%w: Rand is nil", ErrInvalidConfig)
	case c.Protocol < ProtocolChord || c.Protocol > ProtocolMLChord:
		return fmt.Errorf("%w: %v", ErrInvalidConfig, c.Protocol)
	case c.IDBits < 1 || c.IDBits > Bits:
		return fmt.Errorf("%w: IDBits %d not in [1, %d]", ErrInvalidConfig, c.IDBits, Bits)
	case c.IDBits < Bits && c.Self.ID >= ID(1)<<uint(c.IDBits):
		return fmt.Errorf("%w: ID %s does not fit in %d bits", ErrInvalidConfig, c.Self.ID, c.IDBits)
	case c.SuccessorListLen < 1 || c.GapListMax < c.SuccessorListLen:
		return fmt.Errorf("%w: SuccessorListLen %d, GapListMax %d", ErrInvalidConfig, c.SuccessorListLen, c.GapListMax)
	case c.LookupAttempts < 1:
		return fmt.Errorf("%w: LookupAttempts %d", ErrInvalidConfig, c.LookupAttempts)
	}
	return nil
}

// Output is what a call into a Node produced: messages to send, and lookups that finished.
type Output struct {
	Messages []Envelope
	Lookups  []LookupResult
}

// LookupResult reports a finished client lookup.
type LookupResult struct {
	// Seq is the number Lookup returned.
	Seq uint64
	Key ID
	// Owner is the node that answered as the key's owner.
	Owner Peer
	// Successors is the owner's successor list, where the store places further replicas.
	Successors []Peer
	// Hops counts every forwarding hop of the request from the origin until it reached
	// the owner; InterDCHops those between two DCs. A hop lost to a failed peer and routed
	// around is not counted.
	Hops        int
	InterDCHops int
	// Path lists the nodes the request visited, origin first, when Config.TraceLookups.
	Path []ID
	// Err is ErrLookupTimeout or ErrNotJoined when the lookup failed.
	Err error
}

// Node is one Chord or ML-Chord node as a pure state machine in the manner of etcd's raft:
// Step takes a message, Tick the passage of time, Lookup/Join/Leave the node's own
// actions; each returns the messages to send and the lookups that finished. A Node owns no
// goroutine, socket or timer, and its only randomness is Config.Rand, so a driver (the
// simulator, or the node runtime) replays it exactly. It is not safe for concurrent use.
type Node struct {
	cfg   Config
	self  Peer
	rings [2]ringState
	// joined is set once the node is on the global ring (alone or with a successor).
	joined bool
	// left is set by Leave; a departed node ignores everything.
	left    bool
	nextSeq uint64
	// lookups are the lookups this node started and awaits an owner for, by Seq.
	lookups map[uint64]*pendingLookup
	// forwards are forwarded lookups awaiting the next hop's HopAck.
	forwards map[hopKey]pendingForward
	// requests are GetNeighbors and Ping requests awaiting an answer, by Seq.
	requests map[uint64]pendingRequest
	// suspects maps a failed or departed peer's name to the suspicion (see markFailed).
	suspects map[string]suspicion
	// joinVia lists the peers Join was given, for retrying through another.
	joinVia []Peer
	// held are lookups that reached the node before it was on a ring (see hold).
	held []heldFind
	// gateways maps each other DC to its gateway, with Config.KeepGateways.
	gateways map[string]Peer
	timers   timers
	out      Output
}

// ringState is a node's view of one ring: Chord's predecessor, successor list and fingers.
type ringState struct {
	// pred is the predecessor; zero when unknown.
	pred Peer
	// succs is the successor list, nearest first; empty when the node is alone.
	succs []Peer
	// fingers[i] is the first node at or after self + 2^i; zero when it is self or
	// unknown.
	fingers []Peer
	// nextFinger is the slot fix_fingers looks at next.
	nextFinger int
}

type pendingLookup struct {
	key      ID
	layer    Layer
	purpose  Purpose
	finger   uint8
	attempts int
	deadline time.Duration
}

// suspicion keeps a peer out of the node's tables until a time.
type suspicion struct {
	until time.Duration
	// left is set for a peer that announced its departure: only its joining again clears
	// the suspicion early, not a message it sent before leaving that arrives late.
	left bool
}

// heldFind is a lookup held until the node is on a ring, or until the origin has given up
// on it.
type heldFind struct {
	msg   Message
	until time.Duration
}

// hopKey names one forwarding hop of one lookup: a lookup passes a node at most once per
// hop count, so the triple is unique among a node's pending forwards.
type hopKey struct {
	origin string
	seq    uint64
	hops   int
}

type pendingForward struct {
	// before is the message as this node received it, to route again from here if the
	// next hop turns out to be dead.
	before   Message
	to       Peer
	deadline time.Duration
}

type requestKind uint8

const (
	requestStabilize requestKind = iota + 1
	requestWalk                  // mlchord: one more page of the gap list
	requestPing
)

type pendingRequest struct {
	kind     requestKind
	layer    Layer
	to       Peer
	deadline time.Duration
}

type timers struct {
	armed                                   bool
	stabilize, fixFingers, checkPredecessor time.Duration
}

// New returns a node that is on no ring yet; call Join, or build it with
// Layout.StableNode to start from fully stabilised tables.
func New(cfg Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:      cfg,
		self:     cfg.Self,
		lookups:  make(map[uint64]*pendingLookup),
		forwards: make(map[hopKey]pendingForward),
		requests: make(map[uint64]pendingRequest),
		suspects: make(map[string]suspicion),
		gateways: make(map[string]Peer),
	}
	for l := range n.rings {
		n.rings[l].fingers = make([]Peer, cfg.IDBits)
	}
	return n, nil
}

// Self returns the node's own peer record.
func (n *Node) Self() Peer { return n.self }

// Protocol returns the protocol the node runs.
func (n *Node) Protocol() Protocol { return n.cfg.Protocol }

// Joined reports whether the node is on the global ring: it started one, its join found
// a successor, or it was built stabilised.
func (n *Node) Joined() bool { return n.joined }

// Predecessor returns the node's predecessor on a ring; zero when unknown.
func (n *Node) Predecessor(layer Layer) Peer { return n.rings[layer].pred }

// Successors returns a copy of the node's successor list on a ring, nearest first.
func (n *Node) Successors(layer Layer) []Peer { return slices.Clone(n.rings[layer].succs) }

// Fingers returns a copy of the node's finger table on a ring; slot i is the first node
// at or after self + 2^i, zero when that is the node itself.
func (n *Node) Fingers(layer Layer) []Peer { return slices.Clone(n.rings[layer].fingers) }

// RoutingEntries returns how many distinct peers the node's tables name: what it must keep
// fresh, whatever the number of slots (its partial membership, Members).
func (n *Node) RoutingEntries() int { return len(n.Members()) }

// Join puts the node on the rings. With no peers it starts a new ring, alone. Otherwise it
// looks up its successor on the global ring through known[0] (then the others, if that
// fails) and, for the ML protocols, on its DC's local ring through the first known peer of
// its own DC; with none, it starts its local ring alone, as the paper says.
//
// A Join while one is in progress replaces the bootstraps. The lookups under way go on,
// since a bootstrap not yet on a ring holds them until it is, and then answers; but when
// the first bootstrap changed (a driver that learns of more nodes names another one
// first), the join also asks the new first one at once rather than after the lookup
// timeout of the attempt held elsewhere. A Join on a node that is on a ring but lost every
// successor reconnects it: the answer gives it a successor again.
func (n *Node) Join(now time.Duration, known ...Peer) Output {
	before := map[Layer]Peer{}
	for _, layer := range n.layers() {
		if via := n.bootstraps(layer); len(via) > 0 {
			before[layer] = via[0]
		}
	}
	n.joinVia = slices.DeleteFunc(slices.Clone(known), func(p Peer) bool { return p.Name == n.self.Name })
	if len(n.joinVia) == 0 {
		n.joined = true
		n.serveHeld(now)
		return n.flush()
	}
	for _, layer := range n.layers() {
		via := n.bootstraps(layer)
		if len(via) == 0 {
			continue // the local ring, with no bootstrap of the own DC: alone
		}
		seq, joining := n.joining(layer)
		switch {
		case !joining:
			// The successor owns the identifier right after the node's own: for a new node
			// the same as its own, and for a node the ring still counts (one cut off from
			// it) not the node itself.
			key := fingerStart(n.self.ID, 0, n.cfg.IDBits)
			n.startLookup(now, &pendingLookup{key: key, layer: layer, purpose: PurposeJoin})
		case via[0].Name != before[layer].Name:
			p := n.lookups[seq]
			p.attempts, p.deadline = 1, now+n.cfg.LookupTimeout
			n.attempt(now, seq)
		}
	}
	return n.flush()
}

// joining returns the join lookup under way on the ring, if any.
func (n *Node) joining(layer Layer) (uint64, bool) {
	for seq, p := range n.lookups {
		if p.purpose == PurposeJoin && p.layer == layer {
			return seq, true
		}
	}
	return 0, false
}

// maxHeld bounds the lookups a node not yet on a ring holds.
const maxHeld = 256

// hold keeps a lookup that reached this node before it is on a ring. Answering it now
// would name this node the owner and lead a joining node into a ring of its own; dropping
// it would leave the joining node waiting for its lookup timeout after the ring exists. A
// held lookup is served as soon as the node joins or starts the ring, which is how the
// nodes of a cluster started together all join the moment the first one founds the ring.
func (n *Node) hold(now time.Duration, m Message) {
	if len(n.held) < maxHeld {
		n.held = append(n.held, heldFind{msg: m, until: now + n.cfg.LookupTimeout})
	}
}

// serveHeld routes the lookups held while the node was not on a ring.
func (n *Node) serveHeld(now time.Duration) {
	held := n.held
	n.held = nil
	for _, h := range held {
		if now < h.until {
			n.handleFind(now, h.msg)
		}
	}
}

// Lookup starts a lookup of key from this node and returns its sequence number; the
// matching LookupResult comes in this or a later Output.
func (n *Node) Lookup(now time.Duration, key ID) (uint64, Output) {
	if !n.joined {
		n.nextSeq++
		n.out.Lookups = append(n.out.Lookups, LookupResult{Seq: n.nextSeq, Key: key, Err: ErrNotJoined})
		return n.nextSeq, n.flush()
	}
	seq := n.startLookup(now, &pendingLookup{key: key, layer: LayerGlobal, purpose: PurposeClient})
	return seq, n.flush()
}

// Leave departs gracefully: on each ring, the successor learns the node's predecessor and
// the predecessor learns its successor list, so neither waits for a timeout. The node
// ignores every later call.
func (n *Node) Leave(now time.Duration) Output {
	for l := range n.rings {
		r := &n.rings[l]
		if len(r.succs) == 0 {
			continue
		}
		m := Message{Type: MsgLeave, Layer: Layer(l), Pred: r.pred, Peers: r.succs}
		n.send(r.succs[0], m)
		if !r.pred.IsZero() && r.pred.Name != r.succs[0].Name {
			n.send(r.pred, m)
		}
	}
	n.left = true
	return n.flush()
}

// Step handles one message from another node.
func (n *Node) Step(now time.Duration, m Message) Output {
	if n.left {
		return Output{}
	}
	n.heardFrom(m)
	switch m.Type {
	case MsgFindSuccessor:
		// The purpose lets a driver tell client lookups' traffic from maintenance.
		n.send(m.From, Message{Type: MsgHopAck, Layer: m.Layer, Seq: m.Seq, Origin: m.Origin, Hops: m.Hops, Purpose: m.Purpose})
		if !n.joined {
			n.hold(now, m) // the acknowledgement keeps the sender from suspecting us
			return n.flush()
		}
		n.handleFind(now, m)
	case MsgFoundSuccessor:
		n.handleFound(now, m)
	case MsgHopAck:
		delete(n.forwards, hopKey{origin: m.Origin.Name, seq: m.Seq, hops: m.Hops})
	case MsgGetNeighbors:
		r := &n.rings[m.Layer]
		reply := Message{Type: MsgNeighbors, Layer: m.Layer, Seq: m.Seq, Pred: r.pred, Peers: r.succs}
		if m.Layer == LayerGlobal && n.cfg.KeepGateways {
			reply.Gateways = n.gatewayList()
		}
		n.send(m.From, reply)
	case MsgNeighbors:
		n.handleNeighbors(now, m)
	case MsgNotify:
		n.handleNotify(m)
	case MsgPing:
		n.send(m.From, Message{Type: MsgPong, Layer: m.Layer, Seq: m.Seq})
	case MsgPong:
		if req, ok := n.requests[m.Seq]; ok && req.to.Name == m.From.Name {
			delete(n.requests, m.Seq)
		}
	case MsgLeave:
		n.handleLeave(now, m)
	}
	return n.flush()
}

// Tick advances the node's clock: it expires requests, forwards and lookups that waited
// too long, and runs stabilize, fix_fingers and check_predecessor when they are due.
// Drivers call it often (every 100 ms, say); the protocol's periods come from Config.
func (n *Node) Tick(now time.Duration) Output {
	if n.left {
		return Output{}
	}
	n.expire(now)
	if !n.timers.armed {
		// A random first phase keeps nodes started together from stabilising in lockstep.
		n.timers = timers{
			armed:            true,
			stabilize:        now + n.jitter(n.cfg.StabilizeInterval),
			fixFingers:       now + n.jitter(n.cfg.FixFingersInterval),
			checkPredecessor: now + n.jitter(n.cfg.CheckPredecessorInterval),
		}
	}
	if !n.joined {
		return n.flush()
	}
	if now >= n.timers.stabilize {
		n.timers.stabilize = now + n.jitter(n.cfg.StabilizeInterval)
		for _, l := range n.layers() {
			n.stabilize(now, l)
		}
	}
	if now >= n.timers.fixFingers {
		n.timers.fixFingers = now + n.jitter(n.cfg.FixFingersInterval)
		for _, l := range n.layers() {
			n.fixNextFinger(now, l)
		}
	}
	if now >= n.timers.checkPredecessor {
		n.timers.checkPredecessor = now + n.jitter(n.cfg.CheckPredecessorInterval)
		for _, l := range n.layers() {
			if p := n.rings[l].pred; !p.IsZero() {
				n.request(now, p, requestPing, l, MsgPing)
			}
		}
	}
	return n.flush()
}

// layers returns the rings the node keeps.
func (n *Node) layers() []Layer {
	if n.cfg.Protocol.multiLayer() {
		return []Layer{LayerGlobal, LayerLocal}
	}
	return []Layer{LayerGlobal}
}

// jitter returns a period drawn uniformly from [0.5, 1.5) × d.
func (n *Node) jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(n.cfg.Rand.Int64N(int64(d)))
}

func (n *Node) send(to Peer, m Message) {
	m.From = n.self
	n.out.Messages = append(n.out.Messages, Envelope{To: to, Msg: m})
}

func (n *Node) flush() Output {
	out := n.out
	n.out = Output{}
	return out
}

// startLookup registers a lookup this node starts and sends its first attempt.
func (n *Node) startLookup(now time.Duration, p *pendingLookup) uint64 {
	n.nextSeq++
	seq := n.nextSeq
	p.attempts = 1
	p.deadline = now + n.cfg.LookupTimeout
	n.lookups[seq] = p
	n.attempt(now, seq)
	return seq
}

// bootstraps returns the peers Join was given that can introduce the node to a ring: any
// of them for the global ring, those of its own DC for the local one.
func (n *Node) bootstraps(layer Layer) []Peer {
	if layer == LayerGlobal {
		return n.joinVia
	}
	var local []Peer
	for _, p := range n.joinVia {
		if p.DC == n.self.DC {
			local = append(local, p)
		}
	}
	return local
}

// attempt sends one attempt of lookup seq. A join's first hop is a bootstrap node (another
// one on each attempt), since the joining node has no tables; other lookups route here.
func (n *Node) attempt(now time.Duration, seq uint64) {
	p := n.lookups[seq]
	m := Message{
		Type: MsgFindSuccessor, Layer: p.layer, From: n.self, Seq: seq, Key: p.key,
		Origin: n.self, Purpose: p.purpose, Finger: p.finger,
	}
	if n.cfg.TraceLookups {
		m.Path = []ID{n.self.ID}
	}
	if p.purpose == PurposeJoin {
		via := n.bootstraps(p.layer)
		if len(via) == 0 {
			// A later Join started the ring alone; this older join is moot.
			delete(n.lookups, seq)
			return
		}
		n.forward(now, m, via[(p.attempts-1)%len(via)], false)
		return
	}
	n.handleFind(now, m)
}

// handleFind routes a lookup that reached this node: answer it as the owner, or forward it.
func (n *Node) handleFind(now time.Duration, m Message) {
	next, final := n.route(m)
	if next.IsZero() {
		n.answer(now, m)
		return
	}
	if m.Hops >= maxHops {
		return // a routing loop among inconsistent tables; the origin will retry
	}
	n.forward(now, m, next, final)
}

// maxHops drops a request that has wandered longer than any route on a 64-bit ring.
const maxHops = 2 * Bits

// forward sends m one hop on, counting the hop, and waits for the next node's HopAck.
func (n *Node) forward(now time.Duration, m Message, next Peer, final bool) {
	before := m
	m.Hops++
	if next.DC != n.self.DC {
		m.InterDCHops++
	}
	m.Final = final
	if len(m.Path) > 0 {
		m.Path = append(slices.Clip(m.Path), next.ID)
	}
	n.forwards[hopKey{origin: m.Origin.Name, seq: m.Seq, hops: m.Hops}] = pendingForward{
		before: before, to: next, deadline: now + n.cfg.RequestTimeout,
	}
	n.send(next, m)
}

// answer tells the origin of m that this node owns its key.
func (n *Node) answer(now time.Duration, m Message) {
	r := &n.rings[m.Layer]
	reply := m
	reply.Type = MsgFoundSuccessor
	reply.Final = false
	reply.Owner = n.self
	if m.Purpose != PurposeFinger {
		// The store places replicas on the owner's successors; a joining node starts its
		// list with them. A finger needs only the owner.
		reply.Peers = r.succs[:min(len(r.succs), n.cfg.SuccessorListLen)]
	}
	if m.Origin.Name == n.self.Name {
		reply.From = n.self
		n.handleFound(now, reply)
		return
	}
	n.send(m.Origin, reply)
}

// handleFound completes a lookup this node started.
func (n *Node) handleFound(now time.Duration, m Message) {
	p, ok := n.lookups[m.Seq]
	if !ok || p.key != m.Key {
		return // an earlier attempt's late answer
	}
	delete(n.lookups, m.Seq)
	r := &n.rings[p.layer]
	switch p.purpose {
	case PurposeClient:
		n.out.Lookups = append(n.out.Lookups, LookupResult{
			Seq: m.Seq, Key: m.Key, Owner: m.Owner, Successors: slices.Clone(m.Peers),
			Hops: m.Hops, InterDCHops: m.InterDCHops, Path: m.Path,
		})
	case PurposeJoin:
		if m.Owner.Name == n.self.Name {
			return
		}
		if len(r.succs) > 0 && !inOpen(m.Owner.ID, n.self.ID, r.succs[0].ID) {
			return // stabilize found as near a successor meanwhile (the local ring's, by the gap list)
		}
		succs := n.trimSuccessors(p.layer, append([]Peer{m.Owner}, m.Peers...))
		if len(succs) == 0 {
			return // only suspects: joining "alone" would found a second ring
		}
		r.succs = succs
		n.stabilize(now, p.layer)
		// Only the global ring makes the node joined: a node on its local ring alone
		// would answer every global lookup as the owner and gather a ring of its own.
		if p.layer == LayerGlobal && !n.joined {
			n.joined = true
			n.serveHeld(now)
		}
	case PurposeFinger:
		if m.Owner.Name == n.self.Name {
			r.fingers[p.finger] = Peer{}
		} else {
			r.fingers[p.finger] = m.Owner
		}
	}
}

// expire handles everything that waited past its deadline, in a deterministic order.
func (n *Node) expire(now time.Duration) {
	maps.DeleteFunc(n.suspects, func(_ string, s suspicion) bool { return now >= s.until })
	n.held = slices.DeleteFunc(n.held, func(h heldFind) bool { return now >= h.until })
	var lateRequests []uint64
	for seq, req := range n.requests {
		if now >= req.deadline {
			lateRequests = append(lateRequests, seq)
		}
	}
	slices.Sort(lateRequests)
	for _, seq := range lateRequests {
		if req, ok := n.requests[seq]; ok && now >= req.deadline {
			delete(n.requests, seq)
			n.markFailed(now, req.to)
		}
	}
	var lateForwards []hopKey
	for k, f := range n.forwards {
		if now >= f.deadline {
			lateForwards = append(lateForwards, k)
		}
	}
	sortHopKeys(lateForwards)
	for _, k := range lateForwards {
		// Routing around an earlier failure may have re-registered the key with a fresh
		// deadline and another peer: only a forward still late counts.
		if f, ok := n.forwards[k]; ok && now >= f.deadline {
			n.markFailed(now, f.to) // routes f around the failed peer
		}
	}
	var lateLookups []uint64
	for seq, p := range n.lookups {
		if now >= p.deadline {
			lateLookups = append(lateLookups, seq)
		}
	}
	slices.Sort(lateLookups)
	for _, seq := range lateLookups {
		if p, ok := n.lookups[seq]; ok && now >= p.deadline {
			n.retryLookup(now, seq)
		}
	}
}

// retryLookup starts another attempt of a timed-out lookup, or gives up on it.
func (n *Node) retryLookup(now time.Duration, seq uint64) {
	p := n.lookups[seq]
	attempts := n.cfg.LookupAttempts
	if p.purpose == PurposeFinger {
		attempts = 1 // the next round of fix_fingers tries again
	}
	if p.attempts >= attempts {
		delete(n.lookups, seq)
		if p.purpose == PurposeClient {
			n.out.Lookups = append(n.out.Lookups, LookupResult{Seq: seq, Key: p.key, Err: ErrLookupTimeout})
		}
		return
	}
	p.attempts++
	p.deadline = now + n.cfg.LookupTimeout
	n.attempt(now, seq)
}

func sortHopKeys(keys []hopKey) {
	slices.SortFunc(keys, func(a, b hopKey) int {
		switch {
		case a.origin != b.origin:
			if a.origin < b.origin {
				return -1
			}
			return 1
		case a.seq != b.seq:
			if a.seq < b.seq {
				return -1
			}
			return 1
		}
		return a.hops - b.hops
	})
}
