// Package cluster holds a node's view of the cluster: which nodes exist, where they
// listen, which datacenter they are in, where they stand on the ring (joining, normal,
// leaving, left, removed) and which of them are reachable now. Gossip membership writes
// into a Directory, which persists the ring through a Store (package ringstore keeps it
// in the node's own storage), so that a restarted node starts from its last ring; the
// coordinator and the client API only read it through View.
package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/ring"
)

// Node is a member of the cluster as the directory knows it.
type Node struct {
	ID         string
	DC         string
	Addr       string // node-to-node transport address
	ClientAddr string // gRPC client API address; empty when the node serves none
	// Tokens are the node's ring positions when chosen by hand (experiments that need
	// evenly spaced tokens, or a replacement taking a dead node's place); empty means the
	// positions derived from the id.
	Tokens []uint64
	// Status is where the node stands on the ring, as it announced it (or, for a removed
	// node, as an operator decided).
	Status Status
	// Replaces names the dead node whose tokens this one takes over (kura server
	// --replace); the dead node leaves the ring once this one is normal.
	Replaces string
	// Generation is the node's gossip generation when this entry was learned: a removed
	// node stays removed until it comes back with a newer one.
	Generation uint64
	// Born is the generation of the life that began the node's data dir (its first start
	// on an empty one), which every later life on that data dir gossips: a removal of an
	// earlier life covers the data dir's later lives, not a data dir begun since (the
	// node wiped and started again, a new node under the same id). 0 is unknown: a data
	// dir begun by a build that kept none, or an entry learned before it was heard.
	Born uint64
	// Tier is the node's power tier (kura server --power-tier): 0 never sleeps, 1 and
	// above may sleep; the ring keeps one tier-0 replica of every range.
	Tier int
}

// RingTokens returns the node's ring positions: those it was given, or else vnodes
// positions derived from its id.
func (n Node) RingTokens(vnodes int) []ring.Token {
	if len(n.Tokens) == 0 {
		return ring.TokensFor(n.ID, vnodes)
	}
	tokens := make([]ring.Token, len(n.Tokens))
	for i, t := range n.Tokens {
		tokens[i] = ring.Token(t)
	}
	return tokens
}

// Equal reports whether two entries are identical.
func (n Node) Equal(o Node) bool {
	return n.ID == o.ID && n.DC == o.DC && n.Addr == o.Addr && n.ClientAddr == o.ClientAddr && slices.Equal(n.Tokens, o.Tokens) &&
		n.Status == o.Status && n.Replaces == o.Replaces && n.Generation == o.Generation && n.Born == o.Born && n.Tier == o.Tier
}

// RemovalCovers reports whether a removal of the node at generation gen (kura node
// remove, an aborted join or a completed replacement, gossiped as id@gen) applies to the
// life this entry holds. It applies to the removed life, to every earlier one, and to
// every later life on the same data dir (restarted, not wiped), which holds what the
// removed life held and, for an aborted joiner, streamed under a join that no longer
// counts. A data dir begun after gen is a new node that may join. Born unknown counts
// as the same data dir: when in doubt, the removal stands.
func (n Node) RemovalCovers(gen uint64) bool { return n.Born == 0 || n.Born <= gen }

// Status is a node's place on the ring. It is independent of liveness: a normal node may
// be down, and stays on the ring, so its replicas do not move.
type Status uint8

// The ring statuses, in the order a node goes through them. The zero value is normal, so
// nodes known up front (a topology file, an in-process cluster) own their ranges.
const (
	// StatusNormal: owns its ranges.
	StatusNormal Status = iota
	// StatusJoining: has claimed its tokens and is streaming the ranges it gains. It
	// receives writes for them as a pending replica and serves no reads.
	StatusJoining
	// StatusLeaving: streaming its ranges to the nodes that take them over; it still
	// serves reads and writes, and those nodes receive its writes as pending replicas.
	StatusLeaving
	// StatusLeft: decommissioned; off the ring.
	StatusLeft
	// StatusRemoved: a dead node an operator removed (or a replacement took over); off
	// the ring.
	StatusRemoved
	// StatusBooting: a new node still learning the ring from its seeds, before it claims
	// tokens; off the ring.
	StatusBooting
	// StatusRebuilding: a member that came back with its data lost (a wiped or replaced
	// disk) and pulls its ranges from the other replicas. It stays on the ring with its
	// tokens, so no range moves; it takes writes that count and serves no reads.
	StatusRebuilding
)

