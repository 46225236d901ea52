package ringchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
)

// Application states of the ring's life cycle, besides the core's status: the node
// gossips them, and reads its peers' in gossip's verdicts on their ring status.
const (
	// KeyReplaces names the dead node a new node replaces (kura server --replace).
	KeyReplaces = "replaces"
	// KeyRemoving lists the dead nodes this node is removing, as id@generation: every
	// node treats them as leaving, so their ranges are streamed to their new owners.
	KeyRemoving = "removing"
	// KeyRemoved lists the nodes this node removed, as id@generation, for good.
	KeyRemoved = "removed"
	// KeyNewData says the node started this life with an empty data dir and has not
	// streamed into it yet. A member that holds it on the ring under an older generation
	// then knows it lost its data, even while it calls itself normal (it was started
	// without seeds, as the first node of a new cluster would be), and reads nothing from
	// it until it has rebuilt.
	KeyNewData = "new_data"
	// KeyBorn is the generation of the life that began the node's data dir
	// (cluster.Node.Born): a removal mark of an earlier data dir does not apply to it.
	KeyBorn = "born"
)

// RingDelayRounds is how many gossip rounds a node waits after announcing a ring change
// before it streams: time for every coordinator to learn the change, so that no write
// misses both the stream and the pending replica (Cassandra's RING_DELAY, 30 s).
const RingDelayRounds = 5

// streamAskRingDelays is how many ring delays a moving node waits for a gainer's answer
// to one request to stream before it asks again. A request may be lost (a one-way cut
// drops it while gossip still holds the gainer up), and the mover would wait for ever;
// asked again, a gainer already pulling the move's ranges answers with that pull's result
// (gainJob), so a long stream is only asked about, not started twice.
const streamAskRingDelays = 6

// Config configures a Changer: the node's own settings that its ring changes depend on.
type Config struct {
	// ID is the node's id; required.
	ID string
	// Replace names the dead node this one takes the place of (kura server --replace),
	// its tokens included; "" for none.
	Replace string
	// Founding says the node was started with its cluster's founding list: it trusts its
	// ring at once, with nobody to ask.
	Founding bool
	// Fresh says the node started with no ring of its own (an empty data dir): a new
	// node, or one that lost its data.
	Fresh bool
	// Seeded says the node was given seeds or peers other than itself: someone to learn
	// the ring from.
	Seeded bool
	// Named are the nodes named with addresses up front (a topology file): a founding
	// node with an empty data dir asks them whether it was a member (CheckLostData).
	Named []cluster.Node
	// Vnodes is the tokens per node a replaced node's tokens are drawn with; 0 means
	// ring.DefaultVnodes.
	Vnodes int
	// GossipInterval is one gossip round, the pace of every wait for the cluster to
	// change; required.
	GossipInterval time.Duration
	// RingDelay is the wait after announcing a ring change before streaming; 0 means
	// RingDelayRounds gossip rounds.
	RingDelay time.Duration
	// AbortJoinAfter is how long a joining node that names this one its arbiter stays
	// dead before this node aborts its join (ArbitrateJoins); 0 means
	// DefaultAbortJoinAfter, NeverAbortJoin never. It is at least six ring delays.
	AbortJoinAfter time.Duration
	// Logger is where the changes are told; nil means slog.Default().
	Logger *slog.Logger
}

// Directory is the node's cluster directory as ring changes read and write it;
// *cluster.Directory is one.
type Directory interface {
	View
	Self() cluster.Node
	Node(id string) (cluster.Node, bool)
	SetSelf(status cluster.Status, tokens []uint64) error
	Trusted() bool
	SetTrusted()
	Learn(e cluster.RingEntry) (bool, error)
	LearnDeparture(e cluster.RingEntry) (bool, error)
	Forget(id string) (bool, error)
}

// Gossip is what a ring change tells the cluster through the node's gossip.
type Gossip interface {
	// SetRingStatus gossips the node's ring status and, unless tokens is empty, its
	// tokens.
	SetRingStatus(status cluster.Status, tokens []uint64)
	// SetAppState gossips one of the node's application states (KeyNewData).
	SetAppState(key, value string)
	// MarkRemoving starts (on) or ends gossiping that this node removes dead
	// (KeyRemoving).
	MarkRemoving(dead cluster.Node, on bool)
	// MarkRemoved gossips that this node removed dead, for good (KeyRemoved).
	MarkRemoved(dead cluster.Node)
	// Generation is the generation the node gossips under in this life.
	Generation() uint64
	// Member returns another member as gossip holds it, its application states
	// included (a joiner's arbiter, an arbiter's promises).
	Member(id string) (membership.Member, bool)
}

// Peers makes a ring change's calls to other nodes; the node binds each to its message
// kind, so that this package depends on no transport.
type Peers interface {
	// PullRing asks node to for its ring, as to's HandleRingPull answers.
	PullRing(ctx context.Context, to cluster.Node) ([]byte, error)
	// StreamGains asks node to to pull the ranges it gains from a moving node, as to's
	// HandleStreamGains answers req.
	StreamGains(ctx context.Context, to cluster.Node, req []byte) ([]byte, error)
}

