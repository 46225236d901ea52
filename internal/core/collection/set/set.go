// Package set is the merge rule of kura's Redis sets (docs/redis-types.md), with no I/O:
// an add-wins observed-remove set over element records. Each add of a member that the
// adder did not see present is a record of its own, keyed by the member and a tag unique
// to the add (element.Tag: the add's timestamp and writing node); a remove tombstones
// exactly the add records it read; a member is in the set while one of its adds is live.
// An add concurrent with a remove has a tag the remove never saw, so it survives.
//
// The Redis front end (package resp) and the simulator's driver (internal/tools/sim/datapath) both call
// it, so the simulator runs the rule the server runs.
package set

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// AddPrefix returns the prefix of the keys of member's add records in set key: the
// element key of kind SetAdd with suffix uvarint(len(member)) member. An add's key is the
// prefix and its tag, which the coordinator's write appends (coord.CollectionWrite.Tagged);
// the length makes no member's prefix a prefix of another's.
func AddPrefix(key, member []byte) []byte {
	suffix := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(member)), uint64(len(member)))
	return element.Key(key, element.SetAdd, append(suffix, member...))
}

// ParseAdd returns the member and tag of an add record's key, which alias it; ok is false
// for any other key.
func ParseAdd(key []byte) (member, tag []byte, ok bool) {
	_, kind, suffix, ok := element.Parse(key)
	if !ok || kind != element.SetAdd {
		return nil, nil, false
	}
	length, n := binary.Uvarint(suffix)
	if n <= 0 || length != uint64(len(suffix)-n-element.TagBytes) {
		return nil, nil, false
	}
	rest := suffix[n:]
	return rest[:length], rest[length:], true
}

// Member is one member of a set as read: its name and the keys of its live add records.
type Member struct {
	Name []byte
	Adds [][]byte
}

// Set is a set as read: its members in byte order of their names.
type Set struct{ members []Member }

// Fold folds a set's live element records (those newer than its reset point, as the
// coordinator's collection reads answer them) into its members. Tombstones and records
// of other kinds are skipped.
func Fold(elements []lww.Record) Set {
	var s Set
	for _, rec := range elements {
		name, _, ok := ParseAdd(rec.Key)
		if !ok || rec.Tombstone {
			continue
		}
		i, found := s.find(name)
		if !found {
			s.members = slices.Insert(s.members, i, Member{Name: name})
		}
		s.members[i].Adds = append(s.members[i].Adds, rec.Key)
	}
	return s
}

func (s Set) find(name []byte) (int, bool) {
	return slices.BinarySearchFunc(s.members, name, func(m Member, name []byte) int { return bytes.Compare(m.Name, name) })
}

// Len is the number of members.
func (s Set) Len() int { return len(s.members) }

// Has reports whether name is a member.
func (s Set) Has(name []byte) bool {
	_, found := s.find(name)
	return found
}

// Members returns the members in byte order of their names.
func (s Set) Members() []Member { return s.members }

// Names returns the members' names in byte order.
func (s Set) Names() [][]byte {
	names := make([][]byte, len(s.members))
	for i, m := range s.members {
		names[i] = m.Name
	}
	return names
}

// Add returns the add records SADD writes to set key for names: one for each distinct
// name that is not a member, in the order first named, keyed by AddPrefix for the write
// to tag. A name already a member gets none: nothing is written for it, so a remove
// elsewhere that saw its adds removes it.
func (s Set) Add(key []byte, names [][]byte) []lww.Record {
	var adds []lww.Record
	seen := map[string]bool{}
	for _, name := range names {
		if seen[string(name)] || s.Has(name) {
			continue
		}
		seen[string(name)] = true
		adds = append(adds, lww.Record{Key: AddPrefix(key, name)})
	}
	return adds
}

// Remove returns the tombstones SREM writes for names: one for each add record of each
// named member, exactly the adds this read saw, and the count of distinct names that were
// members. An add it did not see (written elsewhere meanwhile) stays live: add wins.
func (s Set) Remove(names [][]byte) (tombstones []lww.Record, removed int) {
	seen := map[string]bool{}
	for _, name := range names {
		i, found := s.find(name)
		if !found || seen[string(name)] {
			continue
		}
		seen[string(name)] = true
		removed++
		for _, add := range s.members[i].Adds {
			tombstones = append(tombstones, lww.Record{Key: add, Tombstone: true})
		}
	}
	return tombstones, removed
}

// Inter returns the names that are members of every set, in byte order; none for no sets.
func Inter(sets []Set) [][]byte {
	if len(sets) == 0 {
		return nil
	}
	var out [][]byte
	for _, name := range sets[0].Names() {
		if !slices.ContainsFunc(sets[1:], func(s Set) bool { return !s.Has(name) }) {
			out = append(out, name)
		}
	}
	return out
}

// Union returns the names that are members of any set, in byte order.
func Union(sets []Set) [][]byte {
	var out [][]byte
	for _, s := range sets {
		out = append(out, s.Names()...)
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}

// Diff returns the names of the first set that are members of none of the others, in
// byte order.
func Diff(sets []Set) [][]byte {
	if len(sets) == 0 {
		return nil
	}
	var out [][]byte
	for _, name := range sets[0].Names() {
		if !slices.ContainsFunc(sets[1:], func(s Set) bool { return s.Has(name) }) {
			out = append(out, name)
		}
	}
	return out
}

// Sample picks members as SRANDMEMBER and SPOP with a count do: for count >= 0, that many
// distinct names (all of them when fewer), in random order; for a negative count, -count
// names drawn with repeats (none from an empty list). intN(n) draws from [0, n).
func Sample(names [][]byte, count int64, intN func(n int) int) [][]byte {
	if len(names) == 0 || count == 0 {
		return nil
	}
	if count < 0 {
		out := make([][]byte, -count)
		for i := range out {
			out[i] = names[intN(len(names))]
		}
		return out
	}
	names = slices.Clone(names)
	n := int(min(count, int64(len(names))))
	// A partial Fisher-Yates shuffle: the first n places take n distinct names.
	for i := range n {
		j := i + intN(len(names)-i)
		names[i], names[j] = names[j], names[i]
	}
	return names[:n]
}