var statusNames = [...]string{"normal", "joining", "leaving", "left", "removed", "booting", "rebuilding"}

// String names the status as gossip and status pages carry it.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ParseStatus reads a status name; the empty string is normal.
func ParseStatus(name string) (Status, error) {
	if name == "" {
		return StatusNormal, nil
	}
	for i, n := range statusNames {
		if n == name {
			return Status(i), nil
		}
	}
	return 0, fmt.Errorf("unknown ring status %q", name)
}

// OnRing reports whether a node of this status owns ranges now (its current replicas).
func (s Status) OnRing() bool {
	return s == StatusNormal || s == StatusLeaving || s == StatusRebuilding
}

// WillOwn reports whether a node of this status owns ranges once the moves in progress
// complete.
func (s Status) WillOwn() bool {
	return s == StatusNormal || s == StatusJoining || s == StatusRebuilding
}

// State is what a node is doing as far as the data path is concerned. The coordinator
// decides per state: whom to ask for reads, whom to write to, whose writes to hint.
type State uint8

// The states of a node. The zero value is StateDown, so a node nobody vouched for is
// never asked.
const (
	// StateDown: not reachable. Skipped without waiting; its writes are hinted.
	StateDown State = iota
	// StateUp: serves reads and writes.
	StateUp
	// StateJoining: taking over ranges. It gets writes as a pending replica, in addition
	// to the current ones (the level is raised by one for it), and serves no reads.
	StateJoining
	// StateLeaving: handing its ranges over. It still serves reads and writes.
	StateLeaving
	// StateAsleep: powered down on purpose. Skipped at once; its writes are hinted for
	// it (offloaded) until it wakes.
	StateAsleep
	// StateRebuilding: pulling back the data it lost. Its acknowledgements of writes
	// count, and it serves no reads: a read quorum then comes from the other replicas,
	// which hold every write the level acknowledged (W + R > RF still holds without it).
	StateRebuilding
	// StateDraining: about to sleep (paper 003). Its acknowledgements of writes count,
	// so a coordinator that has not learned the change yet loses nothing by writing to
	// it, and it serves no reads, so that nobody reads from it once it sleeps.
	StateDraining
	// StateWaking: back from sleep, taking the writes offloaded for it while it slept.
	// Its acknowledgements of writes count; it serves no reads until it has them all.
	StateWaking
)

