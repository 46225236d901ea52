package coord_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
)

func TestLDRScanListsEachUserKeyOnceInOrder(t *testing.T) {
	c := startLDRCluster(t, "")
	ctx := testContext(t)
	co := coordOf(c, "b2")
	var want []string
	// Keys that are prefixes of each other and hold the chunk keys' escape bytes.
	keys := []string{"a", "a\x00", "a\x00\x01", "a\x00b", "a\x01", "ab", "\x00", "\xff"}
	for i := 0; i < 60; i++ {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	for i, key := range keys {
		if _, err := co.Put(ctx, coded.Name, []byte(key), []byte("v-"+key), 0, consistency.All); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if _, err := co.Delete(ctx, coded.Name, []byte(key), consistency.All); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want = append(want, key)
	}
	tests := []struct {
		start, end string
		limit      int
		level      consistency.Level
	}{
		{"", "", 0, consistency.One},
		{"", "", 3, consistency.One}, // small rounds: many cut-offs
		{"a", "b", 0, consistency.Quorum},
		{"a\x00", "a\x01", 0, consistency.All},
		{"k010", "k050", 7, consistency.LocalQuorum},
		{"k050", "", 0, consistency.Two},
	}
	for _, tt := range tests {
		got, err := co.Scan(ctx, coded.Name, bytesOrNil(tt.start), bytesOrNil(tt.end), tt.limit, tt.level)
		if err != nil {
			t.Fatalf("scan [%q, %q) limit %d at %v: %v", tt.start, tt.end, tt.limit, tt.level, err)
		}
		var gotKeys []string
		for _, r := range got {
			gotKeys = append(gotKeys, string(r.Key))
			if string(r.Value) != "v-"+string(r.Key) {
				t.Fatalf("scan [%q, %q) limit %d at %v: key %q has value %q", tt.start, tt.end, tt.limit, tt.level, r.Key, r.Value)
			}
		}
		if expect := expectedScan(want, tt.start, tt.end, tt.limit); fmt.Sprintf("%q", gotKeys) != fmt.Sprintf("%q", expect) {
			t.Fatalf("scan [%q, %q) limit %d at %v = %q, want %q", tt.start, tt.end, tt.limit, tt.level, gotKeys, expect)
		}
	}

	// With a node down, keys keep at least k chunks when it holds at most m-k of theirs:
	// ONE still lists them; ALL cannot.
	stopAndWait(t, c, c.Node("b2"), "a3")
	got, err := co.Scan(ctx, coded.Name, []byte("k"), nil, 0, consistency.One)
	var degraded []string
	for _, key := range want {
		if key >= "k" && placementOf(t, c, []byte(key)).perNode["a3"] <= coded.Erasure.M-coded.Erasure.K {
			degraded = append(degraded, key)
		}
	}
	if len(degraded) != len(expectedScan(want, "k", "", 0)) {
		t.Fatal("a3 holds more than m-k chunks of a listed key: pick another node to stop")
	}
	if err != nil || len(got) != len(degraded) {
		t.Fatalf("ONE scan with a3 down = %d keys, %v; want %d", len(got), err, len(degraded))
	}
	if _, err := co.Scan(ctx, coded.Name, []byte("k"), nil, 0, consistency.All); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("ALL scan with a chunk owner down: err = %v, want unavailable", err)
	}
}
