package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Sentinel errors callers may need to tell apart.
var (
	// ErrNoDCs: Config.DCs is empty.
	ErrNoDCs = errors.New("no DCs configured")
	// ErrNoLinkModel: Config.Links is nil.
	ErrNoLinkModel = errors.New("no link model")
	// ErrDuplicateDC: a DC is listed twice.
	ErrDuplicateDC = errors.New("duplicate DC")
	// ErrBadLink: a LinkSpec has a negative or out-of-range field.
	ErrBadLink = errors.New("invalid link spec")
	// ErrUnknownDC: a DC not in Config.DCs.
	ErrUnknownDC = errors.New("unknown DC")
	// ErrUnknownNode: no node has this identifier.
	ErrUnknownNode = errors.New("unknown node")
	// ErrDuplicateNode: a node with this identifier was already added.
	ErrDuplicateNode = errors.New("duplicate node")
	// ErrNodeDown: the node is crashed.
	ErrNodeDown = errors.New("node is down")
	// ErrNodeUp: Restart of a node that is running.
	ErrNodeUp = errors.New("node is up")
)

// Message is a protocol message as the simulator sees it: only its size.
type Message interface {
	// WireSize is the length in bytes of the message's binary encoding.
	WireSize() int
}

// Envelope is a message in flight: who sends it, who receives it, and the
// kind under which its bytes are counted.
type Envelope struct {
	From, To string
	Kind     string
	Msg      Message
}

// Node is a protocol core as the simulator drives it. Both methods return the
// messages to send now; Step must not keep env.Msg beyond the call if it will
// mutate it, since the sender may still hold it.
type Node interface {
	// Step handles one message delivered at virtual time now.
	Step(now time.Duration, env Envelope) []Envelope
	// Tick is the node's periodic timer, every NodeSpec.TickInterval.
	Tick(now time.Duration) []Envelope
}

// NodeSpec places a node in the simulation.
type NodeSpec struct {
	ID string
	DC string
	// TickInterval is the period of Node.Tick; 0 means the node never ticks.
	// The first tick comes after a random phase in [0, TickInterval) so that
	// nodes do not all tick at the same instant.
	TickInterval time.Duration
}

// TraceKind says what happened to a traced message.
type TraceKind uint8

// What can happen to a message.
const (
	// TraceSent: a node returned the message.
	TraceSent TraceKind = iota
	// TraceDelivered: the message reached a live node's Step.
	TraceDelivered
	// TraceDropped: lost, blocked by a partition, or its receiver was down
	// or unknown.
	TraceDropped
)

// String names the trace kind.
func (k TraceKind) String() string {
	switch k {
	case TraceSent:
		return "sent"
	case TraceDelivered:
		return "delivered"
	case TraceDropped:
		return "dropped"
	}
	return fmt.Sprintf("TraceKind(%d)", uint8(k))
}

// Trace is one observation of a message, for tests that print a story.
type Trace struct {
	At   time.Duration
	Kind TraceKind
	Env  Envelope
}

// Config sets up a Simulator.
type Config struct {
	// Seed makes the run reproducible: same seed, same run.
	Seed uint64
	// DCs names every DC a node may be placed in.
	DCs []string
	// Links gives latency, bandwidth, jitter and loss per DC pair.
	Links LinkModel
	// Wire turns payload sizes into wire bytes; use TCPIPv4 to compare with
	// packet captures. The zero Wire counts payload only.
	Wire Wire
	// Trace, when set, sees every message sent, delivered and dropped.
	Trace func(Trace)
}

// nodeSlot is the simulator's record of one node.
type nodeSlot struct {
	spec  NodeSpec
	dc    int
	node  Node
	alive bool
	// isolated: cut off from every other node, both ways (Isolate).
	isolated bool
	// incarnation counts restarts; ticks carry it so stale ones are skipped.
	incarnation uint64
	// nicFree is when the node's NIC has sent everything queued on it.
	nicFree time.Duration
}

