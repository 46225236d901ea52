// Package ring maps keys to positions on a 64-bit token ring and decides which nodes
// hold the replicas of each position.
//
// A Ring is an immutable snapshot of membership. Every node builds the same Ring from the
// same member list (tokens derive from node ids, see TokensFor), so placement needs no
// coordination beyond agreeing on who the members are. Build a new Ring when membership
// changes.
package ring

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/base/assert"
)

// Token is a position on the ring, in [0, 2^64).
type Token uint64

// Member is a node on the ring: its id, its datacenter, its power tier and the vnode
// tokens it owns.
type Member struct {
	ID string
	DC string
	// Tier is the member's power tier (kura server --power-tier): 0 never sleeps, 1 and
	// above may sleep. Placement keeps a tier-0 member in every replica set, in each DC
	// under network and each, wherever there is one (see Ring.ReplicasFor), so that a
	// range never has all its replicas asleep.
	Tier   int
	Tokens []Token
}

// Errors returned by New; callers distinguish them with errors.Is.
var (
	// ErrNoTokens means the ring would have no tokens, or a member brings none and so
	// could never be found by a walk.
	ErrNoTokens = errors.New("ring: no tokens")
	// ErrEmptyMemberID means a member has an empty id.
	ErrEmptyMemberID = errors.New("ring: empty member id")
	// ErrDuplicateMember means two members share an id.
	ErrDuplicateMember = errors.New("ring: duplicate member id")
	// ErrDuplicateToken means a token is claimed twice, so its range would have two owners.
	ErrDuplicateToken = errors.New("ring: duplicate token")
	// ErrNegativeTier means a member has a power tier below 0, which names no tier.
	ErrNegativeTier = errors.New("ring: negative power tier")
)

// Ring is an immutable token ring. Its vnodes are kept as parallel sorted slices so that
// finding a token's successor is one binary search over plain integers.
type Ring struct {
	members    []Member // sorted by id
	byID       map[string]int
	dcs        []string // sorted
	nodesPerDC map[string]int
	tokens     []Token // every vnode's token, ascending
	owners     []int   // owners[i] indexes members: the owner of tokens[i]
	// tiered is set when some member may sleep (tier above 0): only then does placement
	// look at tiers, so a ring of tier-0 members places exactly as the strategies do.
	tiered bool
	// alwaysOnPerDC counts the tier-0 members of each DC; a DC without one is absent.
	alwaysOnPerDC map[string]int
}

// New builds a ring from members. It copies its input, so later changes to members do not
// reach the ring.
func New(members []Member) (*Ring, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("%w: no members", ErrNoTokens)
	}
	r := &Ring{
		members:       make([]Member, len(members)),
		byID:          make(map[string]int, len(members)),
		nodesPerDC:    make(map[string]int),
		alwaysOnPerDC: make(map[string]int),
	}
	for i, m := range members {
		m.Tokens = slices.Clone(m.Tokens)
		r.members[i] = m
	}
	slices.SortFunc(r.members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })

	type vnode struct {
		token Token
		owner int
	}
	var vnodes []vnode
	for i, m := range r.members {
		switch {
		case m.ID == "":
			return nil, ErrEmptyMemberID
		case i > 0 && r.members[i-1].ID == m.ID:
			return nil, fmt.Errorf("%w: %q", ErrDuplicateMember, m.ID)
		case len(m.Tokens) == 0:
			return nil, fmt.Errorf("%w: member %q has none", ErrNoTokens, m.ID)
		case m.Tier < 0:
			return nil, fmt.Errorf("%w: member %q has tier %d", ErrNegativeTier, m.ID, m.Tier)
		}
		r.tiered = r.tiered || m.Tier > 0
		if m.Tier == 0 {
			r.alwaysOnPerDC[m.DC]++
		}
		r.byID[m.ID] = i
		r.nodesPerDC[m.DC]++
		for _, t := range m.Tokens {
			vnodes = append(vnodes, vnode{token: t, owner: i})
		}
	}
	slices.SortFunc(vnodes, func(a, b vnode) int {
		// Ties (duplicate tokens) sort by owner so the error below names them stably.
		return cmp.Or(cmp.Compare(a.token, b.token), cmp.Compare(a.owner, b.owner))
	})

	r.tokens = make([]Token, len(vnodes))
	r.owners = make([]int, len(vnodes))
	for i, v := range vnodes {
		if i > 0 && vnodes[i-1].token == v.token {
			return nil, fmt.Errorf("%w: %d claimed by %q and %q",
				ErrDuplicateToken, v.token, r.members[vnodes[i-1].owner].ID, r.members[v.owner].ID)
		}
		r.tokens[i] = v.token
		r.owners[i] = v.owner
	}
	if assert.Enabled {
		for i := 1; i < len(r.tokens); i++ {
			assert.That(r.tokens[i-1] < r.tokens[i], "ring: token %d follows %d: successor's binary search needs strictly increasing tokens", r.tokens[i], r.tokens[i-1])
		}
	}
	for dc := range r.nodesPerDC {
		r.dcs = append(r.dcs, dc)
	}
	slices.Sort(r.dcs)
	return r, nil
}

