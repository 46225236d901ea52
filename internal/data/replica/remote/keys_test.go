package remote

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
)

func TestScanKeysLocalAndRemoteAgree(t *testing.T) {
	engine, local, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
	var recs []lww.Record
	for i := range 100 {
		rec := lww.Record{Key: fmt.Appendf(nil, "k%03d", i), Value: []byte("value"), Timestamp: 5}
		if i%10 == 0 {
			rec = lww.Record{Key: rec.Key, Timestamp: 5, Tombstone: true}
		}
		recs = append(recs, rec)
	}
	if _, err := engine.ApplyBatch("ks", recs); err != nil {
		t.Fatal(err)
	}
	half := ring.Token(math.MaxUint64 / 2)
	whole := []replica.Span{{From: 0, To: math.MaxUint64}}
	tests := []struct {
		name string
		req  replica.KeysRequest
	}{
		{"whole ring, paged", replica.KeysRequest{Keyspace: "ks", Spans: whole, Limit: 7, Now: 10}},
		{"slices of positions", replica.KeysRequest{Keyspace: "ks", Spans: []replica.Span{{From: 0, To: 1 << 60}, {From: 1 << 62, To: 1 << 63}}, Limit: 100, Now: 10}},
		{"token ranges", replica.KeysRequest{Keyspace: "ks", Spans: whole, Limit: 100, Ranges: []ring.Range{{Start: 0, End: half}}, Now: 10}},
		{"count only", replica.KeysRequest{Keyspace: "ks", Spans: whole, CountOnly: true, VisitMax: 30, Now: 10}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := local.ScanKeys(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := remote.ScanKeys(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Records) == 0 {
				want.Records = []lww.Record{} // the wire does not tell nil from empty
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("remote answered %+v, local %+v", got, want)
			}
			for _, r := range got.Records {
				if r.Tombstone || r.Value != nil {
					t.Errorf("record %+v is not a live key without its value", r)
				}
			}
		})
	}
	if _, err := remote.ScanKeys(ctx, replica.KeysRequest{Keyspace: "ks", Spans: []replica.Span{{From: 2, To: 1}}, Limit: 1}); err == nil {
		t.Error("a request with a span upside down succeeded")
	}
	if _, err := remote.ScanKeys(ctx, replica.KeysRequest{Keyspace: "nope", Spans: whole, Limit: 1}); err == nil {
		t.Error("a request for an unknown keyspace succeeded")
	}
}
