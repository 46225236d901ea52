package resp

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/kuradb/kura/internal/core/collection/set"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// Sets (docs/redis-types.md): an add-wins observed-remove set (package internal/core/collection/set).
// SADD writes an add record, tagged uniquely, for each member it does not find; SREM
// tombstones the add records it read; the key's own record is the header, of type set,
// holding the key's expiry. A set whose last member is removed keeps its header: a
// remove cannot tell whether another DC is adding a member at the same moment, and a
// header's tombstone newer than that add would hide it (docs/redis.md).

// Redis's replies of the set commands.
const (
	errNumkeys       = "ERR numkeys should be greater than 0"
	errNumkeysOver   = "ERR Number of keys can't be greater than number of args"
	errLimitNegative = "ERR LIMIT can't be negative"
)

// setCommands are the set commands of the table.
func setCommands() []*command {
	readKey := []string{"readonly", "fast"}
	keys := func(first, last int, cmd *command) *command {
		cmd.firstKey, cmd.lastKey, cmd.keyStep = first, last, 1
		return cmd
	}
	return []*command{
		keys(1, 1, &command{name: "sadd", arity: -3, flags: []string{"write", "denyoom", "fast"}, run: saddCommand}),
		keys(1, 1, &command{name: "srem", arity: -3, flags: []string{"write", "fast"}, run: sremCommand}),
		keys(1, 1, &command{name: "smembers", arity: 2, flags: []string{"readonly"}, run: smembersCommand}),
		keys(1, 1, &command{name: "sismember", arity: 3, flags: readKey, run: sismemberCommand}),
		keys(1, 1, &command{name: "smismember", arity: -3, flags: readKey, run: sismemberCommand}),
		keys(1, 1, &command{name: "scard", arity: 2, flags: readKey, run: scardCommand}),
		keys(1, 1, &command{name: "spop", arity: -2, flags: []string{"write", "fast"}, run: spopCommand}),
		keys(1, 1, &command{name: "srandmember", arity: -2, flags: []string{"readonly"}, run: srandmemberCommand}),
		keys(1, 1, &command{name: "sscan", arity: -3, flags: []string{"readonly"}, run: sscanCommand}),
		keys(1, -1, &command{name: "sinter", arity: -2, flags: []string{"readonly"}, run: salgebraCommand}),
		keys(1, -1, &command{name: "sunion", arity: -2, flags: []string{"readonly"}, run: salgebraCommand}),
		keys(1, -1, &command{name: "sdiff", arity: -2, flags: []string{"readonly"}, run: salgebraCommand}),
		// Its keys follow numkeys: COMMAND adds movablekeys from its key specification.
		keys(1, 1, &command{name: "sintercard", arity: -3, flags: []string{"readonly"}, run: sintercardCommand}),
		keys(1, -1, &command{name: "sinterstore", arity: -3, flags: []string{"write", "denyoom"}, run: sstoreCommand}),
		keys(1, -1, &command{name: "sunionstore", arity: -3, flags: []string{"write", "denyoom"}, run: sstoreCommand}),
		keys(1, -1, &command{name: "sdiffstore", arity: -3, flags: []string{"write", "denyoom"}, run: sstoreCommand}),
		keys(1, 2, &command{name: "smove", arity: 4, flags: []string{"write", "fast"}, run: smoveCommand}),
	}
}

// readSet reads set key whole. ok is false when the reply is written already: an error,
// or WRONGTYPE for a key of another type. A missing key is an empty set.
func (c *conn) readSet(key []byte) (coll coord.Collection, s set.Set, ok bool) {
	coll, ok = c.readCollection(key, lww.Set)
	return coll, set.Fold(coll.Elements), ok
}