// Members returns a copy of the members, sorted by id.
func (r *Ring) Members() []Member {
	members := make([]Member, len(r.members))
	for i, m := range r.members {
		members[i] = cloneMember(m)
	}
	return members
}

// Member returns a copy of the member with the given id.
func (r *Ring) Member(id string) (Member, bool) {
	i, ok := r.byID[id]
	if !ok {
		return Member{}, false
	}
	return cloneMember(r.members[i]), true
}

// DCs returns the distinct datacenters of the members, sorted.
func (r *Ring) DCs() []string {
	return slices.Clone(r.dcs)
}

// Len returns the number of members (not vnodes).
func (r *Ring) Len() int {
	return len(r.members)
}

// Walk calls fn for each distinct member in ring order, starting at the first vnode with
// token >= t and wrapping past the top of the ring, skipping members already seen, until
// fn returns false or every member has been seen. Members passed to fn share their Tokens
// with the ring: fn must not modify them.
func (r *Ring) Walk(t Token, fn func(m Member) bool) {
	seen := make([]bool, len(r.members))
	unseen := len(r.members)
	start := r.successor(t)
	for step := 0; step < len(r.tokens) && unseen > 0; step++ {
		owner := r.owners[(start+step)%len(r.tokens)]
		if seen[owner] {
			continue
		}
		seen[owner] = true
		unseen--
		if !fn(r.members[owner]) {
			return
		}
	}
}

// Ranges returns every vnode's range, in token order; together they cover the ring once.
func (r *Ring) Ranges() []Range {
	ranges := make([]Range, len(r.tokens))
	for i := range r.tokens {
		ranges[i] = r.rangeAt(i)
	}
	return ranges
}

// Share returns the fraction of the key space the member owns as primary; 0 for an
// unknown id.
func (r *Ring) Share(id string) float64 {
	member, ok := r.byID[id]
	if !ok {
		return 0
	}
	var share float64
	for i, owner := range r.owners {
		if owner == member {
			share += r.rangeAt(i).Fraction()
		}
	}
	return share
}

// nodesIn returns how many members live in dc.
func (r *Ring) nodesIn(dc string) int {
	return r.nodesPerDC[dc]
}

// successor returns the index of the vnode owning t: the first with token >= t, or the
// first vnode of all when t lies past the last token.
func (r *Ring) successor(t Token) int {
	i, _ := slices.BinarySearch(r.tokens, t)
	if i == len(r.tokens) {
		return 0
	}
	return i
}

// rangeAt returns the range owned by vnode i: from its predecessor's token (exclusive) to
// its own (inclusive).
func (r *Ring) rangeAt(i int) Range {
	previous := (i - 1 + len(r.tokens)) % len(r.tokens)
	return Range{Start: r.tokens[previous], End: r.tokens[i]}
}

// cloneMember copies m deeply so callers cannot change the ring through its Tokens.
func cloneMember(m Member) Member {
	m.Tokens = slices.Clone(m.Tokens)
	return m
}
