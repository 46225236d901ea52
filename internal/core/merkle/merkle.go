// Package merkle owns the digest anti-entropy repair compares: the Merkle tree of one
// replica's records in one token range, as Cassandra's repair and Riak's active
// anti-entropy build them.
//
// The range is cut by token into 2^Depth sub-ranges of equal width, the leaves. A leaf's
// hash is the sum (mod 2^64) of the hashes of its records, each over the key, the
// timestamp, the tombstone flag, a hash of the value and the expiry, if any; an inner node hashes its two
// children. Replicas whose roots agree hold the same records in the range; where they do
// not, Diff walks down to the leaves that differ, and only those sub-ranges' records
// need to move.
//
// Every hash is xxhash64 with no seed, so two nodes build the same tree from the same
// records, in any order. Because a leaf is a sum, the leaf of a coarser tree is the sum
// of its two children's: Fold gives exactly the tree a replica would build at a smaller
// depth, without reading the records again. Only the leaves travel (Leaves, FromLeaves);
// the receiver derives the inner nodes itself.
package merkle

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/internal/base/assert"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
)

// MaxDepth bounds a tree's depth: 2^16 leaves are 512 KiB on the wire, more than a
// range of a healthy cluster needs, and a replica must not be made to allocate more.
const MaxDepth = 16

// Tree is the Merkle tree of one replica's records in a token range. It is immutable.
type Tree struct {
	rg      ring.Range
	depth   int
	records int
	// nodes are in heap order: nodes[1] is the root, the children of node i are 2i and
	// 2i+1, and leaf j is node 2^depth + j; nodes[0] is unused.
	nodes []uint64
}

// Builder adds records to the leaves of a tree.
type Builder struct {
	rg      ring.Range
	depth   int
	records int
	leaves  []uint64
}

// NewBuilder returns a builder of the tree of rg at depth. Every leaf must cover at least
// one token: the range must be at least 2^depth tokens wide.
func NewBuilder(rg ring.Range, depth int) (*Builder, error) {
	if err := checkDepth(rg, depth); err != nil {
		return nil, err
	}
	return &Builder{rg: rg, depth: depth, leaves: make([]uint64, 1<<depth)}, nil
}

// Add adds a record whose key has token t, and reports whether t lies in the range; a
// record outside it is left out.
func (b *Builder) Add(t ring.Token, r lww.Record) bool {
	leaf, ok := leafOf(b.rg, b.depth, t)
	if ok {
		b.leaves[leaf] += recordHash(r)
		b.records++
	}
	return ok
}

// Tree returns the tree of the records added so far.
func (b *Builder) Tree() *Tree {
	return build(b.rg, b.depth, b.records, b.leaves)
}

// FromLeaves rebuilds a tree from its range, depth, record count and leaves, as another
// replica sent them.
func FromLeaves(rg ring.Range, depth, records int, leaves []uint64) (*Tree, error) {
	if err := checkDepth(rg, depth); err != nil {
		return nil, err
	}
	if len(leaves) != 1<<depth {
		return nil, fmt.Errorf("merkle: %d leaves for a tree of depth %d, want %d", len(leaves), depth, 1<<depth)
	}
	return build(rg, depth, records, leaves), nil
}

// DepthFor is the depth at which a range holding records records gets about perLeaf
// records per leaf, at most maxDepth and at most what the range's width allows. Trees
// cost 8 bytes per leaf on the wire, and a leaf that differs costs all its records:
// perLeaf weighs one against the other.
func DepthFor(rg ring.Range, records, perLeaf, maxDepth int) int {
	depth := 0
	for depth < maxDepth && depth < MaxDepth && records > perLeaf<<depth && checkDepth(rg, depth+1) == nil {
		depth++
	}
	return depth
}

// checkDepth reports whether a tree of rg may have depth: within MaxDepth, and no leaf
// without a token (its sub-range would read as the whole ring).
func checkDepth(rg ring.Range, depth int) error {
	if depth < 0 || depth > MaxDepth {
		return fmt.Errorf("merkle: depth %d outside [0, %d]", depth, MaxDepth)
	}
	if rg.Start != rg.End && uint64(rg.End-rg.Start)>>depth == 0 {
		return fmt.Errorf("merkle: range (%d, %d] is narrower than the 2^%d leaves of its tree", rg.Start, rg.End, depth)
	}
	return nil
}

// build derives the inner nodes from the leaves.
func build(rg ring.Range, depth, records int, leaves []uint64) *Tree {
	width := 1 << depth
	nodes := make([]uint64, 2*width)
	copy(nodes[width:], leaves)
	var pair [16]byte
	for i := width - 1; i >= 1; i-- {
		binary.BigEndian.PutUint64(pair[:8], nodes[2*i])
		binary.BigEndian.PutUint64(pair[8:], nodes[2*i+1])
		nodes[i] = xxhash.Sum64(pair[:])
	}
	return &Tree{rg: rg, depth: depth, records: records, nodes: nodes}
}

