package resp

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/core/collection/list"
	"github.com/kuradb/kura/internal/core/collection/set"
	"github.com/kuradb/kura/internal/core/collection/zset"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// SORT and SORT_RO, as Redis's src/sort.c: a list, set or sorted set sorted by its
// elements or by the keys a BY pattern forms from them, answered (or, with STORE, written
// as a list) element by element or as the keys GET patterns form. The patterns may form
// any key, as on a single redis-server: kura's coordinators read every key, as MGET does
// (Redis Cluster refuses them, its nodes holding only their slots' keys).

// sortCommands are the sort commands of the table.
func sortCommands() []*command {
	return []*command{
		{name: "sort", arity: -2, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 1, keyStep: 1, run: sortCommand},
		{name: "sort_ro", arity: -2, flags: []string{"readonly"}, firstKey: 1, lastKey: 1, keyStep: 1, run: sortCommand},
	}
}

// sortPattern is a BY or GET pattern: "#" is the element itself; otherwise the first '*'
// is replaced by the element to form a key, a string key's value, or with "->field" after
// the '*' a hash key's field. A pattern without '*' forms no key (BY: no sorting; GET:
// every value missing).
type sortPattern struct {
	self, constant bool
	// prefix and suffix surround the element in the key formed; field is the hash field
	// after "->", nil for a string key.
	prefix, suffix, field []byte
}

// parseSortPattern reads a pattern as Redis's lookupKeyByPattern does: "->" with nothing
// after it is part of the key's name.
func parseSortPattern(p []byte) sortPattern {
	if string(p) == "#" {
		return sortPattern{self: true}
	}
	star := bytes.IndexByte(p, '*')
	if star < 0 {
		return sortPattern{constant: true}
	}
	sp := sortPattern{prefix: p[:star], suffix: p[star+1:]}
	if arrow := bytes.Index(sp.suffix, []byte("->")); arrow >= 0 && arrow+2 < len(sp.suffix) {
		sp.suffix, sp.field = sp.suffix[:arrow], sp.suffix[arrow+2:]
	}
	return sp
}

// key is the key the pattern forms from elem.
func (sp sortPattern) key(elem []byte) []byte {
	return slices.Concat(sp.prefix, elem, sp.suffix)
}

// sortOptions are SORT's options, parsed.
type sortOptions struct {
	by            *sortPattern
	gets          []sortPattern
	desc, alpha   bool
	dontSort      bool
	offset, count int64
	store         []byte
	hasStore      bool
}

// parseSortOptions reads SORT's options after the key in Redis's order, the first error
// answered: a syntax error, a LIMIT that is no integer, STORE in SORT_RO. ok is false
// when the reply is written.
func (c *conn) parseSortOptions(args [][]byte, readonly bool) (o sortOptions, ok bool) {
	o, refusal := parseSortArgs(args, readonly)
	if refusal != "" {
		c.w.Error(refusal)
		return o, false
	}
	return o, true
}

// parseSortArgs reads SORT's options after the key in Redis's order; refusal is the
// first error's reply, empty when there is none.
func parseSortArgs(args [][]byte, readonly bool) (o sortOptions, refusal string) {
	o.count = -1
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch word := strings.ToUpper(string(args[j])); {
		case word == "ASC":
			o.desc = false
		case word == "DESC":
			o.desc = true
		case word == "ALPHA":
			o.alpha = true
		case word == "LIMIT" && left >= 2:
			var isInt bool
			if o.offset, isInt = parseInt(args[j+1]); isInt {
				o.count, isInt = parseInt(args[j+2])
			}
			if !isInt {
				return o, errNotInt
			}
			j += 2
		case word == "STORE" && !readonly && left >= 1:
			o.store, o.hasStore = args[j+1], true
			j++
		case word == "BY" && left >= 1:
			sp := parseSortPattern(args[j+1])
			// As Redis: a BY without '*' leaves the elements unsorted, even if another BY
			// follows.
			o.by, o.dontSort = &sp, o.dontSort || sp.constant
			j++
		case word == "GET" && left >= 1:
			o.gets = append(o.gets, parseSortPattern(args[j+1]))
			j++
		default:
			return o, errSyntax
		}
	}
	return o, ""
}

// formsKeys reports whether sp reads keys formed from the elements: neither "#" nor a
// pattern without '*'.
func (sp sortPattern) formsKeys() bool {
	return !sp.self && !sp.constant
}

