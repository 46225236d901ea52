package resp

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/kuradb/kura/internal/core/collection/set"
	"github.com/kuradb/kura/internal/core/collection/zset"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// Sorted sets (docs/redis-types.md): each member is a member record holding its score,
// last writer wins per member, and a score entry that orders it by score; the merge rule
// is package internal/core/collection/zset's. A read folds the whole sorted set (one scan of its
// key's replica set) and answers from it; an index-range read of the score entries alone
// is not built. A client blocked in BZPOPMIN or BZMPOP waits among the lists' blocked
// clients (listState, by key whatever its type), woken by the writes that add members.

// Redis's replies of the sorted-set commands.
const (
	errZaddXXNX        = "ERR XX and NX options at the same time are not compatible"
	errZaddGTLTNX      = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZaddIncrPairs   = "ERR INCR option supports a single increment-element pair"
	errZrangeLimit     = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZrangeLexScores = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	errWeight          = "ERR weight value is not a float"
	errCountPositive   = "ERR count should be greater than 0"
)

// zsetCommands are the sorted-set commands of the table.
func zsetCommands() []*command {
	read := []string{"readonly"}
	readFast := []string{"readonly", "fast"}
	write := []string{"write", "denyoom", "fast"}
	remove := []string{"write", "fast"}
	key1 := func(cmd *command) *command {
		cmd.firstKey, cmd.lastKey, cmd.keyStep = 1, 1, 1
		return cmd
	}
	ranged := func(name string, form zrangeForm) *command {
		return key1(&command{name: name, arity: -4, flags: read, run: func(c *conn, args [][]byte) { zrangeCommand(c, args, form) }})
	}
	return []*command{
		key1(&command{name: "zadd", arity: -4, flags: write, run: zaddCommand}),
		key1(&command{name: "zincrby", arity: 4, flags: write, run: zincrbyCommand}),
		key1(&command{name: "zscore", arity: 3, flags: readFast, run: zscoreCommand}),
		key1(&command{name: "zmscore", arity: -3, flags: readFast, run: zscoreCommand}),
		key1(&command{name: "zcard", arity: 2, flags: readFast, run: zcardCommand}),
		key1(&command{name: "zcount", arity: 4, flags: readFast, run: zcountCommand}),
		key1(&command{name: "zlexcount", arity: 4, flags: readFast, run: zcountCommand}),
		ranged("zrange", zrangeForm{}),
		{name: "zrangestore", arity: -5, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 2, keyStep: 1,
			run: func(c *conn, args [][]byte) { zrangeCommand(c, args, zrangeForm{store: true}) }},
		ranged("zrevrange", zrangeForm{rev: true, fixed: true}),
		ranged("zrangebyscore", zrangeForm{by: byScore, fixed: true}),
		ranged("zrevrangebyscore", zrangeForm{by: byScore, rev: true, fixed: true}),
		ranged("zrangebylex", zrangeForm{by: byLex, fixed: true}),
		ranged("zrevrangebylex", zrangeForm{by: byLex, rev: true, fixed: true}),
		key1(&command{name: "zrank", arity: 3, flags: readFast, run: zrankCommand}),
		key1(&command{name: "zrevrank", arity: 3, flags: readFast, run: zrankCommand}),
		key1(&command{name: "zrem", arity: -3, flags: remove, run: zremCommand}),
		key1(&command{name: "zremrangebyrank", arity: 4, flags: []string{"write"}, run: zremrangeCommand}),
		key1(&command{name: "zremrangebyscore", arity: 4, flags: []string{"write"}, run: zremrangeCommand}),
		key1(&command{name: "zremrangebylex", arity: 4, flags: []string{"write"}, run: zremrangeCommand}),
		key1(&command{name: "zpopmin", arity: -2, flags: remove, run: zpopCommand}),
		key1(&command{name: "zpopmax", arity: -2, flags: remove, run: zpopCommand}),
		blocking(&command{name: "bzpopmin", arity: -3, flags: remove, firstKey: 1, lastKey: -2, keyStep: 1, run: bzpopCommand}),
		blocking(&command{name: "bzpopmax", arity: -3, flags: remove, firstKey: 1, lastKey: -2, keyStep: 1, run: bzpopCommand}),
		// Their keys are counted by numkeys, as ZUNION's below.
		{name: "zmpop", arity: -4, flags: []string{"write"}, run: zmpopCommand},
		blocking(&command{name: "bzmpop", arity: -5, flags: []string{"write"}, run: zmpopCommand}),
		key1(&command{name: "zrandmember", arity: -2, flags: read, run: zrandmemberCommand}),
		key1(&command{name: "zscan", arity: -3, flags: read, run: zscanCommand}),
		// Their keys are counted by numkeys: no fixed key positions (Redis's key specs).
		{name: "zunion", arity: -3, flags: read, run: zcombineCommand},
		{name: "zinter", arity: -3, flags: read, run: zcombineCommand},
		{name: "zdiff", arity: -3, flags: read, run: zcombineCommand},
		{name: "zintercard", arity: -3, flags: read, run: zcombineCommand},
		{name: "zunionstore", arity: -4, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 1, keyStep: 1, run: zcombineCommand},
		{name: "zinterstore", arity: -4, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 1, keyStep: 1, run: zcombineCommand},
		{name: "zdiffstore", arity: -4, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 1, keyStep: 1, run: zcombineCommand},
	}
}

