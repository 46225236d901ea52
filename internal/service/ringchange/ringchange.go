// Package ringchange owns the ring's life cycle on one node. Its rules, with no I/O, say
// which change may start while others are in progress, which of two changes announced at
// once goes on, whether a node may be removed, and whether a node that starts with an
// empty data dir lost the data of an earlier life. Each rule reads the directory's
// entries and the liveness gossip gives them (a View), so that tests state them as
// tables. The Changer applies them: it takes a starting node to normal (joining,
// replacing or rebuilding), decommissions it, removes dead nodes, and answers its
// peers' ring pulls and requests to stream. It does the waiting and the asking, and
// reaches the rest of the node through small interfaces (Parts), so that it depends on
// neither the transport nor the storage engine; the node registers the message kinds
// and hands their payloads to the Changer's handlers.
//
// The rules are Cassandra's consistent range movement, made to heal by themselves: one
// range movement at a time; a movement whose node died blocks the others until an
// operator ends it (kura node remove), and the refusal says so, or, for a join, until
// the joiner's arbiter aborts it (abort.go); two movements that could not see each other
// when they were announced resolve by id.
package ringchange

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
)

// View is what the rules read: every node the directory holds, what gossip holds each
// doing (State), and whether gossip holds it alive whatever its ring status (Alive: a
// booting node is alive, though State holds it down). *cluster.Directory is one.
type View interface {
	Nodes() []cluster.Node
	State(id string) cluster.State
	Alive(id string) bool
}

// Sentinel errors.
var (
	// ErrBadMove: the change cannot start (or go on) now; the error says why and what to
	// do.
	ErrBadMove = errors.New("invalid ring change")
	// ErrOverlap: another change was announced at the same time, and goes first.
	ErrOverlap = errors.New("overlapping ring change")
	// ErrYield: a join waits for a dead holder that another node is waiting to replace;
	// the join gives way to the replacement, which is what ends its wait.
	ErrYield = errors.New("the join gives way to a replacement")
	// ErrReplaceRefused: a replacement (Config.Replace) that waiting would not make
	// possible; the error says why and what to do.
	ErrReplaceRefused = errors.New("replacement refused")
)

// moving reports whether a node's status is a range movement in progress.
func moving(s cluster.Status) bool { return s == cluster.StatusJoining || s == cluster.StatusLeaving }

// NoMoves refuses a ring change while another node joins or leaves, but for the nodes
// named in except (the one making the change, or the one being removed: its own move is
// the one that ends). A move whose node is down will not complete by itself, and the
// error says how to end it.
func NoMoves(v View, except ...string) error {
	for _, other := range v.Nodes() {
		if !moving(other.Status) || slices.Contains(except, other.ID) {
			continue
		}
		if !v.State(other.ID).Reachable() {
			return fmt.Errorf("%w: node %s is %s and down, so its move cannot complete: start it again, or end the move with kura node remove %s",
				ErrBadMove, other.ID, other.Status, other.ID)
		}
		return fmt.Errorf("%w: node %s is %s; wait until it completes", ErrBadMove, other.ID, other.Status)
	}
	return nil
}

// NoKeyspaceMoves refuses a ring change while a keyspace moves (a rebalance or a
// change of replication: schema.Keyspace's Moving), moving naming those that do: a ring
// change streams each range under the keyspace's current placement only, so the
// replicas of the next one, on the changed ring, would lack the copies streamed. A
// move whose command was cut short stays moving until an operator settles it, and the
// error says how.
func NoKeyspaceMoves(moving []string) error {
	if len(moving) == 0 {
		return nil
	}
	which := "keyspace " + moving[0] + " is"
	if len(moving) > 1 {
		which = "keyspaces " + strings.Join(moving, ", ") + " are"
	}
	return fmt.Errorf("%w: %s moving (a rebalance or kura keyspace alter; a ring change streams under the current placement only): wait until it completes, or, if none runs any more, end it with kura keyspace alter %s --settle",
		ErrBadMove, which, moving[0])
}

// Overlap decides between changes announced at the same time. Run a ring delay after the
// move of node mover was announced, when every node has learned it, by self (the mover
// itself, or the node running a removal): it refuses the move if another node moves
// too and has the smaller id. Two movers that announced themselves in one ring delay
// each see the other then, so exactly one goes on.
func Overlap(v View, mover, self string) error {
	for _, other := range v.Nodes() {
		if other.ID == mover || other.ID == self && mover != self {
			continue
		}
		if moving(other.Status) && other.ID < mover {
			return fmt.Errorf("%w: node %s is %s too, and goes first", ErrOverlap, other.ID, other.Status)
		}
	}
	return nil
}

