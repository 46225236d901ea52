package storage

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// watermarkKeyspace holds, per keyspace, the watermark of its collected tombstones: one
// record keyed by the keyspace's name whose timestamp is the watermark. Its name takes
// the "system" prefix that schema reserves for node-local keyspaces, so no user keyspace
// can collide with it, and it is never replicated.
const watermarkKeyspace = "system_gc"

// TombstoneWatermark returns the watermark of keyspace ks: CollectGarbage may have removed any
// tombstone or expired record of ks with a timestamp at or below it, so a value at or
// below it that this engine lacks may be one whose delete (or expiry) it has forgotten. Zero means no tombstone of ks
// was ever collected here, as on a new or wiped node. The watermark is stored in the
// engine, so it survives restarts.
func (e *Engine) TombstoneWatermark(ks string) (hlc.Timestamp, error) {
	r, found, err := e.Get(watermarkKeyspace, []byte(ks))
	if err != nil || !found {
		return 0, err
	}
	return r.Timestamp, nil
}

// raiseWatermarks records that every tombstone and expired record of the keyspaces
// walked gone before cutoff has been collected. The watermark is kept as a record's timestamp, so last writer wins
// keeps the highest one even if two collections race. The caller has entered the engine.
func (e *Engine) raiseWatermarks(walked map[string]bool, cutoff hlc.Timestamp) error {
	if cutoff <= 1 {
		return nil // nothing older than cutoff can exist: timestamps start at 1
	}
	var marks []lww.Record
	var keys [][]byte
	for _, ks := range slices.Sorted(maps.Keys(walked)) {
		if ks == watermarkKeyspace {
			continue
		}
		// Collection removes records gone strictly before cutoff, so written before it.
		marks = append(marks, lww.Record{Key: []byte(ks), Timestamp: cutoff - 1})
		keys = append(keys, encodeKey(watermarkKeyspace, []byte(ks)))
	}
	if len(marks) == 0 {
		return nil
	}
	if _, err := e.applyBatch(watermarkKeyspace, marks, keys, false); err != nil {
		return fmt.Errorf("record watermarks: %w", err)
	}
	return nil
}

// inKeyspace reports whether the Pebble key encoded belongs to keyspace ks.
func inKeyspace(encoded []byte, ks string) bool {
	return len(encoded) > len(ks) && encoded[len(ks)] == keySeparator && string(encoded[:len(ks)]) == ks
}