// Records returns how many records the tree was built from.
func (t *Tree) Records() int { return t.records }

// Root returns the root hash.
func (t *Tree) Root() uint64 { return t.nodes[1] }

// Leaves returns the leaf hashes, in token order; the caller must not modify them.
func (t *Tree) Leaves() []uint64 { return t.nodes[1<<t.depth:] }

// Fold returns the tree of the same records at a smaller depth.
func (t *Tree) Fold(depth int) (*Tree, error) {
	if depth < 0 || depth > t.depth {
		return nil, fmt.Errorf("merkle: cannot fold a tree of depth %d to depth %d", t.depth, depth)
	}
	shift := t.depth - depth
	leaves := make([]uint64, 1<<depth)
	for i, h := range t.Leaves() {
		leaves[i>>shift] += h
	}
	return build(t.rg, depth, t.records, leaves), nil
}

// SubRange returns the token range of leaf i.
func (t *Tree) SubRange(i int) ring.Range {
	return ring.Range{Start: t.rg.Start + ring.Token(leafStart(t.rg, t.depth, uint64(i))), End: t.rg.Start + ring.Token(leafStart(t.rg, t.depth, uint64(i)+1))}
}

// Diff returns, in order, the leaves whose hashes differ between a and b, two trees of
// the same range and depth. It descends only into subtrees whose hashes differ.
func Diff(a, b *Tree) ([]int, error) {
	if a.rg != b.rg || a.depth != b.depth {
		return nil, fmt.Errorf("merkle: cannot compare the tree of (%d, %d] at depth %d with that of (%d, %d] at depth %d",
			a.rg.Start, a.rg.End, a.depth, b.rg.Start, b.rg.End, b.depth)
	}
	var out []int
	firstLeaf := 1 << a.depth
	var walk func(node int)
	walk = func(node int) {
		switch {
		case a.nodes[node] == b.nodes[node]:
		case node >= firstLeaf:
			out = append(out, node-firstLeaf)
		default:
			walk(2 * node)
			walk(2*node + 1)
		}
	}
	walk(1)
	return out, nil
}

// recordHash hashes what makes two versions of a record differ: the key, the timestamp,
// the tombstone flag, the value (through its own hash, so that a record's hash input
// stays small whatever the value's size), the expiry and the type.
func recordHash(r lww.Record) uint64 {
	buf := make([]byte, 0, binary.MaxVarintLen64+len(r.Key)+8+1+8+8+1)
	buf = binary.AppendUvarint(buf, uint64(len(r.Key)))
	buf = append(buf, r.Key...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.Timestamp))
	if r.Tombstone {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = binary.BigEndian.AppendUint64(buf, xxhash.Sum64(r.Value))
	if r.ExpiresAt != 0 {
		// Only when set, so a record without expiry hashes as it did before expiry
		// existed, and trees of such records stay equal across versions.
		buf = binary.BigEndian.AppendUint64(buf, uint64(r.ExpiresAt))
	}
	if r.Type != lww.String {
		// Only when not a string, for the same reason: one byte, so the input's length
		// still tells what it holds.
		buf = append(buf, byte(r.Type))
	}
	return xxhash.Sum64(buf)
}

// leafOf returns the leaf of token t in the tree of rg at depth: the offset of t past
// rg.Start, scaled from the range's width to 2^depth. ok is false when t lies outside rg.
func leafOf(rg ring.Range, depth int, t ring.Token) (leaf int, ok bool) {
	if !rg.Contains(t) {
		return 0, false
	}
	offset := uint64(t - rg.Start - 1) // 0 for the first token of the range
	if rg.Start == rg.End {
		return int(offset >> (64 - depth)), true // the whole ring: 2^64 tokens wide
	}
	// offset × 2^depth / width, in 128 bits; the quotient is below 2^depth.
	hi, lo := bits.Mul64(offset, 1<<depth)
	q, _ := bits.Div64(hi, lo, uint64(rg.End-rg.Start))
	if assert.Enabled { // guarded: boxing the token would cost every record
		assert.That(q < 1<<depth, "merkle: token %d in (%d, %d] maps to leaf %d, past the 2^%d leaves", t, rg.Start, rg.End, q, depth)
	}
	return int(q), true
}

// leafStart returns the smallest offset past rg.Start that falls in leaf i, for
// 0 <= i <= 2^depth: ceil(i × width / 2^depth), which is the width itself for i = 2^depth.
// The wrap-around of adding it to rg.Start is the ring's own.
func leafStart(rg ring.Range, depth int, i uint64) uint64 {
	if rg.Start == rg.End {
		return i << (64 - depth) // 2^64 / 2^depth per leaf; i = 2^depth wraps to 0
	}
	hi, lo := bits.Mul64(i, uint64(rg.End-rg.Start))
	lo, carry := bits.Add64(lo, 1<<depth-1, 0) // round up
	hi += carry
	if depth == 0 {
		return lo
	}
	return lo>>depth | hi<<(64-depth)
}