// Contend decides, a ring delay after the move of node mover was announced, what a
// decommission or removal run by self does about the other moves it sees then: go on
// (false, nil) when there are none; give way (ErrOverlap) when one goes first
// (Overlap); else wait (true, nil): every other mover gives way to it by the same rule,
// or ends. Without the wait, two decommissions announced at once both gave way, each
// telling the operator to wait for the other.
func Contend(v View, mover, self string) (wait bool, err error) {
	if NoMoves(v, mover) == nil {
		return false, nil
	}
	if err := Overlap(v, mover, self); err != nil {
		return false, fmt.Errorf("%w; run it again once that one completes", err)
	}
	return true, nil
}

// Ahead counts the reachable booting nodes with an id smaller than self's: the joiners
// that yielded with self and take their turn before it.
func Ahead(v View, self string) int {
	ahead := 0
	for _, other := range v.Nodes() {
		if other.ID < self && other.Status == cluster.StatusBooting && v.Alive(other.ID) {
			ahead++
		}
	}
	return ahead
}

// YieldTo decides whether a join that waits for holders to stream from (waitingFor:
// holders down, without which too few could serve a range it gains) gives way: it does
// when an alive node waits to replace one of them. The replacement then goes first (it
// brings the dead holder's copies back, from the other replicas), and the join starts
// again after it; otherwise each would wait for the other for ever. A join that waits
// for holders nobody replaces waits on: an operator brings them back, or replaces or
// removes them.
func YieldTo(v View, waitingFor []string) error {
	if len(waitingFor) == 0 {
		return nil
	}
	if id, dead := WaitingReplacement(v, waitingFor); id != "" {
		return fmt.Errorf("%w: node %s waits to replace %s, which is down and holds ranges this join streams", ErrYield, id, dead)
	}
	return nil
}

// WaitingReplacement returns an alive booting node that waits to replace a node that is
// down and on the ring, and that node, or "" for none; with of not empty, only a
// replacement of one of the nodes it names. Joins let such replacements go first.
func WaitingReplacement(v View, of []string) (id, dead string) {
	for _, n := range v.Nodes() {
		if n.Status != cluster.StatusBooting || n.Replaces == "" || !v.Alive(n.ID) || v.Alive(n.Replaces) {
			continue
		}
		if len(of) > 0 && !slices.Contains(of, n.Replaces) {
			continue
		}
		for _, d := range v.Nodes() {
			if d.ID == n.Replaces && d.Status.OnRing() {
				return n.ID, d.ID
			}
		}
	}
	return "", ""
}

// OtherReplacement refuses self's replacement of dead while another node, neither left
// nor removed, replaces dead already and goes first: both would take dead's tokens, and
// a ring holding each token twice places no key (every request of the cluster fails).
// One that announced itself (joining, or on the ring) goes before one booting; of two
// in the same stage, the smaller id. A dead one goes first too: the operator starts it
// again or ends its move, as the error says.
func OtherReplacement(v View, self, dead string) error {
	stage := func(s cluster.Status) int {
		if s == cluster.StatusBooting {
			return 1
		}
		return 0
	}
	mine := cluster.StatusBooting
	for _, n := range v.Nodes() {
		if n.ID == self {
			mine = n.Status
		}
	}
	for _, n := range v.Nodes() {
		if n.ID == self || n.Replaces != dead || n.Status == cluster.StatusLeft || n.Status == cluster.StatusRemoved {
			continue
		}
		if stage(n.Status) > stage(mine) || stage(n.Status) == stage(mine) && n.ID > self {
			continue // this one goes first, and the other is refused
		}
		alive := map[bool]string{true: "up", false: "down"}[v.Alive(n.ID)]
		return fmt.Errorf("%w: node %s replaces %s already (it is %s and %s): start %s again and let it finish, or end its move with kura node remove %s, then start this node again",
			ErrReplaceRefused, n.ID, dead, n.Status, alive, n.ID, n.ID)
	}
	return nil
}