// String names the state as status pages print it.
func (s State) String() string {
	switch s {
	case StateDown:
		return "down"
	case StateUp:
		return "up"
	case StateJoining:
		return "joining"
	case StateLeaving:
		return "leaving"
	case StateAsleep:
		return "asleep"
	case StateRebuilding:
		return "rebuilding"
	case StateDraining:
		return "draining"
	case StateWaking:
		return "waking"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Readable reports whether a node in this state may be asked for reads.
func (s State) Readable() bool { return s == StateUp || s == StateLeaving }

// Writable reports whether a node in this state takes writes that count for a level.
func (s State) Writable() bool {
	return s == StateUp || s == StateLeaving || s == StateRebuilding || s == StateDraining || s == StateWaking
}

// Pending reports whether a node in this state takes writes that do not count for a
// level: it is still receiving the ranges it will own.
func (s State) Pending() bool { return s == StateJoining }

// Reachable reports whether the node answers messages at all.
func (s State) Reachable() bool { return s != StateDown && s != StateAsleep }

// View is the read side of the directory.
type View interface {
	// Self is the node this view belongs to.
	Self() Node
	// Nodes returns every known node, the local one included, sorted by id.
	Nodes() []Node
	// Node looks up one node.
	Node(id string) (Node, bool)
	// State reports what a node is doing: its liveness, then its ring status (joining,
	// leaving); an unknown node, and a node off the ring, is StateDown, and the local node
	// is StateUp unless it was set otherwise.
	State(id string) State
	// Trusted reports whether the view is complete enough to coordinate on: loaded from
	// the persisted ring, or learned from a seed. Until then requests are refused.
	Trusted() bool
	// Power reports where a node stands in its power cycle, as it gossips it; the zero
	// value (active, no holders) for a node that never slept.
	Power(id string) Power
	// Version changes whenever the set of nodes or their addresses change (not liveness),
	// so readers can cache what they derive from Nodes, such as the token ring.
	Version() uint64
}

// Directory is a concurrency-safe, writable View.
type Directory struct {
	store Store // nil keeps the ring in memory only

	selfID string // never changes; read without mu

	mu      sync.RWMutex
	self    Node
	nodes   map[string]Node
	states  map[string]State // liveness: up, down or asleep (or a state set by hand)
	power   map[string]Power
	version uint64
	sorted  []Node // cached Nodes(); nil after a change
	trusted bool
}

// NewDirectory returns an in-memory directory that knows only self, trusted from the start
// (a cluster whose members are all given up front).
func NewDirectory(self Node) *Directory {
	return &Directory{
		selfID:  self.ID,
		self:    self,
		nodes:   map[string]Node{self.ID: self},
		states:  map[string]State{self.ID: StateUp},
		power:   map[string]Power{},
		trusted: true,
	}
}

// ErrMovedDC refuses a node started with another DC than its data dir records: the
// replicas its tokens hold are its old DC's, and taking them into another DC would
// move copies between DCs with nothing streamed (Cassandra refuses the same).
var ErrMovedDC = errors.New("a node cannot change its DC")

// Open returns a directory persisted in store. The nodes stored before a restart come
// back, down until they are heard from, and self takes its stored status and tokens (a
// node that restarts mid-join is still joining). The directory is trusted when the store
// knew other nodes; otherwise the caller trusts it once it has learned the ring from a
// seed (SetTrusted).
func Open(self Node, store Store) (*Directory, error) {
	stored, err := store.Nodes()
	if err != nil {
		return nil, fmt.Errorf("load ring: %w", err)
	}
	d := NewDirectory(self)
	d.store, d.trusted = store, false
	for _, n := range stored {
		if n.ID == self.ID {
			if n.DC != "" && n.DC != self.DC {
				return nil, fmt.Errorf("%w: node %s is in DC %s (its data dir says so) and was started with --dc %s: start it with --dc %s; to move it to %s, decommission it (or remove it) and start it there with an empty data dir",
					ErrMovedDC, self.ID, n.DC, self.DC, n.DC, self.DC)
			}
			// The tier, like the tokens, is the one the node first started with: it
			// decided where replicas live.
			d.self.Status, d.self.Replaces, d.self.Tier, d.self.Born = n.Status, n.Replaces, n.Tier, n.Born
			if len(n.Tokens) > 0 {
				d.self.Tokens = n.Tokens
			}
			continue
		}
		d.nodes[n.ID] = n
		d.states[n.ID] = StateDown
		d.trusted = true
	}
	d.nodes[self.ID] = d.self
	if err := store.SaveNode(d.self); err != nil {
		return nil, fmt.Errorf("store ring: %w", err)
	}
	return d, nil
}

// Self returns the local node.
func (d *Directory) Self() Node {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.self
}

// Trusted reports whether the view may be coordinated on.
func (d *Directory) Trusted() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.trusted
}

// SetTrusted marks the view complete enough to coordinate on.
func (d *Directory) SetTrusted() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.trusted = true
}

// SetSelf changes the local node's ring status and tokens (joining, then normal; leaving,
// then left) and persists it before returning.
func (d *Directory) SetSelf(status Status, tokens []uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.self
	n.Status, n.Tokens = status, tokens
	if n.Equal(d.self) {
		return nil
	}
	return d.replaceSelfLocked(n)
}

