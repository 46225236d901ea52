package nemesis

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// never is the completion time of an operation the history does not complete: it may
// take effect at any time after its invoke.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// op is one operation rebuilt from its invoke and completion.
type op struct {
	Event            // the invoke, with the completion's results merged in
	status           Type
	invoke, complete time.Time
	// ts is the operation's timestamp: as acknowledged, or, for a put acknowledged
	// without one (the Redis protocol) or indeterminate, as learned from any read or
	// final version that returned its unique value; 0 while unknown.
	ts hlc.Timestamp
	// conflict is a timestamp the value was seen with other than ts: the value was
	// stored under a timestamp it was not acknowledged with.
	conflict hlc.Timestamp
}

// possible reports whether the operation may have happened.
func (o *op) possible() bool { return o.status != TypeFail }

// String names a put or delete for a violation: "put k=v" or "delete k".
func (o *op) String() string {
	if o.F == Put {
		return fmt.Sprintf("put %s=%s", o.Key, o.Value)
	}
	return fmt.Sprintf("%s %s", o.F, o.Key)
}

// record is the version a put or delete with a known timestamp wrote.
func (o *op) record() lww.Record {
	return lww.Record{Key: []byte(o.Key), Value: []byte(o.Value), Timestamp: o.ts, Tombstone: o.F == Delete}
}

// read is one observation of one key: a get, or one key of a scan (present or absent).
type read struct {
	op    *op
	key   string
	found bool
	value string
	ts    hlc.Timestamp // 0: the front end gave none
}

// window is a span of the run, from a nemesis event's start to its heal.
type window struct {
	start, end time.Time
}

// history is a history rebuilt for the checks.
type history struct {
	meta   *Meta
	ops    []*op            // in invoke order
	puts   map[string]*op   // by value: every value is unique to its put
	writes map[string][]*op // puts and deletes by key, in invoke order
	// counters are the increments of each counter key, then its reads.
	counters map[string][]*op
	reads    []read
	faults   int
	wipes    []window
	final    map[string]map[string]Event // key -> node -> the version it stores
	scanned  []string                    // the nodes whose final versions are in
}

// rebuild pairs every invoke with its completion and indexes the operations.
func rebuild(events []Event) *history {
	h := &history{puts: map[string]*op{}, writes: map[string][]*op{}, counters: map[string][]*op{}, final: map[string]map[string]Event{}}
	byID := map[int64]*op{}
	open := map[string]time.Time{} // nemesis fault -> its start
	for _, e := range events {
		switch e.Type {
		case TypeMeta:
			h.meta = e.Meta
		case TypeInvoke:
			o := &op{Event: e, status: TypeInfo, invoke: e.Time, complete: never}
			byID[e.Op] = o
			h.ops = append(h.ops, o)
		case TypeOK, TypeFail, TypeInfo:
			o := byID[e.Op]
			if o == nil {
				continue
			}
			o.status, o.complete, o.Error = e.Type, e.Time, e.Error
			if e.Type == TypeInfo {
				// An indeterminate operation may still take effect after its answer.
				o.complete = never
			}
			if e.Type == TypeOK {
				o.Found, o.Items, o.ts = e.Found, e.Items, hlc.Timestamp(e.Timestamp)
				if o.F == Get || o.F == Incr {
					o.Value = e.Value
				}
				if o.F == Delete && e.Noop {
					// DEL deletes only a key it finds (through a lightweight
					// transaction): one that replied 0 wrote nothing and read the
					// key absent, so it is checked as a get that found nothing.
					o.F = Get
				}
			}
		case TypeNemesis:
			switch e.Phase {
			case "start":
				h.faults++
				open[e.Fault] = e.Time
			case "heal":
				if e.Wipe {
					h.wipes = append(h.wipes, window{start: open[e.Fault], end: e.Time})
				}
				delete(open, e.Fault)
			}
		case TypeFinal:
			if h.final[e.Key] == nil {
				h.final[e.Key] = map[string]Event{}
			}
			h.final[e.Key][e.Node] = e
		}
	}
	for _, o := range h.ops {
		switch o.F {
		case Put:
			h.puts[o.Value] = o
			h.writes[o.Key] = append(h.writes[o.Key], o)
		case Delete:
			h.writes[o.Key] = append(h.writes[o.Key], o)
		case Incr:
			h.counters[o.Key] = append(h.counters[o.Key], o)
		}
	}
	for _, o := range h.ops {
		if o.F == Get && h.counters[o.Key] != nil {
			h.counters[o.Key] = append(h.counters[o.Key], o)
		}
	}
	if len(h.final) > 0 {
		h.scanned = h.finalNodes()
	}
	h.collectReads()
	h.learnTimestamps()
	return h
}