// readMembers reads the add records of the named members of set key, with its header,
// without reading the rest of the set. ok is false when the reply is written already.
func (c *conn) readMembers(key []byte, names [][]byte) (coll coord.Collection, s set.Set, ok bool) {
	names = distinct(names)
	prefixes := make([][]byte, len(names))
	for i, name := range names {
		prefixes[i] = set.AddPrefix(key, name)
	}
	var err error
	if c.txn != nil {
		coll, err = c.txn.prefixes(key, prefixes)
	} else {
		start, level := time.Now(), c.collectionLevel()
		coll, err = c.s.cfg.Backend.ReadPrefixes(c.ctx, c.keyspace, key, prefixes, level)
		c.observe("get", level, start, err)
		coll, err = c.settleCollection(key, lww.Set, coll, err)
	}
	c.countLookup(coll.Found, err)
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
		return coll, s, false
	case coll.Found && coll.Header.Type != lww.Set:
		c.w.Error(errWrongType)
		return coll, s, false
	}
	return coll, set.Fold(coll.Elements), true
}

// readSets reads sets keys whole, together. ok is false when the reply is written
// already: an error, or WRONGTYPE when any key is of another type, as Redis checks every
// key even once one is missing.
func (c *conn) readSets(keys [][]byte) (sets []set.Set, ok bool) {
	sets = make([]set.Set, len(keys))
	err := forEach(len(keys), func(i int) error {
		coll, err := c.loadCollection(keys[i])
		if err == nil && coll.Found && coll.Header.Type != lww.Set {
			return redisError(errWrongType)
		}
		sets[i] = set.Fold(coll.Elements)
		return err
	})
	if err != nil {
		c.replyTransactError(err)
		return nil, false
	}
	return sets, true
}

// addMembers writes adds (set.Set.Add's) to set key, read as coll, with the header. A key
// that does not exist gets the reset point of the life that ended before (coll.Ended),
// not one at this write's time: another SADD creating the key at the same moment, in
// another DC perhaps, has its adds stamped before this one's, and they must survive.
func (c *conn) addMembers(key []byte, coll coord.Collection, adds []lww.Record) error {
	if len(adds) == 0 {
		return nil
	}
	_, err := c.writeCollection(key, lww.Set, coll, coord.CollectionWrite{Header: &lww.Record{}, Tagged: adds, Reset: coord.ResetEnded, Ended: coll.Ended})
	return err
}

// removeMembers tombstones the add records of names that s, read of set key, holds, and
// returns how many names were members.
func (c *conn) removeMembers(key []byte, s set.Set, names [][]byte) (int, error) {
	tombstones, removed := s.Remove(names)
	if len(tombstones) == 0 {
		return 0, nil
	}
	_, err := c.writeCollection(key, lww.Set, coord.Collection{Found: true}, coord.CollectionWrite{Elements: tombstones})
	return removed, err
}

// writeMembers answers names as a set reply (an array in RESP2).
func (c *conn) writeMembers(names [][]byte) {
	c.w.SetHeader(len(names))
	for _, name := range names {
		c.w.Bulk(name)
	}
}

// saddCommand is SADD key member [member ...]: the count of members it added. It reads
// the named members' add records only, and writes one add, tagged, for each member it did
// not find, with the header, under one timestamp. A member it found gets no new add: a
// concurrent SREM elsewhere that saw the member removes it.
func saddCommand(c *conn, args [][]byte) {
	key := args[1]
	coll, s, ok := c.readMembers(key, args[2:])
	if !ok {
		return
	}
	adds := s.Add(key, args[2:])
	if err := c.addMembers(key, coll, adds); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(len(adds)))
}

// sremCommand is SREM key member [member ...]: the count of members it removed, each by
// tombstoning the add records this read found. An add it did not see (another DC's, at
// the same moment) survives: add wins.
func sremCommand(c *conn, args [][]byte) {
	key := args[1]
	_, s, ok := c.readMembers(key, args[2:])
	if !ok {
		return
	}
	removed, err := c.removeMembers(key, s, args[2:])
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(removed))
}

// smembersCommand is SMEMBERS key, in byte order.
func smembersCommand(c *conn, args [][]byte) {
	if _, s, ok := c.readSet(args[1]); ok {
		c.writeMembers(s.Names())
	}
}