// sortRefusedInMulti is the refusal of a SORT or SORT_RO queued inside MULTI whose BY or
// GET patterns form keys, empty when it can be queued. The keys such a pattern forms
// depend on the elements, unknown until EXEC runs, so the transaction's round cannot
// read them, and reading them beside it would give a transaction that is not isolated
// and may not see its own writes. Options that do not parse are queued: EXEC answers
// their error, as Redis does.
func sortRefusedInMulti(name string, args [][]byte) string {
	o, refusal := parseSortArgs(args, name == "sort_ro")
	// A BY pattern after a BY without '*' is not read: the elements stay unsorted.
	byReads := o.by != nil && !o.dontSort && o.by.formsKeys()
	if refusal != "" || !byReads && !slices.ContainsFunc(o.gets, sortPattern.formsKeys) {
		return ""
	}
	return "ERR kura: SORT's BY and GET patterns with '*' read keys formed from the elements, which a transaction cannot read with its own; inside MULTI, SORT takes only BY and GET patterns without '*' (BY nosort, GET #)"
}

// sortElements are the elements of a list, set or sorted set as read, in its own order:
// a list's, a sorted set's by score, a set's by bytes (Redis's: its hash table's). ok is
// false when the reply is written already (an error, WRONGTYPE).
func (c *conn) sortElements(key []byte) (elems [][]byte, typ lww.Type, ok bool) {
	coll, err := c.loadCollection(key)
	if err != nil {
		c.w.Error(errorReply(err))
		return nil, 0, false
	}
	if !coll.Found {
		return nil, lww.List, true
	}
	switch typ = coll.Header.Type; typ {
	case lww.List:
		for _, item := range list.Items(coll.Elements) {
			elems = append(elems, item.Value)
		}
	case lww.Set:
		elems = set.Fold(coll.Elements).Names()
	case lww.SortedSet:
		for _, m := range zset.Fold(coll.Elements) {
			elems = append(elems, m.Name)
		}
	default:
		c.w.Error(errWrongType)
		return nil, 0, false
	}
	return elems, typ, true
}