// BootingWatch decides when a booting node that died is forgotten: one whose join was
// refused for good (its process exits), or that was stopped before it announced
// itself. It never took tokens, owns nothing and is sent nothing, so nothing depends on
// its entry; but nothing else would ever take it out (kura node remove would, by hand).
// Cassandra drops such a gossip-only member (a fat client) the same way. A node that is
// joining (its tokens claimed, streams perhaps in flight), on the ring, or alive is
// never forgotten, and a booting node heard of again later comes back as a new one.
type BootingWatch struct{ down downWatch }

// Gone returns the nodes of v, self aside, that have been booting and down (Alive:
// gossip holds them dead) in every call since at least after before now, sorted by id.
// A node seen alive, or with another status, starts again from nothing.
func (w *BootingWatch) Gone(v View, self string, now time.Time, after time.Duration) []string {
	var gone []string
	for _, n := range w.down.over(v, now, after, func(n cluster.Node) bool { return n.ID != self && n.Status == cluster.StatusBooting }) {
		gone = append(gone, n.ID)
	}
	return gone
}

// downWatch times how long the nodes a watch looks at have been dead in gossip without a
// break, over calls made once a gossip round.
type downWatch struct {
	// since holds when each node was first seen matching and down, without a break.
	since map[string]time.Time
}

// over returns the nodes of v that match and that gossip has held dead (Alive) in every
// call since at least after before now, in v's order. A node seen alive, or not
// matching, starts again from nothing.
func (w *downWatch) over(v View, now time.Time, after time.Duration, match func(cluster.Node) bool) []cluster.Node {
	seen := map[string]bool{}
	var gone []cluster.Node
	for _, n := range v.Nodes() {
		if !match(n) || v.Alive(n.ID) {
			continue
		}
		seen[n.ID] = true
		if w.since == nil {
			w.since = map[string]time.Time{}
		}
		first, ok := w.since[n.ID]
		if !ok {
			w.since[n.ID] = now
			continue
		}
		if now.Sub(first) >= after {
			gone = append(gone, n)
		}
	}
	for id := range w.since {
		if !seen[id] {
			delete(w.since, id)
		}
	}
	return gone
}

// Removal says how node id may be removed by self: Abort for a dead joiner (it owned
// nothing yet: its join is ended, nothing streams), Stream for a dead node on the ring
// (its ranges stream from the other replicas first), or an error naming why not.
func Removal(v View, self, id string) (Kind, error) {
	var dead cluster.Node
	found := false
	for _, n := range v.Nodes() {
		if n.ID == id {
			dead, found = n, true
		}
	}
	joining := dead.Status == cluster.StatusJoining || dead.Status == cluster.StatusBooting
	up := v.State(id).Reachable()
	switch {
	case id == self:
		return 0, fmt.Errorf("%w: a node cannot remove itself; decommission it", ErrBadMove)
	case !found:
		return 0, fmt.Errorf("%w: node %s is not in the cluster", ErrBadMove, id)
	case !dead.Status.OnRing() && !joining:
		return 0, fmt.Errorf("%w: node %s is %s, not on the ring", ErrBadMove, id, dead.Status)
	case up && joining:
		return 0, fmt.Errorf("%w: node %s is up and joining; let it finish, or stop it and run node remove again to abort its join", ErrBadMove, id)
	case up:
		return 0, fmt.Errorf("%w: node %s is up; decommission it instead", ErrBadMove, id)
	case joining:
		// It moves no data, so it may overlap another move, and the other move may be
		// waiting for it (a join that goes first waits for the joiners it overlapped to
		// yield, and a dead one never will).
		return Abort, nil
	}
	if err := NoMoves(v, id); err != nil {
		for _, other := range v.Nodes() {
			if other.Status == cluster.StatusJoining && other.ID != id && v.State(other.ID).Reachable() {
				// The join may be waiting for the very node to remove; a replacement it
				// gives way to (YieldTo), a removal it cannot know of.
				return 0, fmt.Errorf("%w; if that join waits for %s (its log says waiting_for), replace %s instead (kura server --replace %s): a join gives way to a replacement",
					err, id, id, id)
			}
		}
		return 0, err
	}
	return Stream, nil
}

// Replication is one keyspace's replication, as ShortOfReplicas reads it.
type Replication struct {
	Keyspace string
	Strategy ring.Strategy
}