// sismemberCommand is SISMEMBER key member (1 or 0) and SMISMEMBER key member [member
// ...] (1 or 0 per member), reading the named members' adds only.
func sismemberCommand(c *conn, args [][]byte) {
	_, s, ok := c.readMembers(args[1], args[2:])
	if !ok {
		return
	}
	if string(c.lowerName) == "sismember" {
		c.w.Int(boolInt(s.Has(args[2])))
		return
	}
	c.w.ArrayHeader(len(args) - 2)
	for _, name := range args[2:] {
		c.w.Int(boolInt(s.Has(name)))
	}
}

// scardCommand is SCARD key: the count of members, read whole (kura keeps no count).
func scardCommand(c *conn, args [][]byte) {
	if _, s, ok := c.readSet(args[1]); ok {
		c.w.Int(int64(s.Len()))
	}
}

// spopCommand is SPOP key [count]: members drawn at random and removed, by tombstoning
// the adds this read found. It is not a transaction: two SPOPs at the same moment (in two
// DCs, or in one) may return the same member, and a member added elsewhere at that moment
// survives the SPOP that returned it (docs/redis.md).
func spopCommand(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	count, withCount := int64(1), len(args) == 3
	if withCount {
		var ok bool
		if count, ok = parseInt(args[2]); !ok || count < 0 {
			c.w.Error(errNotPositive)
			return
		}
	}
	key := args[1]
	_, s, ok := c.readSet(key)
	if !ok {
		return
	}
	picked := set.Sample(s.Names(), count, rand.IntN)
	if _, err := c.removeMembers(key, s, picked); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	switch {
	case withCount:
		c.writeMembers(picked)
	case len(picked) == 0:
		c.w.Null()
	default:
		c.w.Bulk(picked[0])
	}
}

// srandmemberCommand is SRANDMEMBER key [count], as Redis 7.0: one member (or null),
// count distinct members, or for a negative count that many drawn with repeats.
func srandmemberCommand(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	count, withCount := int64(1), len(args) == 3
	if withCount {
		var ok bool
		switch count, ok = parseInt(args[2]); {
		case !ok:
			c.w.Error(errNotInt)
			return
		case count == math.MinInt64:
			c.w.Error(fmt.Sprintf("ERR value is out of range, value must between %d and %d", -math.MaxInt64, math.MaxInt64))
			return
		case -count > int64(c.s.cfg.Limits.ScanLimitMax):
			c.w.Error(fmt.Sprintf("ERR kura answers at most %d members drawn with repeats", c.s.cfg.Limits.ScanLimitMax))
			return
		}
	}
	_, s, ok := c.readSet(args[1])
	if !ok {
		return
	}
	picked := set.Sample(s.Names(), count, rand.IntN)
	switch {
	case withCount:
		c.w.ArrayHeader(len(picked))
		for _, name := range picked {
			c.w.Bulk(name)
		}
	case len(picked) == 0:
		c.w.Null()
	default:
		c.w.Bulk(picked[0])
	}
}

// sscanCommand is SSCAN key cursor [MATCH pattern] [COUNT count]: the whole set in one
// reply with cursor 0, as Redis answers a small set, since a set is read whole anyway.
func sscanCommand(c *conn, args [][]byte) {
	opts, ok := c.parseElementScan(args)
	if !ok {
		return
	}
	_, s, ok := c.readSet(args[1])
	if !ok {
		return
	}
	writeElementScan(c, s.Names(), opts.pattern, func(name []byte) []byte { return name }, nil)
}

// algebra is the set operation a command names by its prefix (SINTER, SUNION, SDIFF and
// their STORE forms).
func (c *conn) algebra(sets []set.Set) [][]byte {
	switch c.lowerName[1] {
	case 'i':
		return set.Inter(sets)
	case 'u':
		return set.Union(sets)
	}
	return set.Diff(sets)
}