// SetBorn records, once, the generation of the life that began the local node's data dir
// (Node.Born), and persists it before returning; a data dir that has one keeps it.
func (d *Directory) SetBorn(generation uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.self.Born != 0 || generation == 0 {
		return nil
	}
	n := d.self
	n.Born = generation
	return d.replaceSelfLocked(n)
}

// replaceSelfLocked persists n as the local node's entry, then holds it.
func (d *Directory) replaceSelfLocked(n Node) error {
	if err := d.saveLocked(n); err != nil {
		return err
	}
	d.self = n
	d.nodes[n.ID] = n
	d.changedLocked()
	return nil
}

// Nodes returns every known node sorted by id. The slice must not be modified.
func (d *Directory) Nodes() []Node {
	d.mu.RLock()
	if d.sorted != nil {
		defer d.mu.RUnlock()
		return d.sorted
	}
	d.mu.RUnlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sorted == nil {
		nodes := make([]Node, 0, len(d.nodes))
		for _, n := range d.nodes {
			nodes = append(nodes, n)
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
		d.sorted = nodes
	}
	return d.sorted
}

// Node looks up one node by id.
func (d *Directory) Node(id string) (Node, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	n, ok := d.nodes[id]
	return n, ok
}

// State reports what id is doing. Unknown nodes, and nodes off the ring, are down.
func (d *Directory) State(id string) State {
	d.mu.RLock()
	defer d.mu.RUnlock()
	n, ok := d.nodes[id]
	state := d.states[id]
	cycle := d.power[id].State
	switch {
	case ok && cycle == power.Asleep && n.Status.OnRing():
		// Asleep whatever its liveness: it stopped gossiping on purpose.
		return StateAsleep
	case !ok || state != StateUp:
		return state
	case n.Status == StatusJoining:
		return StateJoining
	case n.Status == StatusLeaving:
		return StateLeaving
	case n.Status == StatusRebuilding:
		return StateRebuilding
	case n.Status == StatusLeft || n.Status == StatusRemoved || n.Status == StatusBooting:
		return StateDown
	case cycle == power.Draining:
		return StateDraining
	case cycle == power.Waking:
		return StateWaking
	}
	return StateUp
}

// Power is a node's place in its power cycle (paper 003), as it gossips it.
type Power struct {
	State power.State
	// Holders are the awake nodes, in order of preference, that keep the writes offloaded
	// for this node while it sleeps; the first is also its stand-in, which answers on its
	// released addresses. Empty while it is active.
	Holders []string
}

// Equal reports whether two power entries are identical.
func (p Power) Equal(o Power) bool { return p.State == o.State && slices.Equal(p.Holders, o.Holders) }

// Alive reports gossip's verdict on whether id is alive, whatever its ring status: a
// booting node, which State holds down since it serves nothing, is alive while it
// gossips. The ring's life cycle asks it of nodes that wait to join.
func (d *Directory) Alive(id string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.nodes[id]
	return ok && d.states[id] == StateUp
}

// Power reports a node's power cycle entry.
func (d *Directory) Power(id string) Power {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.power[id]
}

// SetPower records a known node's power cycle entry; it reports whether that changed.
func (d *Directory) SetPower(id string, p Power) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.nodes[id]; !ok || d.power[id].Equal(p) {
		return false
	}
	p.Holders = slices.Clone(p.Holders)
	d.power[id] = p
	return true
}

// Version counts changes of the node set.
func (d *Directory) Version() uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.version
}