// ShortOfReplicas refuses the removal of dead node id when it would leave a keyspace
// with fewer nodes in id's DC than the keyspace places replicas there (shortOf): the
// ranges would keep a copy fewer there than the keyspace asks for until a node joins
// that DC, a write acknowledged by that one copy would die with its node, and the
// levels that count the copies the DC lacks would be unavailable. A replacement (kura
// server --replace) keeps the count; --force accepts the loss.
func ShortOfReplicas(v View, id string, keyspaces []Replication) error {
	s, short := shortOf(v, id, keyspaces)
	if !short {
		return nil
	}
	return fmt.Errorf("%w: removing %s would leave %s. Replace %s instead (start a new node with kura server --replace %s), or run node remove --force to remove it anyway",
		ErrBadMove, id, s, id, id)
}

// DecommissionShortOfReplicas refuses the decommission of node id, run from id's view,
// when it would leave a keyspace with fewer nodes in id's DC than the keyspace places
// replicas there, for the reasons ShortOfReplicas gives: a decommission drops the
// node's copies as a removal does. Cassandra refuses such a decommission ("Not enough
// live nodes to maintain replication factor"). A node added to the DC first keeps the
// count; --force accepts the loss.
func DecommissionShortOfReplicas(v View, id string, keyspaces []Replication) error {
	s, short := shortOf(v, id, keyspaces)
	if !short {
		return nil
	}
	return fmt.Errorf("%w: decommissioning %s would leave %s. Add a node to %s first, or run kura node decommission --force to decommission it anyway",
		ErrBadMove, id, s, s.where)
}

// shortage is a keyspace that a DC (or, for simple, the cluster) would hold fewer nodes
// for than the copies it places there.
type shortage struct {
	keyspace   Replication
	where      string // the DC, or "the cluster"
	left, want int    // nodes left there, copies the keyspace places there
}

func (s shortage) String() string {
	return fmt.Sprintf("%s with %s for keyspace %s (%s), which places %s there: its ranges would keep %s there until a node joins %s",
		s.where, counted(s.left, "node"), s.keyspace.Keyspace, s.keyspace.Strategy, counted(s.want, "copy"), counted(s.left, "copy"), s.where)
}

// shortOf returns the first keyspace that node id's going (removal or decommission)
// would leave short: with fewer nodes in id's DC than it places replicas there (its
// replication factor, per DC for network and each, over the ring for simple). The nodes
// counted are those that own ranges once the moves complete (WillOwn), down or not: a
// down replica still holds its copy. Erasure-coded keyspaces are not among keyspaces
// (one chunk per owner: no replicas to count).
func shortOf(v View, id string, keyspaces []Replication) (shortage, bool) {
	var gone cluster.Node
	inDC := map[string]int{}
	total := 0
	for _, n := range v.Nodes() {
		switch {
		case n.ID == id:
			gone = n
		case n.Status.WillOwn():
			inDC[n.DC]++
			total++
		}
	}
	for _, ks := range keyspaces {
		s := shortage{keyspace: ks, left: inDC[gone.DC], where: gone.DC}
		switch strategy := ks.Strategy.(type) {
		case ring.DCStrategy:
			s.want = strategy.RFPerDC()[gone.DC]
		default:
			if s.want = strategy.ReplicationFactor(); strategy.Name() != "each" {
				s.left, s.where = total, "the cluster"
			}
		}
		if s.left < s.want {
			return s, true
		}
	}
	return shortage{}, false
}

// counted says n of noun, as "1 node" or "2 nodes".
func counted(n int, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Kind is how a removal goes.
type Kind int

// The kinds of removal.
const (
	// Abort ends a dead joiner's join: it is removed at once.
	Abort Kind = iota + 1
	// Stream removes a dead node on the ring once its ranges have streamed.
	Stream
)

// LostData reports whether a ring entry for a node, held by another member, shows that
// the node owned ranges in an earlier life: a node that starts with an empty data dir
// then lost its data and must rebuild it, not serve reads from nothing. generation is
// the node's own in this life. Generation 0 is an entry no incarnation of the node ever
// gossiped (a topology file's). An entry of this life's generation is what the member
// learned from the node itself: the first node of a new cluster, asked by the nodes that
// joined it, is normal there; a node back with an empty disk is rebuilding there, since
// the member held it on the ring before.
func LostData(entry cluster.RingEntry, generation uint64) bool {
	if entry.Generation == 0 || !entry.Status.OnRing() {
		return false
	}
	return entry.Generation < generation || entry.Status == cluster.StatusRebuilding
}