// Simulator runs nodes in virtual time. It is not safe for concurrent use:
// one goroutine drives it.
type Simulator struct {
	now     time.Duration
	seed    uint64
	streams uint64
	rng     *rand.Rand
	queue   eventQueue
	net     *Network
	nodes   []nodeSlot
	byID    map[string]int
	trace   func(Trace)
}

// New builds a simulator with its network at virtual time 0.
func New(cfg Config) (*Simulator, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	net, err := newNetwork(cfg.DCs, cfg.Links, cfg.Wire, rng)
	if err != nil {
		return nil, err
	}
	return &Simulator{
		seed:  cfg.Seed,
		rng:   rng,
		net:   net,
		byID:  make(map[string]int),
		trace: cfg.Trace,
	}, nil
}

// Now is the current virtual time.
func (s *Simulator) Now() time.Duration { return s.now }

// Network is the simulated network, for partitions and counters.
func (s *Simulator) Network() *Network { return s.net }

// NewRand returns a fresh random source derived from the seed; each call
// gives another independent stream. Give one to each core.
func (s *Simulator) NewRand() *rand.Rand {
	s.streams++
	return rand.New(rand.NewPCG(s.seed, s.streams))
}

// AddNode places a running node; its first tick comes within one interval.
func (s *Simulator) AddNode(spec NodeSpec, n Node) error {
	if _, dup := s.byID[spec.ID]; dup {
		return fmt.Errorf("sim: add %q: %w", spec.ID, ErrDuplicateNode)
	}
	dc, ok := s.net.dcIndex[spec.DC]
	if !ok {
		return fmt.Errorf("sim: add %q in DC %q: %w", spec.ID, spec.DC, ErrUnknownDC)
	}
	s.byID[spec.ID] = len(s.nodes)
	s.nodes = append(s.nodes, nodeSlot{spec: spec, dc: dc, node: n, alive: true})
	s.scheduleFirstTick(len(s.nodes) - 1)
	return nil
}

// scheduleFirstTick starts node i's timer after a random phase.
func (s *Simulator) scheduleFirstTick(i int) {
	slot := &s.nodes[i]
	if slot.spec.TickInterval <= 0 {
		return
	}
	phase := time.Duration(s.rng.Int64N(int64(slot.spec.TickInterval)))
	s.queue.push(event{at: s.now + phase, kind: eventTick, node: i, incarnation: slot.incarnation})
}

// slot finds a node by identifier.
func (s *Simulator) slot(id string) (*nodeSlot, error) {
	i, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("sim: node %q: %w", id, ErrUnknownNode)
	}
	return &s.nodes[i], nil
}

// Crash stops a node: no more ticks, and messages that arrive for it are
// dropped until Restart.
func (s *Simulator) Crash(id string) error {
	slot, err := s.slot(id)
	if err != nil {
		return err
	}
	if !slot.alive {
		return fmt.Errorf("sim: crash %q: %w", id, ErrNodeDown)
	}
	slot.alive = false
	slot.incarnation++
	return nil
}

// Restart brings a crashed node back as n, a fresh core that remembers
// nothing of the old one.
func (s *Simulator) Restart(id string, n Node) error {
	slot, err := s.slot(id)
	if err != nil {
		return err
	}
	if slot.alive {
		return fmt.Errorf("sim: restart %q: %w", id, ErrNodeUp)
	}
	slot.alive = true
	slot.node = n
	s.scheduleFirstTick(s.byID[id])
	return nil
}

// Isolate cuts a running node off from every other node, both ways, as a network
// partition around it would: it keeps running, and what it sends or is sent is dropped
// until Reconnect. Messages already in flight still arrive.
func (s *Simulator) Isolate(id string) error { return s.setIsolated(id, true) }

// Reconnect ends Isolate.
func (s *Simulator) Reconnect(id string) error { return s.setIsolated(id, false) }

func (s *Simulator) setIsolated(id string, isolated bool) error {
	slot, err := s.slot(id)
	if err != nil {
		return err
	}
	slot.isolated = isolated
	return nil
}

