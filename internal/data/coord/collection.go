package coord

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
)

// Redis collections (hashes, and later sets, sorted sets, lists), as
// docs/redis-types.md designs them: each element is a record of its own beside the
// collection key's own record, the header, which carries the type and the expiry; a
// reset record holds the point R at or before which every element is gone, so a DEL or a
// retype of a collection of any size is two writes. The grouped partitioner places every
// element record on its collection key's replicas, so a whole collection is read by one
// scan of one token's replica set.

// Collection is what a read of a collection key finds.
type Collection struct {
	// Header is the key's own record when Found: live, of any type (a string's too, which
	// a command of a collection answers WRONGTYPE). ReadCollection answers a collection
	// without a live member (HoldsMembers) not Found: emptied, it reads as absent.
	Header lww.Record
	Found  bool
	// Reset is the collection's reset point: elements at or before it are gone.
	Reset hlc.Timestamp
	// Elements are the live element records of the collection (the reset record left
	// out) newer than Reset, in key order; empty unless Found with a collection's type.
	Elements []lww.Record
	// Ended, when not Found, is the timestamp of the header's last version (a tombstone,
	// or a record whose expiry passed): the end of the key's previous life, after every
	// element of it. Zero when no such version is stored. Filled by ReadPrefixes only.
	Ended hlc.Timestamp
}

// ResetPoint says whether a collection write moves the collection's reset point.
type ResetPoint int

const (
	// NoReset leaves the reset point alone: a write to a collection that exists.
	NoReset ResetPoint = iota
	// ResetCreate sets it at the end of the key's previous life, read by the write
	// (Collection.Ended's rule: the timestamp of the header's last version when it is a
	// tombstone or expired), and writes none when it had none: the write creates the key,
	// no element of an earlier life (deleted, expired, of another type) comes back, and
	// the elements another writer creating the key at the same moment writes survive,
	// which a reset at the write's own time would remove (acknowledged writes lost).
	ResetCreate
	// ResetReplace sets it just before the write's timestamp: the write replaces the key
	// whole (a *STORE command), and no element written before it, by anyone, survives.
	ResetReplace
	// ResetAt sets it at the write's timestamp: the write retypes or deletes the key,
	// and every element written before it is gone.
	ResetAt
	// ResetEnded is ResetCreate with the end of the previous life read already, by the
	// read that found the key absent (Collection.Ended), in CollectionWrite.Ended.
	ResetEnded
)

// CollectionWrite is a write of a collection's records, all stamped with one timestamp.
type CollectionWrite struct {
	// Header is the key's own record to write (Value, Type, ExpiresAt, or Tombstone);
	// nil writes none. It is written after the elements, so that a write that fails
	// half-way leaves no header claiming elements it did not write.
	Header *lww.Record
	// Elements are element records of the collection (keys from element.Key), each a
	// value or a tombstone.
	Elements []lww.Record
	// Tagged are element records whose keys the write completes with its tag
	// (element.Tag of its timestamp and this node): a set member's add, whose key no other
	// add has, so that a remove tombstones exactly the adds it saw.
	Tagged []lww.Record
	Reset  ResetPoint
	// Ended is the reset point ResetEnded sets.
	Ended hlc.Timestamp
}

// collectionKeyspace returns keyspace's definition if it serves collections, and refuses
// the key if it is not a collection key there.
func (c *Coordinator) collectionKeyspace(keyspace string, key []byte) (schema.Keyspace, error) {
	if err := c.member(); err != nil {
		return schema.Keyspace{}, err
	}
	ks, err := c.keyspaces.Get(keyspace)
	if err != nil {
		return schema.Keyspace{}, err
	}
	switch {
	case ks.Erasure.Enabled():
		// An erasure-coded keyspace's chunk answers do not carry a record's type, and a
		// chunk lives on its own owner: refused rather than a header read as a string.
		return schema.Keyspace{}, invalid("keyspace %s is erasure-coded: hashes and the other Redis collections are served only in replicated keyspaces, since a chunk does not carry its record's type", keyspace)
	case ks.Partition().Name() != ring.GroupedPartitioner().Name():
		return schema.Keyspace{}, invalid("keyspace %s has the %s partitioner: hashes and the other Redis collections are served only in keyspaces with the grouped partitioner, which places a collection's elements on its key's replicas", keyspace, ks.Partition().Name())
	case element.IsKey(key):
		return schema.Keyspace{}, invalid("keys starting with bytes 0x00 0x01 are reserved")
	}
	return ks, c.checkKey(key)
}