// Streamer pulls the ranges this node gains; the node's stream.Streamer is one, through
// a conversion of its Stats.
type Streamer interface {
	// Gain pulls every range this node gains on the ring as it changes now (all it
	// holds, when rebuilding), never from node exclude.
	Gain(ctx context.Context, exclude string) (Stats, error)
	// WaitingFor names the holders that a range being pulled now waits for (down, and
	// needed); empty while none waits.
	WaitingFor() []string
}

// Moves tells who takes part in the ring change in progress.
type Moves interface {
	// Gainers returns the ids of the nodes that gain a range, over every keyspace, in any
	// order.
	Gainers() ([]string, error)
	// Replications returns every replicated keyspace's replication (ShortOfReplicas).
	Replications() ([]Replication, error)
	// MovingKeyspaces returns the names of the keyspaces moving to a new placement
	// (NoKeyspaceMoves), sorted.
	MovingKeyspaces() []string
}

// Promises keeps the joins this node promised as their arbiter (JoinWatch.Marks) on
// its disk: a joiner turns normal on a promise, so an arbiter that restarted and forgot
// it could abort a node that owns its ranges by now. The node's ringstore.Store is one.
type Promises interface {
	// SavePromises replaces the saved marks (node id to generation) with marks, synced
	// before it returns.
	SavePromises(marks map[string]uint64) error
	// LoadPromises returns the marks saved last; none when nothing was.
	LoadPromises() (map[string]uint64, error)
}

// Parts are what a Changer works through; all are required.
type Parts struct {
	Directory Directory
	Gossip    Gossip
	Peers     Peers
	Streamer  Streamer
	Moves     Moves
	Promises  Promises
}

// Stats counts what a node streamed. It holds stream.Stats' counts, with the same JSON
// names, so that this package does not import stream (which reaches the storage engine
// through replica): the node converts one to the other.
type Stats struct {
	Ranges       int   `json:"ranges"`
	Records      int64 `json:"records"`
	Bytes        int64 `json:"bytes"`
	CrossDCBytes int64 `json:"cross_dc_bytes"`
}

// MoveStats is what a decommission or removal streamed.
type MoveStats struct {
	Gainers []string
	Stats
	Took time.Duration
}

// Changer runs the ring's life cycle on one node: it takes the node to normal when it
// starts (joining, replacing or rebuilding as it must), decommissions it, removes dead
// nodes, and answers its peers' ring pulls and requests to stream.
type Changer struct {
	cfg   Config
	parts Parts
	log   *slog.Logger
	// askedMembership is closed once the node knows whether it was a member before: at
	// once, unless it is a new node that took itself for the first of a new cluster
	// (no seeds), until a peer it hears of says (checkMembership).
	askedMembership chan struct{}

	// gainsMu guards gains: this node's pulls of its gains from moving nodes, by the
	// move they answer (gainKey), each shared by the requests that ask for it.
	gainsMu sync.Mutex
	gains   map[string]*gainJob

	// booting watches the booting nodes that died, for ForgetDeadBooting; only its
	// loop uses it.
	booting BootingWatch
	// joinsMu guards joins, this node's memory of the joins it arbitrates: its
	// ArbitrateJoins loop and an operator's abort (abortByOperator) decide under it.
	joinsMu sync.Mutex
	joins   JoinWatch
	// savedMarks are the promises last saved (Parts.Promises), gossipedMarks those last
	// gossiped (KeyJoinPromised), both as FormatMarks writes them; joinsMu guards them.
	savedMarks, gossipedMarks string
	// arbiter is the node this one named to decide on its join (JoinArbiter); only
	// Join's goroutine uses it.
	arbiter string
}

