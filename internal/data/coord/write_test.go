package coord_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kuradb/kura/consistency"
)

func TestEveryLevelWritesAndReadsBack(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	for i, level := range consistency.Levels() {
		for _, via := range []string{"a1", "b2", "c1"} {
			co := c.Node(via).Coordinator()
			key := []byte(fmt.Sprintf("key-%d-%s", i, via))
			value := []byte("value at " + level.String())
			if _, err := co.Put(ctx, "spread", key, value, 0, level); err != nil {
				t.Fatalf("put at %v via %s: %v", level, via, err)
			}
			readLevel := level
			switch level {
			case consistency.Any, consistency.One, consistency.Two, consistency.LocalOne:
				// These promise the write exists on that many replicas, not which: a read
				// at the same level may meet others, which it has not reached yet.
				readLevel = consistency.All
			}
			rec, found, err := co.Get(ctx, "spread", key, readLevel)
			if err != nil || !found || !bytes.Equal(rec.Value, value) {
				t.Fatalf("get at %v via %s = %q, %v, %v; want %q", readLevel, via, rec.Value, found, err, value)
			}
			if _, err := co.Delete(ctx, "spread", key, level); err != nil {
				t.Fatalf("delete at %v via %s: %v", level, via, err)
			}
			if _, found, err := co.Get(ctx, "spread", key, readLevel); err != nil || found {
				t.Fatalf("get after delete at %v via %s: found %v, err %v", readLevel, via, found, err)
			}
		}
	}
}