// Alive reports whether the node exists and is not crashed.
func (s *Simulator) Alive(id string) bool {
	slot, err := s.slot(id)
	return err == nil && slot.alive
}

// DC is the DC of a node.
func (s *Simulator) DC(id string) (string, error) {
	slot, err := s.slot(id)
	if err != nil {
		return "", err
	}
	return slot.spec.DC, nil
}

// Do runs f against a live node at the current virtual time and sends the
// messages it returns: the way to inject an outside action into a core.
func (s *Simulator) Do(id string, f func(now time.Duration) []Envelope) error {
	slot, err := s.slot(id)
	if err != nil {
		return err
	}
	if !slot.alive {
		return fmt.Errorf("sim: do on %q: %w", id, ErrNodeDown)
	}
	s.send(f(s.now))
	return nil
}

// At schedules f to run at virtual time t (or now, if t is past).
func (s *Simulator) At(t time.Duration, f func()) {
	s.queue.push(event{at: max(t, s.now), kind: eventCall, call: f})
}

// After schedules f to run d from now.
func (s *Simulator) After(d time.Duration, f func()) { s.At(s.now+d, f) }

// Send puts messages on the network as if their senders had returned them;
// each From must be a known node.
func (s *Simulator) Send(envs ...Envelope) { s.send(envs) }

// send transmits envelopes returned by a node at the current time.
func (s *Simulator) send(envs []Envelope) {
	from := -1
	for i, env := range envs {
		// A node's messages all come from it: look its ID up once.
		if i == 0 || env.From != envs[i-1].From {
			var ok bool
			if from, ok = s.byID[env.From]; !ok {
				panic(fmt.Sprintf("sim: message from unknown node %q", env.From))
			}
		}
		fromDC := s.nodes[from].dc
		s.emit(TraceSent, env)
		to, ok := s.byID[env.To]
		if !ok {
			s.net.countUnroutable(fromDC, env.Kind, env.Msg.WireSize())
			s.emit(TraceDropped, env)
			continue
		}
		if s.nodes[from].isolated || s.nodes[to].isolated {
			s.emit(TraceDropped, env)
			continue
		}
		arrive, dropped := s.net.transmit(s.now, fromDC, s.nodes[to].dc, env.Kind, env.Msg.WireSize(), &s.nodes[from].nicFree)
		if dropped {
			s.emit(TraceDropped, env)
			continue
		}
		s.queue.push(event{at: arrive, kind: eventDeliver, node: to, env: env})
	}
}

// emit passes an observation to the tracer, if any.
func (s *Simulator) emit(kind TraceKind, env Envelope) {
	if s.trace != nil {
		s.trace(Trace{At: s.now, Kind: kind, Env: env})
	}
}

// Step runs the earliest event and reports whether there was one.
func (s *Simulator) Step() bool {
	if s.queue.Len() == 0 {
		return false
	}
	e := s.queue.pop()
	s.now = e.at
	switch e.kind {
	case eventCall:
		e.call()
	case eventTick:
		slot := &s.nodes[e.node]
		if !slot.alive || slot.incarnation != e.incarnation {
			return true
		}
		s.queue.push(event{at: s.now + slot.spec.TickInterval, kind: eventTick, node: e.node, incarnation: e.incarnation})
		s.send(slot.node.Tick(s.now))
	case eventDeliver:
		slot := &s.nodes[e.node]
		if !slot.alive {
			s.emit(TraceDropped, e.env)
			return true
		}
		s.emit(TraceDelivered, e.env)
		s.send(slot.node.Step(s.now, e.env))
	}
	return true
}

// RunUntil runs every event up to and including virtual time t, then sets
// the clock to t.
func (s *Simulator) RunUntil(t time.Duration) {
	for s.queue.Len() > 0 && s.queue.peekTime() <= t {
		s.Step()
	}
	s.now = max(s.now, t)
}

// RunFor runs for d of virtual time.
func (s *Simulator) RunFor(d time.Duration) { s.RunUntil(s.now + d) }
