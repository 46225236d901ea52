package membership

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Application-state keys every core gossips. Values are strings so that the
// layers above (ring, power, coordinator) can add keys without touching the
// cores.
const (
	// KeyAddr is the address other nodes reach this node at.
	KeyAddr = "addr"
	// KeyDC is the node's datacenter.
	KeyDC = "dc"
	// KeyStatus is the node's Status.
	KeyStatus = "status"
	// KeyTokens is the node's ring tokens, in the ring package's encoding.
	KeyTokens = "tokens"
	// KeyLoadRows is the live rows the node holds of each ordered keyspace, as
	// "keyspace=rows,...": what parallel scans size their rounds by.
	KeyLoadRows = "load_rows"
	// KeyLoadBytes is the number of bytes the node stores.
	KeyLoadBytes = "load_bytes"
	// KeyPower is the node's power state (for the power package).
	KeyPower = "power"
)

// Status is a node's place in its life cycle, gossiped under KeyStatus.
type Status string

// The statuses a node goes through.
const (
	StatusJoining Status = "joining"
	StatusNormal  Status = "normal"
	StatusLeaving Status = "leaving"
	StatusLeft    Status = "left"
	// StatusShutdown: the node was stopped on purpose (SIGTERM) and said so
	// on its way out. It is down, not gone: it keeps its place in the
	// cluster (and its ranges on the ring) until it comes back with a newer
	// generation, unlike StatusLeft. Cores report such a member not Alive at
	// once, without waiting for their failure detectors.
	StatusShutdown Status = "shutdown"
)

// Sentinel errors.
var (
	// ErrBadConfig: a Config misses something a core needs.
	ErrBadConfig = errors.New("membership: invalid config")
	// ErrMalformed: a message could not be decoded.
	ErrMalformed = errors.New("membership: malformed message")
	// ErrUnknownProtocol: no protocol has that name.
	ErrUnknownProtocol = errors.New("membership: unknown protocol")
)

// Message is one protocol message of a core.
type Message interface {
	// Kind names the message type, for byte counters ("syn", "ack", ...).
	Kind() string
	// WireSize is len(AppendTo(nil)), computed without encoding.
	WireSize() int
	// AppendTo appends the message's binary encoding (type byte first) to b.
	AppendTo(b []byte) []byte
}

// Marshal encodes m.
func Marshal(m Message) []byte { return m.AppendTo(make([]byte, 0, m.WireSize())) }

// Outbound is a message to send to another node.
type Outbound struct {
	To  string
	Msg Message
}

// EventKind says what a core noticed.
type EventKind uint8

// The events cores report.
const (
	// EventJoined: a member this node did not know (or had removed) appeared.
	EventJoined EventKind = iota + 1
	// EventRestarted: a known member came back with a new generation.
	EventRestarted
	// EventAlive: a member thought down is up again.
	EventAlive
	// EventSuspect: this node's failure detector suspects a member.
	EventSuspect
	// EventDead: a member is considered down.
	EventDead
	// EventLeft: a member announced a graceful leave.
	EventLeft
	// EventRemoved: a long-dead or departed member was forgotten.
	EventRemoved
	// EventStateChanged: one of a member's application states changed.
	EventStateChanged
	// EventSynced: this node has received another member's view of the
	// cluster (ID names that member; this node itself when it has no other
	// seed to learn from). It comes once per core, so a node can wait for it
	// before it acts on its view of the ring.
	EventSynced
)