// finalNodes are the nodes whose local copies were scanned: the run's nodes (a node that
// stores nothing leaves no final line), or, without a meta line, those seen.
func (h *history) finalNodes() []string {
	if h.meta != nil && len(h.meta.Nodes) > 0 {
		return h.meta.Nodes
	}
	seen := map[string]bool{}
	for _, versions := range h.final {
		for node := range versions {
			seen[node] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// collectReads turns every acknowledged get and scan into observations of keys. A scan
// observes every key of the history in its range as absent unless it returned it; when
// it stopped at its limit, only up to the last key returned. Counters are judged apart
// (checkCounters): a read of one is no observation of a put or delete.
func (h *history) collectReads() {
	keys := slices.Sorted(maps.Keys(h.writes))
	for _, o := range h.ops {
		if o.status != TypeOK {
			continue
		}
		switch {
		case h.counters[o.Key] != nil && o.F == Get:
		case o.F == Get:
			h.reads = append(h.reads, read{op: o, key: o.Key, found: o.Found, value: o.Value, ts: o.ts})
		case o.F == Scan:
			returned := map[string]bool{}
			last := ""
			for _, it := range o.Items {
				if h.counters[it.Key] != nil {
					continue
				}
				returned[it.Key] = true
				last = max(last, it.Key)
				h.reads = append(h.reads, read{op: o, key: it.Key, found: true, value: it.Value, ts: hlc.Timestamp(it.Timestamp)})
			}
			cut := o.Limit > 0 && len(o.Items) >= o.Limit
			for _, k := range keys {
				inRange := k >= o.Key && (o.End == "" || k < o.End) && (!cut || k < last)
				if inRange && !returned[k] {
					h.reads = append(h.reads, read{op: o, key: k})
				}
			}
		}
	}
}

// learnTimestamps gives every put its timestamp from the reads and final versions that
// returned its value, and notes a value seen under two timestamps.
func (h *history) learnTimestamps() {
	learn := func(value string, ts hlc.Timestamp) {
		o := h.puts[value]
		if o == nil || ts == 0 {
			return
		}
		switch {
		case o.ts == 0:
			o.ts = ts
		case o.ts != ts:
			o.conflict = ts
		}
	}
	for _, r := range h.reads {
		if r.found {
			learn(r.value, r.ts)
		}
	}
	for _, versions := range h.final {
		for _, v := range versions {
			if !v.Deleted {
				learn(v.Value, hlc.Timestamp(v.Timestamp))
			}
		}
	}
}

// finalVersion is the newest version of key across the nodes that store it, as a read
// of every replica would return it; ok is false when no node stores any.
func (h *history) finalVersion(key string) (lww.Record, bool) {
	var newest lww.Record
	found := false
	for _, v := range h.final[key] {
		rec := finalRecord(v)
		if !found || lww.Newer(rec, newest) {
			newest, found = rec, true
		}
	}
	return newest, found
}

func finalRecord(v Event) lww.Record {
	return lww.Record{Key: []byte(v.Key), Value: []byte(v.Value), Timestamp: hlc.Timestamp(v.Timestamp), Tombstone: v.Deleted}
}

// newestAcknowledged is the newest of key's acknowledged puts and deletes whose
// timestamp is known; nil when there is none.
func (h *history) newestAcknowledged(key string) *op {
	var newest *op
	for _, w := range h.writes[key] {
		if w.status == TypeOK && w.ts != 0 && (newest == nil || lww.Newer(w.record(), newest.record())) {
			newest = w
		}
	}
	return newest
}

// inWipe reports whether an operation overlaps a span in which a node's disk was wiped
// and not yet repaired.
func (h *history) inWipe(o *op) bool {
	for _, w := range h.wipes {
		// A wipe left open until the end closes at the instant of the run's final reads:
		// they fall in it too.
		if !o.invoke.After(w.end) && o.complete.After(w.start) {
			return true
		}
	}
	return false
}

// wipedAfter reports whether a node's disk was wiped after o was acknowledged.
func (h *history) wipedAfter(o *op) bool {
	for _, w := range h.wipes {
		if w.end.After(o.complete) {
			return true
		}
	}
	return false
}
