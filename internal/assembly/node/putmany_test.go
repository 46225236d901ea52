package node

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/service/apiserver"
)

// TestPutManyAnswersAsPut: PutMany writes each item as Put writes it alone and answers
// each, in order: acknowledged with the timestamp a Get then reads, or refused with
// Put's own error while the others are written; a call beyond the item limit, or at an
// unknown level, is refused whole.
func TestPutManyAnswersAsPut(t *testing.T) {
	const valueMax = 1 << 10
	kv := startSoloKV(t, coord.Limits{ValueBytesMax: valueMax})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	expiresAt := time.Now().Add(time.Hour).UnixMilli()
	items := []*kurav1.PutManyItem{
		{Key: []byte("k1"), Value: []byte("v1")},
		{Key: []byte("bad ttl"), Value: []byte("v"), TtlMs: -1},
		{Key: []byte("k2"), Value: []byte("v2"), ExpiresAtUnixMs: expiresAt},
		{Key: []byte("too large"), Value: make([]byte, valueMax+1)},
		{Key: []byte{}, Value: []byte("no key")},
		{Key: []byte("k3"), Value: []byte("v3"), TtlMs: time.Hour.Milliseconds()},
	}
	resp, err := kv.PutMany(ctx, &kurav1.PutManyRequest{Keyspace: "default", Items: items})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetResults()) != len(items) {
		t.Fatalf("%d results for %d items", len(resp.GetResults()), len(items))
	}
	for i, item := range items {
		got := resp.GetResults()[i]
		if len(item.GetValue()) > valueMax || item.GetTtlMs() < 0 || len(item.GetKey()) == 0 {
			// Refused: with Put's own error for the item, and nothing written.
			_, err := kv.Put(ctx, &kurav1.PutRequest{Keyspace: "default", Key: item.GetKey(), Value: item.GetValue(), TtlMs: item.GetTtlMs()})
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument || codes.Code(got.GetCode()) != st.Code() || got.GetMessage() != st.Message() {
				t.Errorf("item %q: PutMany's error %v %q, Put's %v %q; want both InvalidArgument", item.GetKey(), codes.Code(got.GetCode()), got.GetMessage(), st.Code(), st.Message())
			}
			if got.GetResponse() != nil {
				t.Errorf("item %q: refused with a response %v", item.GetKey(), got.GetResponse())
			}
			continue
		}
		if got.GetCode() != 0 || got.GetResponse().GetTimestamp() == 0 {
			t.Errorf("item %q: %v %q, %v; want acknowledged with a timestamp", item.GetKey(), codes.Code(got.GetCode()), got.GetMessage(), got.GetResponse())
			continue
		}
		read, err := kv.Get(ctx, &kurav1.GetRequest{Keyspace: "default", Key: item.GetKey()})
		if err != nil || !read.GetFound() || string(read.GetValue()) != string(item.GetValue()) || read.GetTimestamp() != got.GetResponse().GetTimestamp() {
			t.Errorf("item %q: Get after PutMany = %v, %v; want %q at timestamp %d", item.GetKey(), read, err, item.GetValue(), got.GetResponse().GetTimestamp())
		}
		if item.GetExpiresAtUnixMs() != 0 && read.GetExpiresAtUnixMs() != item.GetExpiresAtUnixMs() {
			t.Errorf("item %q expires at %d, want %d", item.GetKey(), read.GetExpiresAtUnixMs(), item.GetExpiresAtUnixMs())
		}
		if item.GetTtlMs() != 0 && read.GetExpiresAtUnixMs() == 0 {
			t.Errorf("item %q was written without its TTL", item.GetKey())
		}
	}
	for _, key := range []string{"bad ttl", "too large"} {
		if read, err := kv.Get(ctx, &kurav1.GetRequest{Keyspace: "default", Key: []byte(key)}); err != nil || read.GetFound() {
			t.Errorf("refused item %q: Get = %v, %v; want not found", key, read, err)
		}
	}

	tests := []struct {
		name string
		req  *kurav1.PutManyRequest
	}{
		{"too many items", &kurav1.PutManyRequest{Keyspace: "default", Items: make([]*kurav1.PutManyItem, apiserver.PutManyItemsMax+1)}},
		{"unknown level", &kurav1.PutManyRequest{Keyspace: "default", Items: items, Consistency: kurav1.Consistency(99)}},
	}
	for _, tt := range tests {
		if _, err := kv.PutMany(ctx, tt.req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", tt.name, err)
		}
	}
}