// Upsert adds a node or updates its entry, and persists it; it reports whether anything
// changed. The local node's own entry cannot be overwritten from outside, and a removed
// node stays removed until it comes back with a newer generation.
func (d *Directory) Upsert(n Node) (bool, error) {
	if n.ID == "" || n.ID == d.selfID {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old, known := d.nodes[n.ID]
	if known && (old.Equal(n) || old.Status == StatusRemoved && n.Generation <= old.Generation) {
		return false, nil
	}
	if err := d.saveLocked(n); err != nil {
		return false, err
	}
	if !known {
		d.states[n.ID] = StateUp // a node is presumed up when first heard of
	}
	d.nodes[n.ID] = n
	d.changedLocked()
	return true, nil
}

// Learn adds a node this node had not heard of, from another node's ring (a new node
// learning the ring from a seed), with that node's verdict on its liveness. Known nodes
// are left to gossip. It reports whether the node was new.
func (d *Directory) Learn(e RingEntry) (bool, error) {
	if e.ID == "" || e.ID == d.selfID {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, known := d.nodes[e.ID]; known {
		return false, nil
	}
	if err := d.saveLocked(e.Node); err != nil {
		return false, err
	}
	d.nodes[e.ID] = e.Node
	d.states[e.ID] = StateDown
	if e.Up {
		d.states[e.ID] = StateUp
	}
	d.changedLocked()
	return true, nil
}

// LearnDeparture takes another member's word that a node left or was removed, where this
// directory still holds it as a member in that generation or an older one: a node that
// was down when the other left missed its last status, which gossip no longer carries
// once the departed member is forgotten. It reports whether that changed anything.
func (d *Directory) LearnDeparture(e RingEntry) (bool, error) {
	if e.Status != StatusLeft && e.Status != StatusRemoved || e.ID == d.selfID {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.nodes[e.ID]
	if !ok || n.Status == StatusLeft || n.Status == StatusRemoved || n.Generation > e.Generation {
		return false, nil
	}
	n.Status, n.Generation = e.Status, e.Generation
	if err := d.saveLocked(n); err != nil {
		return false, err
	}
	d.nodes[e.ID] = n
	d.changedLocked()
	return true, nil
}

// Remove takes a node off the ring for good (kura node remove, or a replacement that
// completed): it is removed at generation, every older one, and every later life on the
// same data dir (Node.RemovalCovers). An entry of a data dir begun after generation is a
// new node under the same id, and stays. It reports whether that changed anything.
func (d *Directory) Remove(id string, generation uint64) (bool, error) {
	if id == d.selfID {
		return false, fmt.Errorf("node %s cannot remove itself; decommission it instead", id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.nodes[id]
	if !ok {
		return false, fmt.Errorf("node %s is not in the cluster", id)
	}
	if n.Status == StatusRemoved && n.Generation >= generation || !n.RemovalCovers(generation) {
		return false, nil
	}
	n.Status, n.Generation = StatusRemoved, max(n.Generation, generation)
	if err := d.saveLocked(n); err != nil {
		return false, err
	}
	d.nodes[id] = n
	d.changedLocked()
	return true, nil
}

// Forget drops a node's entry, as if never heard of: a booting node that died before it
// took tokens (ringchange.BootingWatch), which nothing else would ever take out. A node
// it hears of again later comes back as any new node does. It reports whether the node
// was known.
func (d *Directory) Forget(id string) (bool, error) {
	if id == d.selfID {
		return false, fmt.Errorf("node %s cannot forget itself", id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.nodes[id]; !ok {
		return false, nil
	}
	if d.store != nil {
		if err := d.store.DeleteNode(id); err != nil {
			return false, fmt.Errorf("delete ring entry of %s: %w", id, err)
		}
	}
	delete(d.nodes, id)
	delete(d.states, id)
	delete(d.power, id)
	d.changedLocked()
	return true, nil
}

// saveLocked persists n when the directory has a store; d.mu is held.
func (d *Directory) saveLocked(n Node) error {
	if d.store == nil {
		return nil
	}
	if err := d.store.SaveNode(n); err != nil {
		return fmt.Errorf("store ring entry of %s: %w", n.ID, err)
	}
	return nil
}

// changedLocked invalidates what readers derived from the node set; d.mu is held.
func (d *Directory) changedLocked() {
	d.version++
	d.sorted = nil
}

// SetState records what a known node is doing (its liveness: up, down, asleep; tests and
// the simulator may also set joining or leaving by hand); it reports whether that changed.
// The local node is never down to itself.
func (d *Directory) SetState(id string, state State) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id == d.selfID && state == StateDown {
		return false
	}
	if _, ok := d.nodes[id]; !ok {
		return false
	}
	if d.states[id] == state {
		return false
	}
	d.states[id] = state
	return true
}
