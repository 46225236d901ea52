package coord

import (
	"sync"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/placement"
)

// pointOp is the working memory of one point read or write: the replica set, the targets,
// the gathering's quorum and group and the targets it asked. Every Get and Put needs the
// same few slices and structs, so readOp and writeOp, which hold a pointOp, are pooled.
// One goes back to its pool only when its gathering left no request in flight: a request
// still running in the background reads the op's targets (and a write its writes).
type pointOp struct {
	members []placement.Member
	targets []target
	sent    []target
	q       quorum
	g       group
	groups  [1]*group
}

// quorum returns the op's quorum of one group, required of candidates, gathered by
// self, its remote requests run by pool: with no allocation once the op's slices have
// grown to the replica sets it sees.
func (op *pointOp) quorum(self string, pool *tasks, required consistency.Requirement, candidates []target) *quorum {
	op.g.init(required, candidates)
	op.groups[0] = &op.g
	if cap(op.sent) < len(candidates) {
		op.sent = make([]target, 0, len(candidates))
	}
	op.q = quorum{self: self, workers: pool, groups: op.groups[:], sent: op.sent}
	return &op.q
}

// reset drops what the op refers to, keeping its slices' memory.
func (op *pointOp) reset() {
	clear(op.members[:cap(op.members)])
	clear(op.targets[:cap(op.targets)])
	clear(op.sent[:cap(op.sent)])
	op.q, op.g, op.groups[0] = quorum{}, group{}, nil
}

// readOp is one Get's pointOp, with the answers it gathers and its ask and accept
// functions, made once per pooled op rather than as closures per request.
type readOp struct {
	pointOp
	c        *Coordinator
	keyspace string
	key      []byte
	answers  []readAnswer
	ask      func(placement.Member, []target) (readAnswer, error) // askReplica
	accept   func([]target, readAnswer)                           // keep
}

var readOps = sync.Pool{New: func() any {
	op := &readOp{}
	op.ask, op.accept = op.askReplica, op.keep
	return op
}}

// newReadOp returns a pooled readOp for a read of key in keyspace.
func (c *Coordinator) newReadOp(keyspace string, key []byte) *readOp {
	op := readOps.Get().(*readOp)
	op.c, op.keyspace, op.key = c, keyspace, key
	return op
}

// askReplica reads the op's key from m.
func (op *readOp) askReplica(m placement.Member, _ []target) (readAnswer, error) {
	r, err := op.c.replica(m)
	if err != nil {
		return readAnswer{}, err
	}
	rctx, cancel := op.c.callContext(m.ID)
	defer cancel()
	defer op.c.pending.asked(op.c.readPolicy(), m.ID, 0, false).done()
	rec, found, err := r.Get(rctx, op.keyspace, op.key)
	return readAnswer{member: m, record: rec, found: found}, err
}

// keep records an answer.
func (op *readOp) keep(_ []target, a readAnswer) { op.answers = append(op.answers, a) }

// release returns the op to the pool unless the gathering left requests in flight (out
// is its outcome; the zero outcome when nothing was gathered).
func (op *readOp) release(out outcome) {
	if out.inFlight > 0 {
		return
	}
	op.reset()
	clear(op.answers[:cap(op.answers)]) // the records' values may be large
	op.answers = op.answers[:0]
	op.c, op.keyspace, op.key = nil, "", nil
	readOps.Put(op)
}

// writeOp is one write's pointOp, with its writes (one per replica) and what asking a
// replica needs; applyWrites gathers it.
type writeOp struct {
	pointOp
	c        *Coordinator
	keyspace string
	writes   []replicaWrite
	required consistency.Requirement
	ask      func(placement.Member, []target) (struct{}, error) // askReplica
	accept   func([]target, struct{})                           // counts only
}

var writeOps = sync.Pool{New: func() any {
	op := &writeOp{accept: func([]target, struct{}) {}}
	op.ask = op.askReplica
	return op
}}

// newWriteOp returns a pooled writeOp for a write to keyspace.
func (c *Coordinator) newWriteOp(keyspace string) *writeOp {
	op := writeOps.Get().(*writeOp)
	op.c, op.keyspace = c, keyspace
	return op
}

// askReplica applies the write of target ts[0] (its slot) on its replica, or hints it.
func (op *writeOp) askReplica(_ placement.Member, ts []target) (struct{}, error) {
	err := op.c.applyOrHint(op.writes[ts[0].slot], op.keyspace)
	if err != nil && op.required.Hinted {
		return struct{}{}, nil // hinted instead, which ANY accepts
	}
	return struct{}{}, err
}

// release returns the op to the pool unless the gathering left requests in flight (out
// is its outcome; the zero outcome when nothing was gathered).
func (op *writeOp) release(out outcome) {
	if out.inFlight > 0 {
		return
	}
	op.reset()
	clear(op.writes[:cap(op.writes)]) // the records' values may be large
	op.writes = op.writes[:0]
	op.c, op.keyspace, op.required = nil, "", consistency.Requirement{}
	writeOps.Put(op)
}