// readZset reads sorted set key whole, its members in order. ok is false when the reply
// is written already: an error, or WRONGTYPE for a key of another type. A missing key
// is an empty sorted set.
func (c *conn) readZset(key []byte) (members []zset.Member, ok bool) {
	coll, ok := c.readCollection(key, lww.SortedSet)
	if !ok {
		return nil, false
	}
	return zset.Fold(coll.Elements), true
}

// writeScore answers a score: a double in RESP3, a bulk string in RESP2.
func (c *conn) writeScore(score float64) { c.w.Double(zset.FormatScore(score)) }

// writeScored answers members, with their scores when withScores: flat in RESP2, a pair
// each in RESP3, as Redis does.
func (c *conn) writeScored(members []zset.Member, withScores bool) {
	switch {
	case !withScores:
		c.w.ArrayHeader(len(members))
		for _, m := range members {
			c.w.Bulk(m.Name)
		}
	case c.w.Version() >= 3:
		c.writePairs(members)
	default:
		c.w.ArrayHeader(2 * len(members))
		for _, m := range members {
			c.w.Bulk(m.Name)
			c.writeScore(m.Score)
		}
	}
}

// writePairs answers members as an array of [member, score] pairs, whatever the
// protocol (RESP3's WITHSCORES, and ZMPOP's in RESP2 too).
func (c *conn) writePairs(members []zset.Member) {
	c.w.ArrayHeader(len(members))
	for _, m := range members {
		c.w.ArrayHeader(2)
		c.w.Bulk(m.Name)
		c.writeScore(m.Score)
	}
}

