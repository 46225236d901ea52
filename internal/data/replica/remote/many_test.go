package remote

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
)

// TestGetManyLocalAndRemoteAgree reads batches of keys (values, a tombstone, a key never
// written, a key twice) from the local replica and over the wire, and checks that both
// answer as Get answers each key, stopping at the same key once the values reach the
// bound; and that the server refuses a batch it must not read.
func TestGetManyLocalAndRemoteAgree(t *testing.T) {
	engine, local, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
	recs := []lww.Record{{Key: []byte("gone"), Timestamp: 7, Tombstone: true}}
	for i := range 10 {
		recs = append(recs, lww.Record{Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{'a' + byte(i)}, 100), Timestamp: 5, ExpiresAt: 90})
	}
	if _, err := engine.ApplyBatch("ks", recs); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("k1"), []byte("gone"), []byte("absent"), []byte("k2"), []byte("k1"), []byte("k3")}
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		valueBytesMax int
		answered      int
	}{
		{"every key", 1 << 20, len(keys)},
		{"stops once the values reach the bound", 200, 4}, // k1, gone, absent, k2
		{"reads the first key whatever the bound", 1, 1},
	} {
		for _, side := range []struct {
			name string
			many replica.ManyGetter
		}{{"local", local}, {"remote", remote}} {
			t.Run(tc.name+"/"+side.name, func(t *testing.T) {
				records, found, err := side.many.GetMany(ctx, "ks", keys, tc.valueBytesMax)
				if err != nil {
					t.Fatal(err)
				}
				if len(records) != tc.answered || len(found) != tc.answered {
					t.Fatalf("answered %d records and %d found flags, want %d", len(records), len(found), tc.answered)
				}
				for i, rec := range records {
					want, wantFound, err := local.Get(ctx, "ks", keys[i])
					if err != nil {
						t.Fatal(err)
					}
					if found[i] != wantFound || wantFound && (!bytes.Equal(rec.Key, want.Key) || !bytes.Equal(rec.Value, want.Value) ||
						rec.Timestamp != want.Timestamp || rec.Tombstone != want.Tombstone || rec.ExpiresAt != want.ExpiresAt) {
						t.Errorf("key %q: GetMany %+v (found %v), Get %+v (found %v)", keys[i], rec, found[i], want, wantFound)
					}
				}
			})
		}
	}
	tooMany := make([][]byte, readManyKeysMax+1)
	for i := range tooMany {
		tooMany[i] = []byte("k1")
	}
	for _, bad := range []struct {
		name          string
		keyspace      string
		keys          [][]byte
		valueBytesMax int
		want          string
	}{
		{"too many keys", "ks", tooMany, 1 << 20, "at most 1024"},
		{"no room for values", "ks", keys, 0, "must be positive"},
	} {
		if _, _, err := remote.GetMany(ctx, bad.keyspace, bad.keys, bad.valueBytesMax); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: GetMany error %v, want one saying %q", bad.name, err, bad.want)
		}
	}
}