// ReadCollection reads key's header at level cl and, when it is a collection's, every
// element record of it: one scan of the key's partition, on the replicas the level asks.
// A collection without a live element of its type (emptied by removals, its header kept)
// is answered absent, Found false.
// A collection whose records pass Limits.AnswerBytesMax is refused with ErrAnswerFull.
func (c *Coordinator) ReadCollection(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (Collection, error) {
	ks, err := c.collectionKeyspace(keyspace, key)
	if err != nil {
		return Collection{}, err
	}
	var out Collection
	if out.Header, out.Found, err = c.Get(ctx, keyspace, key, cl); err != nil || !out.Found || out.Header.Type == lww.String {
		return out, err
	}
	recs, err := c.scanPartition(ctx, ks, key, element.Prefix(key), element.PrefixEnd(key), cl)
	if err != nil {
		return Collection{}, err
	}
	if err := c.observeNewest(recs); err != nil {
		return Collection{}, err
	}
	out.Reset, out.Elements = liveElements(ks, key, recs, c.clock.Now())
	if !HoldsMembers(out.Header.Type, out.Elements) {
		// Emptied: absent to its reader, so that a write creates it anew (with no reset
		// point: its header is live, and so is no element of it).
		return Collection{Reset: out.Reset}, nil
	}
	return out, nil
}

// HoldsMembers reports whether a collection of type typ whose live element records
// (newer than its reset point) are elems holds a member: false when removals emptied
// it, and it reads as absent. A string and a counter hold their value.
func HoldsMembers(typ lww.Type, elems []lww.Record) bool {
	kind, ok := MemberKind(typ)
	return !ok || slices.ContainsFunc(elems, func(rec lww.Record) bool {
		_, k, _, ok := element.Parse(rec.Key)
		return ok && k == kind && !rec.Tombstone
	})
}

// MemberKind returns the element kind of which one live record makes a collection of
// type typ non-empty: a hash's fields, a set's adds, a sorted set's member records (a
// score entry may be stale), a list's items. ok is false for a string and a counter,
// whose header is their value.
func MemberKind(typ lww.Type) (kind element.Kind, ok bool) {
	switch typ {
	case lww.Hash:
		return element.HashField, true
	case lww.Set:
		return element.SetAdd, true
	case lww.SortedSet:
		return element.SortedMember, true
	case lww.List:
		return element.ListItem, true
	}
	return 0, false
}

// HasMembers reports whether collection key, whose header a read found live with type
// typ, holds a live element of that type newer than its reset point, read at level cl:
// false means the collection was emptied, and reads as absent (docs/redis-types.md, "An
// emptied collection reads as absent"). It reads the reset record, then the key's
// elements of typ's kind in pages of 1, 2, 4... records, tombstones included, and stops
// at the first live one. A string or a counter always holds its value.
func (c *Coordinator) HasMembers(ctx context.Context, keyspace string, key []byte, typ lww.Type, cl consistency.Level) (bool, error) {
	kind, ok := MemberKind(typ)
	if !ok {
		return true, nil
	}
	ks, err := c.collectionKeyspace(keyspace, key)
	if err != nil {
		return false, err
	}
	resetRec, found, err := c.Get(ctx, keyspace, element.Key(key, element.Reset, nil), cl)
	if err != nil {
		return false, err
	}
	reset := resetPoint(ks, resetRec, found)
	prefix := element.KindPrefix(key, kind)
	live := false
	err = c.walkPartition(ctx, ks, key, prefix, element.End(prefix), cl, 1, func(page []lww.Record) (bool, error) {
		now := c.clock.Now()
		live = slices.ContainsFunc(page, func(rec lww.Record) bool { return rec.Timestamp > reset && visible(ks, rec, now) })
		return !live, nil
	})
	return live, err
}

// liveElements returns the reset point among recs, the records of collection key's
// element prefix in key order, and the element records live at now and newer than it.
func liveElements(ks schema.Keyspace, key []byte, recs []lww.Record, now hlc.Timestamp) (hlc.Timestamp, []lww.Record) {
	resetKey := element.Key(key, element.Reset, nil)
	var reset hlc.Timestamp
	for _, rec := range recs {
		if bytes.Equal(rec.Key, resetKey) {
			reset = resetPoint(ks, rec, true)
			break
		}
	}
	var elems []lww.Record
	for _, rec := range recs {
		if rec.Timestamp > reset && !bytes.Equal(rec.Key, resetKey) && visible(ks, rec, now) {
			elems = append(elems, rec)
		}
	}
	return reset, elems
}

// ReadElements reads key's header, its reset point and the element records of elemKeys
// at level cl, in one read of each replica the level asks. Elements holds one result per
// element key: found when the record is live and newer than the reset point, and only
// when the header is a collection's.
func (c *Coordinator) ReadElements(ctx context.Context, keyspace string, key []byte, elemKeys [][]byte, cl consistency.Level) (Collection, []GetResult, error) {
	ks, err := c.collectionKeyspace(keyspace, key)
	if err != nil {
		return Collection{}, nil, err
	}
	keys := append([][]byte{key, element.Key(key, element.Reset, nil)}, elemKeys...)
	results := c.GetAll(ctx, keyspace, keys, cl)
	for _, r := range results {
		if r.Err != nil {
			return Collection{}, nil, r.Err
		}
	}
	out := Collection{Header: results[0].Record, Found: results[0].Found}
	out.Reset = resetPoint(ks, results[1].Record, results[1].Found)
	elems := results[2:]
	for i := range elems {
		if !out.Found || out.Header.Type == lww.String || elems[i].Record.Timestamp <= out.Reset {
			elems[i] = GetResult{}
		}
	}
	return out, elems, nil
}

// ReadPrefixes reads key's header and reset point, and when the header is a
// collection's the element records under each of prefixes (each starting with
// element.Prefix(key)): one scan of the key's partition per prefix, on the replicas the
// level asks. Elements holds the live ones newer than the reset point, prefix by prefix,
// each in key order: a set's adds of a few members, without reading the whole set.
func (c *Coordinator) ReadPrefixes(ctx context.Context, keyspace string, key []byte, prefixes [][]byte, cl consistency.Level) (Collection, error) {
	ks, err := c.collectionKeyspace(keyspace, key)
	if err != nil {
		return Collection{}, err
	}
	for _, p := range prefixes {
		if !bytes.HasPrefix(p, element.Prefix(key)) {
			return Collection{}, invalid("prefix %q is not under collection %q", p, key)
		}
	}
	results := c.GetAll(ctx, keyspace, [][]byte{key, element.Key(key, element.Reset, nil)}, cl)
	for _, r := range results {
		if r.Err != nil {
			return Collection{}, r.Err
		}
	}
	out := Collection{Header: results[0].Record, Found: results[0].Found}
	if !out.Found {
		out.Ended, err = c.headerEnded(ctx, ks, key, cl)
		return out, err
	}
	if out.Header.Type == lww.String {
		return out, nil
	}
	out.Reset = resetPoint(ks, results[1].Record, results[1].Found)
	scans := make([][]lww.Record, len(prefixes))
	errs := make([]error, len(prefixes))
	c.fanOut(len(prefixes), putEachFanout, func(i int) {
		scans[i], errs[i] = c.scanPartition(ctx, ks, key, prefixes[i], element.End(prefixes[i]), cl)
	}, nil)
	for _, err := range errs {
		if err != nil {
			return Collection{}, err
		}
	}
	if err := c.observeNewest(slices.Concat(scans...)); err != nil {
		return Collection{}, err
	}
	now := c.clock.Now()
	for _, recs := range scans {
		for _, rec := range recs {
			if rec.Timestamp > out.Reset && visible(ks, rec, now) {
				out.Elements = append(out.Elements, rec)
			}
		}
	}
	return out, nil
}

// headerEnded returns the timestamp of key's header when its newest version is a
// tombstone or has expired, read with the scan that sees tombstones (a Get answers
// neither): the end of the key's previous life. Zero when no version is stored, or it is
// live (a write that landed since the key was read absent) or truncated.
func (c *Coordinator) headerEnded(ctx context.Context, ks schema.Keyspace, key []byte, cl consistency.Level) (hlc.Timestamp, error) {
	recs, err := c.scanPartition(ctx, ks, key, key, append(bytes.Clone(key), 0), cl)
	if err != nil {
		return 0, err
	}
	for _, rec := range recs {
		if bytes.Equal(rec.Key, key) && rec.Timestamp > ks.TruncatedAt && !visible(ks, rec, c.clock.Now()) {
			return rec.Timestamp, nil
		}
	}
	return 0, nil
}

// observeNewest merges the newest timestamp of recs into this node's clock (the HLC
// receive rule), so that a write a read leads to, such as the tombstones of the adds a
// set's remove saw, is stamped after every record read, even one stamped by a clock a
// little ahead: it would lose to it under last writer wins otherwise.
func (c *Coordinator) observeNewest(recs []lww.Record) error {
	var newest hlc.Timestamp
	for _, rec := range recs {
		newest = max(newest, rec.Timestamp)
	}
	if newest == 0 {
		return nil
	}
	if err := c.clock.Observe(newest); err != nil {
		return fmt.Errorf("%w: a record of the collection is further ahead of the cluster's clock than allowed: %w", ErrUnavailable, err)
	}
	return nil
}

// resetPoint is the reset point a reset record holds: zero when it is absent, a
// tombstone, hidden by a truncation, or holds no reset point.
func resetPoint(ks schema.Keyspace, rec lww.Record, found bool) hlc.Timestamp {
	if !found || rec.Tombstone || rec.ExpiresAt != 0 || rec.Timestamp <= ks.TruncatedAt {
		return 0
	}
	at, _ := element.ParseResetValue(rec.Value)
	return at
}

// WriteCollection writes w's records of collection key at level cl, every one stamped
// with one timestamp t, which it returns: the elements and the reset record first,
// together, then the header. With ResetCreate and ResetEnded the reset point becomes
// the end of the key's previous life, with ResetReplace t-1, with ResetAt t. The records are those of one token, on one replica set; each goes as a Put would
// (hinted for replicas that miss it), and the write fails if one of them does.
func (c *Coordinator) WriteCollection(ctx context.Context, keyspace string, key []byte, w CollectionWrite, cl consistency.Level) (hlc.Timestamp, error) {
	ks, err := c.collectionKeyspace(keyspace, key)
	if err != nil {
		return 0, err
	}
	if cl.IsSerial() {
		return 0, invalid("%v is the level of lightweight transactions; a collection's write takes ANY to ALL", cl)
	}
	if w.Header != nil && !w.Header.Tombstone {
		// Checked before any element is written, which the header would then not cover.
		if err := c.checkType(w.Header.Type); err != nil {
			return 0, err
		}
	}
	for _, e := range slices.Concat(w.Elements, w.Tagged) {
		if coll, _, _, ok := element.Parse(e.Key); !ok || !bytes.Equal(coll, key) {
			return 0, invalid("key %q is not an element record of collection %q", e.Key, key)
		}
		if err := c.checkValue(e.Value); err != nil {
			return 0, err
		}
	}
	if w.Reset == ResetCreate {
		// Read before the write is stamped: a cluster snapshot's cut does not wait for it.
		if w.Ended, err = c.headerEnded(ctx, ks, key, cl); err != nil {
			return 0, err
		}
	}
	// Stamped once, under the snapshot gate, so that every record of the write is on the
	// same side of a cluster snapshot's cut.
	t, err := c.stampWrite(ctx)
	if err != nil {
		return 0, err
	}
	defer c.gate.exit()
	first := make([]lww.Record, 0, len(w.Elements)+len(w.Tagged)+1)
	for _, e := range w.Elements {
		first = append(first, lww.Record{Key: e.Key, Value: e.Value, Tombstone: e.Tombstone, Timestamp: t})
	}
	if len(w.Tagged) > 0 {
		tag := element.Tag(t, c.view.Self().ID)
		for _, e := range w.Tagged {
			first = append(first, lww.Record{Key: slices.Concat(e.Key, tag), Value: e.Value, Tombstone: e.Tombstone, Timestamp: t})
		}
	}
	switch w.Reset {
	case ResetReplace:
		first = append(first, resetRecord(key, t-1))
	case ResetAt:
		first = append(first, resetRecord(key, t))
	case ResetEnded, ResetCreate:
		if w.Ended != 0 {
			first = append(first, resetRecord(key, w.Ended))
		}
	}
	if err := c.writeTogether(ctx, keyspace, first, cl); err != nil {
		return t, err
	}
	if w.Header == nil {
		return t, nil
	}
	header := *w.Header
	header.Key, header.Timestamp = key, t
	if header.Tombstone {
		header.Value, header.Type = nil, lww.String
	}
	_, err = c.write(ctx, keyspace, header, cl)
	return t, err
}

// ResetCollection sets collection key's reset point to at, the timestamp of a write that
// deleted or retyped the key (a lightweight transaction's), at level cl.
func (c *Coordinator) ResetCollection(ctx context.Context, keyspace string, key []byte, at hlc.Timestamp, cl consistency.Level) error {
	if _, err := c.collectionKeyspace(keyspace, key); err != nil {
		return err
	}
	if at == 0 {
		return invalid("a reset point is a write's timestamp, never zero")
	}
	_, err := c.write(ctx, keyspace, resetRecord(key, at), cl)
	return err
}

// ResetRecord is the reset record of collection key holding reset point at, as a
// transaction writes it (BatchFunc). It is stamped at, so that of two resets the later
// one, holding the larger point, wins.
func ResetRecord(key []byte, at hlc.Timestamp) lww.Record { return resetRecord(key, at) }

// resetRecord is the reset record of collection key holding reset point at. It is
// stamped at, so that of two resets the later one, holding the larger point, wins.
func resetRecord(key []byte, at hlc.Timestamp) lww.Record {
	return lww.Record{Key: element.Key(key, element.Reset, nil), Value: element.ResetValue(at), Timestamp: at}
}

// writeTogether writes stamped records concurrently, up to putEachFanout at once, each
// as a Put, and returns the first error.
func (c *Coordinator) writeTogether(ctx context.Context, keyspace string, recs []lww.Record, cl consistency.Level) error {
	errs := make([]error, len(recs))
	c.fanOut(len(recs), putEachFanout, func(i int) {
		_, errs[i] = c.write(ctx, keyspace, recs[i], cl)
	}, nil)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scanPartition reads every record, tombstones included, with start <= key < end from
// the replicas of key's token at level cl, newest version of each key, in key order:
// keys that all have key's token, as a collection's element records do under the
// grouped partitioner.
func (c *Coordinator) scanPartition(ctx context.Context, ks schema.Keyspace, key, start, end []byte, cl consistency.Level) ([]lww.Record, error) {
	var out []lww.Record
	answered := 0
	err := c.walkPartition(ctx, ks, key, start, end, cl, c.cfg.Limits.ScanLimitMax, func(page []lww.Record) (bool, error) {
		for _, rec := range page {
			answered += len(rec.Key) + len(rec.Value)
		}
		if answered > c.cfg.Limits.AnswerBytesMax {
			return false, fmt.Errorf("%w: collection %q passes %d bytes of elements", ErrAnswerFull, key, c.cfg.Limits.AnswerBytesMax)
		}
		out = append(out, page...)
		return true, nil
	})
	return out, err
}

// walkPartition reads the records scanPartition reads a page at a time, the first of up
// to limit records and each next one twice as many (at most Limits.ScanLimitMax), and
// gives each page to visit until it answers false or an error, or the range ends.
func (c *Coordinator) walkPartition(ctx context.Context, ks schema.Keyspace, key, start, end []byte, cl consistency.Level, limit int, visit func(page []lww.Record) (bool, error)) error {
	if cl == consistency.Any || cl.IsSerial() {
		return invalid("%v is not a read level; read a collection at ONE to ALL", cl)
	}
	if err := c.lwtCommits.awaitKeyspace(ctx, ks.Name); err != nil {
		return err
	}
	members, err := c.replicaSet(ctx, ks, key, nil)
	if err != nil {
		return err
	}
	token := ks.Partition().Token(key)
	// The range holding exactly key's token: (token-1, token], the whole of which wraps
	// to {0} for token 0.
	part := []placement.RangeReplicas{{Range: ring.Range{Start: token - 1, End: token}, Replicas: members}}
	tag := scanTag{id: c.nextScanID(), ras: c.readPolicy().RaS}
	limit = min(limit, c.cfg.Limits.ScanLimitMax)
	for cursor := start; ; {
		round, err := c.scanRound(ctx, ks, part, cursor, end, limit, cl, tag, nil)
		if err != nil {
			return err
		}
		if more, err := visit(round.records); err != nil || !more || round.complete {
			return err
		}
		cursor = append(append([]byte(nil), round.cutoff...), 0)
		limit = min(2*limit, c.cfg.Limits.ScanLimitMax)
	}
}