// zaddCommand is ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]:
// the count of members added (and with CH, updated), or with INCR the member's new score
// (null when a condition left it alone). Without INCR it reads the members named with the
// header and writes those that change, each member record with its score entry and the
// tombstone of its old score's entry, under one timestamp with the header. A member
// another client sets at the same moment may be counted by both; the scores themselves
// merge by last writer wins.
func zaddCommand(c *conn, args [][]byte) {
	var f zset.AddFlags
	i := 2
flags:
	for ; i < len(args); i++ {
		switch upper(args[i]) {
		case "NX":
			f.NX = true
		case "XX":
			f.XX = true
		case "GT":
			f.GT = true
		case "LT":
			f.LT = true
		case "CH":
			f.CH = true
		case "INCR":
			f.Incr = true
		default:
			break flags
		}
	}
	rest := args[i:]
	switch {
	case len(rest) == 0 || len(rest)%2 != 0:
		c.w.Error(errSyntax)
		return
	case f.NX && f.XX:
		c.w.Error(errZaddXXNX)
		return
	case (f.GT && f.LT) || (f.GT && f.NX) || (f.LT && f.NX):
		c.w.Error(errZaddGTLTNX)
		return
	case f.Incr && len(rest) > 2:
		c.w.Error(errZaddIncrPairs)
		return
	}
	scores := make([]float64, len(rest)/2)
	for j := range scores {
		var ok bool
		if scores[j], ok = zset.ParseScore(rest[2*j]); !ok {
			c.w.Error(errNotFloat)
			return
		}
	}
	key := args[1]
	if f.Incr {
		c.zincr(key, rest[1], scores[0], f)
		return
	}
	// Each pair applies in turn, as in Redis: a member named twice ends with the score the
	// pairs give it in order, and counts as each step changed it.
	type state struct {
		read, now     float64
		found, exists bool
	}
	states := map[string]*state{}
	var names [][]byte
	for j := range scores {
		if _, seen := states[string(rest[2*j+1])]; !seen {
			states[string(rest[2*j+1])] = &state{}
			names = append(names, rest[2*j+1])
		}
	}
	keys := make([][]byte, len(names))
	for j, name := range names {
		keys[j] = zset.MemberKey(key, name)
	}
	coll, results, ok := c.readElements(key, lww.SortedSet, keys)
	if !ok {
		return
	}
	for j, name := range names {
		st := states[string(name)]
		if results[j].Found {
			if score, ok := zset.ParseScoreValue(results[j].Record.Value); ok {
				st.read, st.now, st.found, st.exists = score, score, true, true
			}
		}
	}
	added, updated := 0, 0
	for j, score := range scores {
		st := states[string(rest[2*j+1])]
		next, out, _ := zset.Add(st.now, st.exists, score, f)
		switch out {
		case zset.Added:
			added++
		case zset.Updated:
			updated++
		}
		st.now, st.exists = next, st.exists || out == zset.Added
	}
	w := coord.CollectionWrite{Header: &lww.Record{}}
	for _, name := range names {
		st := states[string(name)]
		if st.exists && (!st.found || st.now != st.read) {
			w.Elements = append(w.Elements, zset.Set(key, name, st.now, st.read, st.found)...)
		}
	}
	if len(w.Elements) > 0 {
		if _, err := c.writeCollection(key, lww.SortedSet, coll, w); err != nil {
			c.w.Error(errorReply(err))
			return
		}
		c.wakeBlocked(key)
	}
	if f.CH {
		added += updated
	}
	c.w.Int(int64(added))
}

// zincrbyCommand is ZINCRBY key increment member.
func zincrbyCommand(c *conn, args [][]byte) {
	step, ok := zset.ParseScore(args[2])
	if !ok {
		c.w.Error(errNotFloat)
		return
	}
	c.zincr(args[1], args[3], step, zset.AddFlags{Incr: true})
}

// zincr adds step to member's score (ZINCRBY, ZADD INCR with f's conditions) by a
// lightweight transaction on the member record, exact under races as HINCRBY is, and
// answers the new score, or null when a condition left the member alone. The score entry
// of the new score follows with the header; the entry of the old score is left, stale,
// for readers to skip: its tombstone, written after the transaction, could be newer than
// another client's ZADD that set the member back to that score in between.
func (c *conn) zincr(key, member []byte, step float64, f zset.AddFlags) {
	var outcome zset.AddOutcome
	var score float64
	_, ok := c.updateElement(key, lww.SortedSet, zset.MemberKey(key, member), func(cur []byte, found bool) ([]byte, bool, error) {
		var had float64
		if found {
			var ok bool
			if had, ok = zset.ParseScoreValue(cur); !ok {
				found = false
			}
		}
		next, out, reply := zset.Add(had, found, step, f)
		if reply != "" {
			return nil, false, redisError(reply)
		}
		outcome, score = out, next
		return zset.ScoreValue(next), out == zset.Added || out == zset.Updated, nil
	}, func(coord.UpdateResult) []lww.Record {
		return zset.Set(key, member, score, 0, false)
	})
	switch {
	case !ok:
	case outcome == zset.Skipped:
		c.w.Null()
	default:
		c.wakeBlocked(key)
		c.writeScore(score)
	}
}