// salgebraCommand is SINTER, SUNION and SDIFF key [key ...]. They only read, so their
// keys may lie on different replica sets (of different hash tags), read together.
func salgebraCommand(c *conn, args [][]byte) {
	if sets, ok := c.readSets(args[1:]); ok {
		c.writeMembers(c.algebra(sets))
	}
}

// sintercardCommand is SINTERCARD numkeys key [key ...] [LIMIT limit]: the size of the
// intersection, at most limit when it is not 0.
func sintercardCommand(c *conn, args [][]byte) {
	numkeys, ok := parseInt(args[1])
	if !ok || numkeys < 1 {
		c.w.Error(errNumkeys)
		return
	}
	if numkeys > int64(len(args)-2) {
		c.w.Error(errNumkeysOver)
		return
	}
	keys, rest := args[2:2+numkeys], args[2+numkeys:]
	var limit int64
	for i := 0; i < len(rest); i++ {
		if upper(rest[i]) != "LIMIT" || i+1 == len(rest) {
			c.w.Error(errSyntax)
			return
		}
		i++
		if limit, ok = parseInt(rest[i]); !ok || limit < 0 {
			c.w.Error(errLimitNegative)
			return
		}
	}
	sets, ok := c.readSets(keys)
	if !ok {
		return
	}
	n := int64(len(set.Inter(sets)))
	if limit > 0 {
		n = min(n, limit)
	}
	c.w.Int(n)
}

// sstoreCommand is SINTERSTORE, SUNIONSTORE and SDIFFSTORE destination key [key ...]:
// the result replaces destination whole (of any type, without its expiry), and an empty
// result deletes it, as DEL does; the count of its members. The keys may be of any hash
// tags, except inside EXEC (sameSlot). As a DEL, the replacement is ordered by time: a member
// another DC adds to destination at the same moment with an earlier timestamp is gone.
func sstoreCommand(c *conn, args [][]byte) {
	if !c.sameSlot(args[1:]) {
		return
	}
	dest := args[1]
	sets, ok := c.readSets(args[2:])
	if !ok {
		return
	}
	names := c.algebra(sets)
	if len(names) == 0 {
		c.storeNothing(dest)
		return
	}
	// Written as a key created anew (a reset point just before it): no member, expiry or
	// value of what destination held before survives.
	w := coord.CollectionWrite{Header: &lww.Record{}, Tagged: set.Set{}.Add(dest, names), Reset: coord.ResetReplace}
	if _, err := c.writeCollection(dest, lww.Set, coord.Collection{}, w); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(len(names)))
}

// smoveCommand is SMOVE source destination member: 1 when member was in source and is
// now in destination, 0 when it was not in source. The keys may be of any hash tags,
// except inside EXEC (sameSlot). Two keys of one tag in a keyspace of partition
// transactions move the member in one transaction (oneTransaction). Otherwise it is not
// atomic: the add to destination is written before the removal from source, so a
// failure between leaves the member in both, never in neither.
func smoveCommand(c *conn, args [][]byte) {
	if !c.sameSlot(args[1:3]) {
		return
	}
	if reply, done := c.oneTransaction(args); done {
		if reply != nil {
			c.w.raw(reply)
		}
		return
	}
	src, dst, member := args[1], args[2], args[3:4]
	srcColl, srcSet, ok := c.readMembers(src, member)
	switch {
	case !ok:
		return
	case !srcColl.Found:
		// As Redis: a missing source answers 0 before destination's type is checked.
		c.w.Int(0)
		return
	}
	dstColl, dstSet, ok := c.readMembers(dst, member)
	switch {
	case !ok:
		return
	case !srcSet.Has(member[0]):
		c.w.Int(0)
		return
	case bytes.Equal(src, dst):
		c.w.Int(1)
		return
	}
	if err := c.addMembers(dst, dstColl, dstSet.Add(dst, member)); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	if _, err := c.removeMembers(src, srcSet, member); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(1)
}