// sortCommand is SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
// [ALPHA] [STORE destination] and SORT_RO (no STORE), as Redis 7.0's sortCommandGeneric:
// the same order of elements and checks, and its replies. STORE writes the result as a
// new life of destination, a list (an empty result deletes it), of any hash tag except
// inside EXEC (sameSlot). The key and the keys the patterns form are
// read one after the other, not at one instant.
func sortCommand(c *conn, args [][]byte) {
	o, ok := c.parseSortOptions(args, string(c.lowerName) == "sort_ro")
	if !ok || o.hasStore && !c.sameSlot([][]byte{args[1], o.store}) {
		return
	}
	elems, typ, ok := c.sortElements(args[1])
	if !ok {
		return
	}
	if o.dontSort && typ == lww.Set && o.hasStore {
		// As Redis: a set stored unsorted is sorted by its members, so that the list
		// written does not depend on the set's internal order.
		o.dontSort, o.alpha, o.by = false, true, nil
	}
	if o.dontSort && o.desc && typ != lww.Set {
		slices.Reverse(elems) // the list's or sorted set's own order, from its end
	}
	n := int64(len(elems))
	start := min(max(o.offset, 0), n)
	count := min(max(o.count, -1), n)
	end := start + count - 1
	if count < 0 {
		end = n - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	end = min(end, n-1)
	if !o.dontSort {
		sorted, ok := c.sortByPattern(elems, o)
		if !ok {
			return
		}
		elems = sorted
	}
	window := elems[max(start, 0):max(end+1, 0)]
	values := window
	if len(o.gets) > 0 {
		if values, ok = c.sortGets(window, o.gets); !ok {
			return
		}
	}
	if !o.hasStore {
		c.w.ArrayHeader(len(values))
		for _, v := range values {
			if v == nil {
				c.w.Null()
			} else {
				c.w.Bulk(v)
			}
		}
		return
	}
	c.storeList(o.store, values)
}

// sortByPattern sorts elems as o says: by themselves or by the values of the keys o's
// BY pattern forms (a missing one scores 0, and sorts first in ALPHA), numerically or
// ALPHA (bytes), ties numerically broken by the elements' bytes. ok is false when the
// reply is written already: an error, or Redis's for a value that is no double.
func (c *conn) sortByPattern(elems [][]byte, o sortOptions) (sorted [][]byte, ok bool) {
	type item struct {
		elem, by []byte
		score    float64
	}
	weights := elems
	if o.by != nil {
		if weights, ok = c.patternValues(*o.by, elems); !ok {
			return nil, false
		}
	}
	items := make([]item, len(elems))
	for i, elem := range elems {
		items[i] = item{elem: elem, by: weights[i]}
		if o.alpha || weights[i] == nil {
			continue
		}
		score, isDouble := sortScore(weights[i])
		if !isDouble {
			c.w.Error("ERR One or more scores can't be converted into double")
			return nil, false
		}
		items[i].score = score
	}
	slices.SortStableFunc(items, func(a, b item) int {
		var order int
		switch {
		case !o.alpha:
			order = cmp.Or(cmp.Compare(a.score, b.score), bytes.Compare(a.elem, b.elem))
		case o.by == nil:
			order = bytes.Compare(a.elem, b.elem)
		case a.by == nil || b.by == nil:
			order = cmp.Compare(btoi(b.by == nil), btoi(a.by == nil))
		default:
			order = bytes.Compare(a.by, b.by)
		}
		if o.desc {
			return -order
		}
		return order
	})
	sorted = make([][]byte, len(items))
	for i, it := range items {
		sorted[i] = it.elem
	}
	return sorted, true
}

// sortScore parses a value SORT sorts numerically as Redis's strtod does: leading spaces
// skipped, and an empty value 0.
func sortScore(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	return zset.ParseScore(bytes.TrimLeft(b, " \t\n\v\f\r"))
}

// sortGets are the values the GET patterns form from each element, pattern after pattern
// for each element in turn; nil for a missing one.
func (c *conn) sortGets(elems [][]byte, gets []sortPattern) (values [][]byte, ok bool) {
	byPattern := make([][][]byte, len(gets))
	for i, sp := range gets {
		if byPattern[i], ok = c.patternValues(sp, elems); !ok {
			return nil, false
		}
	}
	values = make([][]byte, 0, len(elems)*len(gets))
	for e := range elems {
		for i := range gets {
			values = append(values, byPattern[i][e])
		}
	}
	return values, true
}

// patternValues reads what sp forms from each of elems: the element, a string key's value
// or a hash key's field; nil where that key is missing or of another type, or the field
// is. The string keys are read together, each hash once. ok is false when the reply is
// written already.
func (c *conn) patternValues(sp sortPattern, elems [][]byte) (values [][]byte, ok bool) {
	values = make([][]byte, len(elems))
	switch {
	case sp.self:
		copy(values, elems)
		return values, true
	case sp.constant || len(elems) == 0:
		return values, true
	}
	keys := make([][]byte, len(elems))
	for i, elem := range elems {
		keys[i] = sp.key(elem)
	}
	if sp.field == nil {
		results := c.readAll(keys)
		for _, r := range results {
			if r.Err != nil {
				c.w.Error(errorReply(r.Err))
				return nil, false
			}
		}
		if !c.counterValues(keys, results) {
			return nil, false
		}
		for i, r := range results {
			if r.Found && r.Record.Type == lww.String {
				values[i] = r.Record.Value
			}
		}
		return values, true
	}
	hashes := distinct(keys)
	fields := make(map[string][]byte, len(hashes))
	found := make([][]byte, len(hashes))
	err := forEach(len(hashes), func(i int) error {
		coll, results, err := c.s.cfg.Backend.ReadElements(c.ctx, c.keyspace, hashes[i], [][]byte{fieldKey(hashes[i], sp.field)}, c.collectionLevel())
		c.countLookup(coll.Found, err)
		if err == nil && coll.Found && coll.Header.Type == lww.Hash && results[0].Found {
			found[i] = results[0].Record.Value
		}
		return err
	})
	if err != nil {
		c.w.Error(errorReply(err))
		return nil, false
	}
	for i, hash := range hashes {
		fields[string(hash)] = found[i]
	}
	for i, key := range keys {
		values[i] = fields[string(key)]
	}
	return values, true
}

// storeList makes dst the list of values (nil written as an empty string, as Redis does)
// and answers their count: a new life of dst, whatever it held (its expiry too), or for no
// value dst deleted as DEL deletes it.
func (c *conn) storeList(dst []byte, values [][]byte) {
	if len(values) == 0 {
		c.storeNothing(dst)
		return
	}
	positions, err := list.Push(list.Tail, nil, len(values), c.listStamp())
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	w := coord.CollectionWrite{Header: &lww.Record{}, Reset: coord.ResetReplace}
	for i, pos := range positions {
		value := values[i]
		if value == nil {
			value = []byte{}
		}
		w.Elements = append(w.Elements, lww.Record{Key: itemKey(dst, pos), Value: value})
	}
	if _, err := c.writeCollection(dst, lww.List, coord.Collection{}, w); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.wakeBlocked(dst)
	c.w.Int(int64(len(values)))
}

// sortKeys are the keys of SORT's arguments as Redis's sortGetKeys finds them: the sorted
// key, and the destination of the last STORE with an argument after it, options skipped
// by their argument counts (LIMIT 2, GET and BY 1), whatever their values. SORT_RO's key
// is its first argument alone.
func sortKeys(args [][]byte) []keyRef {
	refs := []keyRef{{pos: 1, flags: []string{"RO", "access"}}}
	if !strings.EqualFold(string(args[0]), "sort") {
		return refs
	}
	store := 0
	for i := 2; i < len(args); i++ {
		switch word := strings.ToLower(string(args[i])); {
		case word == "limit":
			i += 2
		case word == "get" || word == "by":
			i++
		case word == "store" && i+1 < len(args):
			store = i + 1
		}
	}
	if store > 0 {
		refs = append(refs, keyRef{pos: store, flags: []string{"OW", "update"}})
	}
	return refs
}