// zscoreCommand is ZSCORE key member (its score or null) and ZMSCORE key member
// [member ...] (a score or null each), reading the member records named with the header.
func zscoreCommand(c *conn, args [][]byte) {
	key := args[1]
	keys := make([][]byte, len(args)-2)
	for i, name := range args[2:] {
		keys[i] = zset.MemberKey(key, name)
	}
	_, results, ok := c.readElements(key, lww.SortedSet, keys)
	if !ok {
		return
	}
	if string(c.lowerName) == "zmscore" {
		c.w.ArrayHeader(len(results))
	}
	for _, r := range results {
		if score, ok := zset.ParseScoreValue(r.Record.Value); r.Found && ok {
			c.writeScore(score)
		} else {
			c.w.Null()
		}
	}
}

// zcardCommand is ZCARD key: the count of members, read whole (kura keeps no count).
func zcardCommand(c *conn, args [][]byte) {
	if members, ok := c.readZset(args[1]); ok {
		c.w.Int(int64(len(members)))
	}
}

// zcountCommand is ZCOUNT key min max and ZLEXCOUNT key min max: the count of members in
// the score or lex range.
func zcountCommand(c *conn, args [][]byte) {
	keep, ok := c.parseRangeBounds(args[2], args[3], map[string]zrangeBy{"zcount": byScore, "zlexcount": byLex}[string(c.lowerName)])
	if !ok {
		return
	}
	members, ok := c.readZset(args[1])
	if ok {
		c.w.Int(int64(len(zset.Select(members, keep, false, 0, -1))))
	}
}

// zrangeBy is what a range of ZRANGE counts in.
type zrangeBy int

const (
	byRank zrangeBy = iota
	byScore
	byLex
)

// zrangeForm is what a command of the ZRANGE family fixes: ZRANGE fixes nothing, and
// takes BYSCORE, BYLEX and REV as options; the older commands fix them. ZRANGESTORE is
// ZRANGE storing its answer in its first key.
type zrangeForm struct {
	by    zrangeBy
	rev   bool
	fixed bool
	store bool
}

// parseRangeBounds parses min and max of a score or lex range into the test of a member,
// answering Redis's error when they are malformed.
func (c *conn) parseRangeBounds(min, max []byte, by zrangeBy) (func(zset.Member) bool, bool) {
	if by == byScore {
		r, ok := zset.ParseScoreRange(min, max)
		if !ok {
			c.w.Error(zset.ErrScoreRange)
		}
		return func(m zset.Member) bool { return r.Contains(m.Score) }, ok
	}
	r, ok := zset.ParseLexRange(min, max)
	if !ok {
		c.w.Error(zset.ErrLexRange)
	}
	return func(m zset.Member) bool { return r.Contains(m.Name) }, ok
}