// New returns the ring changer of node cfg.ID.
func New(cfg Config, parts Parts) (*Changer, error) {
	switch {
	case cfg.ID == "":
		return nil, errors.New("ringchange: the node's id is required")
	case cfg.GossipInterval <= 0:
		return nil, errors.New("ringchange: the gossip interval is required")
	case parts.Directory == nil || parts.Gossip == nil || parts.Peers == nil || parts.Streamer == nil || parts.Moves == nil || parts.Promises == nil:
		return nil, errors.New("ringchange: every part is required")
	}
	if cfg.RingDelay <= 0 {
		cfg.RingDelay = RingDelayRounds * cfg.GossipInterval
	}
	switch least := abortJoinMinRingDelays * cfg.RingDelay; {
	case cfg.AbortJoinAfter == 0:
		cfg.AbortJoinAfter = DefaultAbortJoinAfter
	case cfg.AbortJoinAfter < 0 && cfg.AbortJoinAfter != NeverAbortJoin:
		return nil, fmt.Errorf("ringchange: abort-join-after %v is negative", cfg.AbortJoinAfter)
	case cfg.AbortJoinAfter > 0 && cfg.AbortJoinAfter < least:
		return nil, fmt.Errorf("ringchange: abort-join-after %v is shorter than six ring delays (%v): a joiner restarting, or gossip flapping, would lose its join", cfg.AbortJoinAfter, least)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// A node that cannot read what it promised refuses to start rather than abort a join
	// it promised.
	marks, err := parts.Promises.LoadPromises()
	if err != nil {
		return nil, fmt.Errorf("ringchange: load the joins this node promised: %w", err)
	}
	c := &Changer{cfg: cfg, parts: parts, log: cfg.Logger, askedMembership: make(chan struct{}), gains: map[string]*gainJob{},
		joins: NewJoinWatch(marks), savedMarks: FormatMarks(marks)}
	if !c.firstOfNewCluster() {
		close(c.askedMembership)
	}
	return c, nil
}

// RingDelay is the wait after announcing a ring change before streaming, so that every
// node has learned it.
func (c *Changer) RingDelay() time.Duration { return c.cfg.RingDelay }

// AskedMembership is closed once the node knows whether it was a member before: until
// then a node that took itself for the first of a new cluster pulls no keyspace from
// its peers, so that it serves nothing of theirs from an empty disk.
func (c *Changer) AskedMembership() <-chan struct{} { return c.askedMembership }

// SetStatus persists and gossips the node's ring status. A node that left or was
// removed stays so: a join or rebuild still running then must not put it back.
func (c *Changer) SetStatus(status cluster.Status, tokens []uint64) {
	dir := c.parts.Directory
	if cur := dir.Self().Status; (cur == cluster.StatusLeft || cur == cluster.StatusRemoved) && status != cur {
		c.log.Warn("not a member any more: the ring status stays", "status", cur, "refused", status)
		return
	}
	if err := dir.SetSelf(status, tokens); err != nil {
		c.log.Error("persist the ring status", "status", status, "err", err)
	}
	c.parts.Gossip.SetRingStatus(status, tokens)
	c.log.Info("ring status", "status", status)
}

// forgetBootingRingDelays is how many ring delays a booting node stays down before it is
// forgotten (ForgetDeadBooting): six of kura's default ring delay (five 1 s rounds) are
// the 30 s after which Cassandra drops a fat client. A node restarted in that time is
// not forgotten; one forgotten and started later is heard of again.
const forgetBootingRingDelays = 6

// ForgetDeadBooting drops from the directory the booting nodes that have been down
// for forgetBootingRingDelays ring delays (BootingWatch); the node calls it once a
// gossip round.
func (c *Changer) ForgetDeadBooting(context.Context) {
	dir := c.parts.Directory
	after := forgetBootingRingDelays * c.cfg.RingDelay
	for _, id := range c.booting.Gone(dir, c.cfg.ID, time.Now(), after) {
		if _, err := dir.Forget(id); err != nil {
			c.log.Error("forget a booting node that died", "node", id, "err", err)
			continue
		}
		c.log.Info("forgot a booting node down this long: it never took tokens", "node", id, "down_for", after)
	}
}

// checkNoMoves refuses a ring change while another is in progress, but for those of the
// nodes named (NoMoves), or while a keyspace moves (NoKeyspaceMoves).
func (c *Changer) checkNoMoves(except ...string) error {
	if err := NoMoves(c.parts.Directory, except...); err != nil {
		return err
	}
	return NoKeyspaceMoves(c.parts.Moves.MovingKeyspaces())
}

// giveWayToKeyspaces is run a ring delay after this node announced its ring change: a
// keyspace move announced meanwhile, which the change could not see when it started,
// makes it give way (ErrOverlap), as the move gives way to it (the rebalancer checks
// for ring changes a ring delay after announcing its own): each saw what the other
// announced first, so at least one of the two gives way, and neither streams under a
// placement the other is changing.
func (c *Changer) giveWayToKeyspaces() error {
	if err := NoKeyspaceMoves(c.parts.Moves.MovingKeyspaces()); err != nil {
		return fmt.Errorf("%w: it started at the same time as a keyspace's move: %w", ErrOverlap, err)
	}
	return nil
}

// FormatMarks writes a KeyRemoving or KeyRemoved list: id@generation, sorted by id.
func FormatMarks(marks map[string]uint64) string {
	parts := make([]string, 0, len(marks))
	for id, gen := range marks {
		parts = append(parts, id+"@"+strconv.FormatUint(gen, 10))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// ParseMarks reads what FormatMarks wrote, skipping malformed entries.
func ParseMarks(s string) map[string]uint64 {
	out := map[string]uint64{}
	for _, part := range strings.Split(s, ",") {
		id, gen, ok := strings.Cut(part, "@")
		if !ok {
			continue
		}
		g, err := strconv.ParseUint(gen, 10, 64)
		if err == nil {
			out[id] = g
		}
	}
	return out
}