// String names the event kind.
func (k EventKind) String() string {
	switch k {
	case EventJoined:
		return "joined"
	case EventRestarted:
		return "restarted"
	case EventAlive:
		return "alive"
	case EventSuspect:
		return "suspect"
	case EventDead:
		return "dead"
	case EventLeft:
		return "left"
	case EventRemoved:
		return "removed"
	case EventStateChanged:
		return "state-changed"
	case EventSynced:
		return "synced"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is something a core noticed about a member.
type Event struct {
	Kind       EventKind
	ID         string
	Generation uint64
	// Key and Value are set for EventStateChanged.
	Key, Value string
}

// Ready is what a core returns from every call: messages to send and events.
type Ready struct {
	Messages []Outbound
	Events   []Event
}

// Member is one node as a core sees it.
type Member struct {
	ID         string
	DC         string
	Addr       string
	Generation uint64
	Status     Status
	// Alive is this core's verdict: not dead, not left and not shut down.
	Alive    bool
	AppState map[string]string
}

// Config is what every core needs to start.
type Config struct {
	// ID identifies the node; the transport must be able to reach it.
	ID string
	// DC is the node's datacenter.
	DC string
	// Addr is gossiped under KeyAddr.
	Addr string
	// Generation must grow each time the node restarts (Cassandra uses the
	// boot time in seconds); it tells others to drop what they knew.
	Generation uint64
	// Seeds are the nodes a new node contacts to join; may include ID.
	Seeds []string
	// AppState holds initial application states besides addr and dc
	// (status defaults to normal).
	AppState map[string]string
	// Rand is the core's only source of randomness.
	Rand *rand.Rand
	// RemoveAfter is how long a dead or departed member is kept before it is
	// forgotten; later gossip about the same generation is ignored for as
	// long again (quarantine). 0 means DefaultRemoveAfter.
	RemoveAfter time.Duration
	// View, when set, is the cluster the node starts knowing, as it saved it:
	// every member's state (generation, versions, application states, its DC
	// among them). The node counts as joined at once, so it asks no seed to
	// admit it, and it learns of changes since the view was saved by
	// anti-entropy, as any member does; its own entry comes from this Config,
	// not from the view. The members of the view are known from the start
	// (Members lists them) without an EventJoined each, and are alive until
	// the failure detectors or the gossip say otherwise. A node restarting
	// from a saved view could use it; the simulator uses it to start a
	// cluster already converged. Protocols that cannot use it reject it.
	View []EndpointState
	// Shared, when set, is what the cores of one simulated cluster share, so
	// that n cores do not each hold a copy of what is the same in all of them
	// (Protocol.NewShared makes it). Real nodes leave it nil. The Ready a
	// core of a shared cluster returns is valid until the next call to any
	// core that shares it: the caller handles it before driving another.
	Shared any
}

// DefaultRemoveAfter is Cassandra's "very long time" before a dead endpoint
// is evicted: three days.
const DefaultRemoveAfter = 72 * time.Hour

// Validate checks the fields every core relies on.
func (c *Config) Validate() error {
	switch {
	case c.ID == "":
		return fmt.Errorf("%w: empty ID", ErrBadConfig)
	case c.DC == "":
		return fmt.Errorf("%w: node %s: empty DC", ErrBadConfig, c.ID)
	case c.Rand == nil:
		return fmt.Errorf("%w: node %s: nil Rand", ErrBadConfig, c.ID)
	case c.Generation == 0:
		return fmt.Errorf("%w: node %s: generation 0", ErrBadConfig, c.ID)
	}
	return nil
}

// RemoveAfterOrDefault is RemoveAfter, or DefaultRemoveAfter when zero.
func (c *Config) RemoveAfterOrDefault() time.Duration {
	if c.RemoveAfter > 0 {
		return c.RemoveAfter
	}
	return DefaultRemoveAfter
}

// Round is the gossip round both cores' timing is written for: their
// failure detectors and timeouts count in core time, where a round lasts one
// second. A driver may run the core's clock faster than real time.
const Round = time.Second

// Core is a membership protocol as a deterministic state machine: no I/O, no
// goroutines, no clock and no randomness of its own. The driver calls Tick
// every TickInterval of core time and Step for every message that arrives,
// and sends and reports what they return.
type Core interface {
	// ID is the node's identifier.
	ID() string
	// TickInterval is how often, in core time, the driver calls Tick: Round,
	// or a fraction of it for a core whose failure detector decides between
	// rounds (Ferry's probes time out in less than a round). It is fixed for
	// the life of the core.
	TickInterval() time.Duration
	// Tick runs the core's timers at time now: a gossip round once per
	// Round, and whatever falls due between rounds.
	Tick(now time.Duration) Ready
	// Step handles a message from another node.
	Step(now time.Duration, from string, m Message) Ready
	// SetAppState changes one of the node's own application states; it
	// spreads with the next rounds.
	SetAppState(now time.Duration, key, value string) Ready
	// Leave announces a graceful leave: status left, gossiped for a few
	// rounds, after which the core goes quiet.
	Leave(now time.Duration) Ready
	// Shutdown announces that the node is stopping and will be back (a
	// restart, not a departure): status shutdown, sent at once to the
	// members the node knows best, which spread it, so that peers hold the
	// node down without waiting for their failure detectors. The core goes
	// quiet at once: the driver sends the returned messages and stops.
	Shutdown(now time.Duration) Ready
	// Members lists every member this node knows, itself included, by ID.
	Members() []Member
	// Member returns one member.
	Member(id string) (Member, bool)
}

// Protocol names a core implementation so drivers can switch by name.
type Protocol struct {
	// Name is how the CLI and benches call the protocol.
	Name string
	// New starts a core.
	New func(cfg Config) (Core, error)
	// Unmarshal decodes one of the protocol's messages.
	Unmarshal func(data []byte) (Message, error)
	// NewShared, if set, makes what the cores of one simulated cluster
	// share: the simulator passes one value to them all as Config.Shared.
	NewShared func() any
}