// zrangeCommand is the ZRANGE family: ZRANGE key min max [BYSCORE|BYLEX] [REV] [LIMIT
// offset count] [WITHSCORES], ZREVRANGE, Z[REV]RANGEBYSCORE and Z[REV]RANGEBYLEX, with
// Redis's parsing and errors, in that order; and ZRANGESTORE dst src min max ...
// without WITHSCORES, answering the count it stored.
func zrangeCommand(c *conn, args [][]byte, form zrangeForm) {
	var dst []byte
	if form.store {
		dst, args = args[1], args[1:]
		if !c.sameSlot([][]byte{dst, args[1]}) {
			return
		}
	}
	by, rev := form.by, form.rev
	withScores, limited := false, false
	offset, count := int64(0), int64(-1)
	for i := 4; i < len(args); i++ {
		switch word := upper(args[i]); {
		case word == "WITHSCORES" && !form.store:
			withScores = true
		case word == "LIMIT" && i+2 < len(args):
			var okOffset, okCount bool
			offset, okOffset = parseInt(args[i+1])
			count, okCount = parseInt(args[i+2])
			if !okOffset || !okCount {
				c.w.Error(errNotInt)
				return
			}
			limited = true
			i += 2
		case word == "REV" && !form.fixed:
			rev = true
		case word == "BYSCORE" && !form.fixed && by == byRank:
			by = byScore
		case word == "BYLEX" && !form.fixed && by == byRank:
			by = byLex
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	switch {
	case limited && by == byRank:
		c.w.Error(errZrangeLimit)
		return
	case withScores && by == byLex:
		c.w.Error(errZrangeLexScores)
		return
	}
	min, max := args[2], args[3]
	if rev && by != byRank {
		min, max = max, min
	}
	var start, stop int64
	var keep func(zset.Member) bool
	if by == byRank {
		var okStart, okStop bool
		start, okStart = parseInt(min)
		stop, okStop = parseInt(max)
		if !okStart || !okStop {
			c.w.Error(errNotInt)
			return
		}
	} else {
		var ok bool
		if keep, ok = c.parseRangeBounds(min, max, by); !ok {
			return
		}
	}
	members, ok := c.readZset(args[1])
	if !ok {
		return
	}
	if by == byRank {
		members = zset.Ranks(members, start, stop, rev)
	} else {
		members = zset.Select(members, keep, rev, offset, count)
	}
	if form.store {
		c.storeZset(dst, members)
		return
	}
	c.writeScored(members, withScores)
}

// storeZset makes dst the sorted set of members, whatever it held (its expiry too), and
// answers their count, as Redis's *STORE commands: a new life of the key (a reset point
// before the write) with every member written, or for no member dst deleted as DEL
// deletes it.
func (c *conn) storeZset(dst []byte, members []zset.Member) {
	if len(members) == 0 {
		c.storeNothing(dst)
		return
	}
	w := coord.CollectionWrite{Header: &lww.Record{}, Reset: coord.ResetReplace}
	for _, m := range members {
		w.Elements = append(w.Elements, zset.Set(dst, m.Name, m.Score, 0, false)...)
	}
	if _, err := c.writeCollection(dst, lww.SortedSet, coord.Collection{}, w); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.wakeBlocked(dst)
	c.w.Int(int64(len(members)))
}

// zcombineCommand is ZUNION, ZINTER and ZDIFF numkeys key [key ...] [WEIGHTS w ...]
// [AGGREGATE SUM|MIN|MAX] [WITHSCORES] (ZDIFF without WEIGHTS and AGGREGATE), their
// *STORE forms, dst first and without WITHSCORES, which store the result in dst (keys of
// any hash tags, except inside EXEC: sameSlot), and ZINTERCARD numkeys key [key ...]
// [LIMIT limit], the size of the intersection (at most limit when it is not 0). An input
// is a sorted set or a set, whose members Redis scores 1 (readScoredSets).
func zcombineCommand(c *conn, args [][]byte) {
	name := string(c.lowerName)
	store, card := strings.HasSuffix(name, "store"), name == "zintercard"
	op := map[string]zset.Op{"zunion": zset.Union, "zinter": zset.Inter, "zdiff": zset.Diff, "zintercard": zset.Inter}[strings.TrimSuffix(name, "store")]
	var dst []byte
	if store {
		dst, args = args[1], args[1:]
	}
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		c.w.Error(errNotInt)
		return
	case n < 1:
		c.w.Error(fmt.Sprintf("ERR at least 1 input key is needed for '%s' command", name))
		return
	case n > int64(len(args)-2):
		c.w.Error(errSyntax)
		return
	}
	keys, rest := args[2:2+n], args[2+n:]
	var weights []float64
	agg, withScores, limit := zset.Sum, false, int64(0)
	for len(rest) > 0 {
		switch word := upper(rest[0]); {
		case op != zset.Diff && !card && word == "WEIGHTS" && len(rest) > int(n):
			weights = make([]float64, n)
			for i := range weights {
				if weights[i], ok = zset.ParseScore(rest[1+i]); !ok {
					c.w.Error(errWeight)
					return
				}
			}
			rest = rest[1+n:]
		case op != zset.Diff && !card && word == "AGGREGATE" && len(rest) >= 2:
			switch upper(rest[1]) {
			case "SUM":
				agg = zset.Sum
			case "MIN":
				agg = zset.Min
			case "MAX":
				agg = zset.Max
			default:
				c.w.Error(errSyntax)
				return
			}
			rest = rest[2:]
		case !store && !card && word == "WITHSCORES":
			withScores, rest = true, rest[1:]
		case card && word == "LIMIT" && len(rest) >= 2:
			if limit, ok = parseInt(rest[1]); !ok || limit < 0 {
				c.w.Error(errLimitNegative)
				return
			}
			rest = rest[2:]
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if store && !c.sameSlot(append([][]byte{dst}, keys...)) {
		return
	}
	sets, ok := c.readScoredSets(keys)
	if !ok {
		return
	}
	members := zset.Combine(op, sets, weights, agg)
	switch {
	case card && limit > 0:
		c.w.Int(min(int64(len(members)), limit))
	case card:
		c.w.Int(int64(len(members)))
	case store:
		c.storeZset(dst, members)
	default:
		c.writeScored(members, withScores)
	}
}

// readScoredSets reads the inputs of zcombineCommand, each whole, side by side (not one
// snapshot): a sorted set's members, or a set's, each with score 1 as Redis takes a set;
// a missing key is empty, a key of another type WRONGTYPE. ok is false when the reply is
// written already.
func (c *conn) readScoredSets(keys [][]byte) (sets [][]zset.Member, ok bool) {
	sets = make([][]zset.Member, len(keys))
	err := forEach(len(keys), func(i int) error {
		coll, err := c.loadCollection(keys[i])
		switch {
		case err != nil:
			return err
		case !coll.Found:
		case coll.Header.Type == lww.SortedSet:
			sets[i] = zset.Fold(coll.Elements)
		case coll.Header.Type == lww.Set:
			for _, name := range set.Fold(coll.Elements).Names() {
				sets[i] = append(sets[i], zset.Member{Name: name, Score: 1})
			}
		default:
			return redisError(errWrongType)
		}
		return nil
	})
	if err != nil {
		c.replyTransactError(err)
		return nil, false
	}
	return sets, true
}

// zrankCommand is ZRANK key member and ZREVRANK: the member's rank, or null.
func zrankCommand(c *conn, args [][]byte) {
	members, ok := c.readZset(args[1])
	if !ok {
		return
	}
	if rank, found := zset.Rank(members, args[2], string(c.lowerName) == "zrevrank"); found {
		c.w.Int(int64(rank))
		return
	}
	c.w.Null()
}

// removeScored removes gone, members of sorted set key as read. A sorted set left
// without members keeps its header, as an emptied set or list does: a ZADD concurrent with
// the removal, whose header a tombstone newer than it would hide (and whose member the
// next ZADD's reset point would then remove), is read, not lost.
func (c *conn) removeScored(key []byte, gone []zset.Member) bool {
	if len(gone) == 0 {
		return true
	}
	var w coord.CollectionWrite
	for _, m := range gone {
		w.Elements = append(w.Elements, zset.Remove(key, m)...)
	}
	if _, err := c.writeCollection(key, lww.SortedSet, coord.Collection{Found: true}, w); err != nil {
		c.w.Error(errorReply(err))
		return false
	}
	return true
}

// zremCommand is ZREM key member [member ...]: the count of members it removed. It reads
// the whole sorted set.
func zremCommand(c *conn, args [][]byte) {
	members, ok := c.readZset(args[1])
	if !ok {
		return
	}
	named := map[string]bool{}
	for _, name := range args[2:] {
		named[string(name)] = true
	}
	var gone []zset.Member
	for _, m := range members {
		if named[string(m.Name)] {
			gone = append(gone, m)
		}
	}
	if c.removeScored(args[1], gone) {
		c.w.Int(int64(len(gone)))
	}
}

// zremrangeCommand is ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max and
// ZREMRANGEBYLEX key min max: the count of members removed.
func zremrangeCommand(c *conn, args [][]byte) {
	var keep func(zset.Member) bool
	var start, stop int64
	switch name := string(c.lowerName); name {
	case "zremrangebyrank":
		var okStart, okStop bool
		start, okStart = parseInt(args[2])
		stop, okStop = parseInt(args[3])
		if !okStart || !okStop {
			c.w.Error(errNotInt)
			return
		}
	default:
		var ok bool
		if keep, ok = c.parseRangeBounds(args[2], args[3], map[string]zrangeBy{"zremrangebyscore": byScore, "zremrangebylex": byLex}[name]); !ok {
			return
		}
	}
	members, ok := c.readZset(args[1])
	if !ok {
		return
	}
	var gone []zset.Member
	if keep == nil {
		gone = zset.Ranks(members, start, stop, false)
	} else {
		gone = zset.Select(members, keep, false, 0, -1)
	}
	if c.removeScored(args[1], gone) {
		c.w.Int(int64(len(gone)))
	}
}

// popMembers pops up to count members of sorted set key, of the lowest scores (the
// highest when highest), each by a lightweight transaction on its member record (zset.Take),
// as popItems pops a list's items: of two clients popping at once, through any nodes,
// each member goes to one; a member another client took or moved first is skipped, and
// the set read again when this read's members run out before count. ok is false when the
// reply is written.
func (c *conn) popMembers(key []byte, highest bool, count int64) (popped []zset.Member, ok bool) {
	for {
		coll, ok := c.readWaited(key, lww.SortedSet)
		if !ok {
			return nil, false
		}
		want := count - int64(len(popped))
		if want == 0 {
			return popped, true
		}
		read := zset.Ranks(zset.Fold(coll.Elements), 0, want-1, highest)
		var taken []zset.Member
		for _, m := range read {
			res, err := c.take(zset.MemberKey(key, m.Name), zset.Take(coll.Reset, m.Score))
			switch {
			case err != nil && len(popped)+len(taken) == 0:
				c.w.Error(errorReply(err))
				return nil, false
			case err != nil:
				// The members taken are gone: answered, rather than lost behind an error.
				c.dropEntries(key, taken)
				return append(popped, taken...), true
			case res.Applied:
				taken = append(taken, m)
			}
		}
		c.dropEntries(key, taken)
		popped = append(popped, taken...)
		if len(taken) == len(read) {
			return popped, true
		}
	}
}

// dropEntries tombstones the score entries of members popped from sorted set key. The
// pop itself is the member record's tombstone, so a failure here is not answered: it
// leaves stale entries, which readers skip (zset.Fold), and answering an error would lose
// the members popped. A ZADD of one of them at the same score between its pop and this
// write loses its entry likewise, and is read by its member record all the same.
func (c *conn) dropEntries(key []byte, popped []zset.Member) {
	if len(popped) == 0 {
		return
	}
	var w coord.CollectionWrite
	for _, m := range popped {
		w.Elements = append(w.Elements, lww.Record{Key: zset.ScoreKey(key, m.Score, m.Name), Tombstone: true})
	}
	_, _ = c.writeCollection(key, lww.SortedSet, coord.Collection{Found: true}, w)
}

// zpopCommand is ZPOPMIN key [count] and ZPOPMAX: the members of the lowest (highest)
// scores popped (popMembers) and answered with their scores, flat without a count, a pair
// each with one in RESP3.
func zpopCommand(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(errSyntax)
		return
	}
	count, counted := int64(1), len(args) == 3
	if counted {
		var ok bool
		if count, ok = parseInt(args[2]); !ok {
			c.w.Error(errNotInt)
			return
		}
		if count < 0 {
			c.w.Error(errNotPositive)
			return
		}
	}
	popped, ok := c.popMembers(args[1], string(c.lowerName) == "zpopmax", count)
	switch {
	case !ok:
	case counted:
		c.writeScored(popped, true)
	default:
		// Without a count the reply is flat in RESP3 too.
		c.w.ArrayHeader(2 * len(popped))
		for _, m := range popped {
			c.w.Bulk(m.Name)
			c.writeScore(m.Score)
		}
	}
}

// bzpopCommand is BZPOPMIN and BZPOPMAX key [key ...] timeout: the member of the lowest
// (highest) score of the first sorted set, in the order named, that has one, as [key,
// member, score]; it waits for one (block) when all are empty, and answers null when the
// timeout passes.
func bzpopCommand(c *conn, args [][]byte) {
	deadline, forever, ok := c.parseTimeout(args[len(args)-1])
	if !ok {
		return
	}
	keys, highest := args[1:len(args)-1], string(c.lowerName) == "bzpopmax"
	if c.block(keys, lww.SortedSet, deadline, forever, func() bool {
		key, popped, ok := popFirst(keys, func(key []byte) ([]zset.Member, bool) { return c.popMembers(key, highest, 1) })
		if ok && len(popped) > 0 {
			c.w.ArrayHeader(3)
			c.w.Bulk(key)
			c.w.Bulk(popped[0].Name)
			c.writeScore(popped[0].Score)
		}
		return !ok || len(popped) > 0
	}) {
		c.nullArray()
	}
}

// zmpopCommand is ZMPOP numkeys key [key ...] MIN|MAX [COUNT count] and BZMPOP timeout
// numkeys key [key ...] MIN|MAX [COUNT count]: up to count members popped from the first
// sorted set that has one, as [key, [[member, score] ...]], or null when none has (BZMPOP
// waits for one until its timeout). Redis's parsing and errors, in its order: BZMPOP's
// timeout is read last.
func zmpopCommand(c *conn, args [][]byte) {
	blocks := c.lowerName[0] == 'b'
	rest := args[1:]
	if blocks {
		rest = args[2:]
	}
	keys, end, count, ok := c.parseMultiPop(rest, func(word []byte) bool { u := upper(word); return u == "MIN" || u == "MAX" })
	if !ok {
		return
	}
	highest := upper(end) == "MAX"
	try := func() bool {
		key, popped, ok := popFirst(keys, func(key []byte) ([]zset.Member, bool) { return c.popMembers(key, highest, count) })
		if ok && len(popped) > 0 {
			c.w.ArrayHeader(2)
			c.w.Bulk(key)
			c.writePairs(popped)
		}
		return !ok || len(popped) > 0
	}
	if !blocks {
		if !try() {
			c.nullArray()
		}
		return
	}
	deadline, forever, ok := c.parseTimeout(args[1])
	if ok && c.block(keys, lww.SortedSet, deadline, forever, try) {
		c.nullArray()
	}
}

// zrandmemberCommand is ZRANDMEMBER key [count [WITHSCORES]], as HRANDFIELD: one member
// (or null), count distinct members, or for a negative count that many drawn with
// repeats.
func zrandmemberCommand(c *conn, args [][]byte) {
	count, withCount, ok := c.parseRandomCount(args, "WITHSCORES")
	if !ok {
		return
	}
	members, ok := c.readZset(args[1])
	if !ok {
		return
	}
	if !withCount {
		if len(members) == 0 {
			c.w.Null()
			return
		}
		c.w.Bulk(members[rand.IntN(len(members))].Name)
		return
	}
	var picked []zset.Member
	switch {
	case len(members) == 0 || count == 0:
	case count > 0:
		rand.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		picked = members[:min(int(count), len(members))]
	default:
		if -count > int64(c.s.cfg.Limits.ScanLimitMax) {
			c.w.Error(fmt.Sprintf("ERR kura answers at most %d members drawn with repeats", c.s.cfg.Limits.ScanLimitMax))
			return
		}
		for range -count {
			picked = append(picked, members[rand.IntN(len(members))])
		}
	}
	c.writeScored(picked, len(args) == 4)
}

// zscanCommand is ZSCAN key cursor [MATCH pattern] [COUNT count]: the whole sorted set
// (filtered by MATCH) in one reply with cursor 0, member then score, as Redis answers a
// small one, since it is read whole anyway.
func zscanCommand(c *conn, args [][]byte) {
	opts, ok := c.parseElementScan(args)
	if !ok {
		return
	}
	members, ok := c.readZset(args[1])
	if !ok {
		return
	}
	writeElementScan(c, members, opts.pattern, func(m zset.Member) []byte { return m.Name },
		func(m zset.Member) []byte { return []byte(zset.FormatScore(m.Score)) })
}
