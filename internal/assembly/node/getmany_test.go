package node

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/service/apiserver"
)

// TestGetManyAnswersAsGet: GetMany answers each key, in order, as Get answers it alone:
// found, missing, or the key's own error; a call beyond the key limit, or at an unknown
// level, is refused whole.
func TestGetManyAnswersAsGet(t *testing.T) {
	kv := startSoloKV(t, coord.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kv.Put(ctx, &kurav1.PutRequest{Keyspace: "default", Key: []byte("k1"), Value: []byte("v1")}); err != nil {
		t.Fatal(err)
	}

	keys := [][]byte{[]byte("k1"), []byte("missing"), {}, []byte("k1")}
	resp, err := kv.GetMany(ctx, &kurav1.GetManyRequest{Keyspace: "default", Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetResults()) != len(keys) {
		t.Fatalf("%d results for %d keys", len(resp.GetResults()), len(keys))
	}
	for i, key := range keys {
		got := resp.GetResults()[i]
		want, err := kv.Get(ctx, &kurav1.GetRequest{Keyspace: "default", Key: key})
		st := status.Convert(err)
		if codes.Code(got.GetCode()) != st.Code() || got.GetMessage() != st.Message() {
			t.Errorf("key %q: GetMany's error %v %q, Get's %v %q", key, codes.Code(got.GetCode()), got.GetMessage(), st.Code(), st.Message())
		}
		if err == nil && fmt.Sprint(got.GetResponse()) != fmt.Sprint(want) {
			t.Errorf("key %q: GetMany answered %v, Get %v", key, got.GetResponse(), want)
		}
	}
	if codes.Code(resp.GetResults()[2].GetCode()) != codes.InvalidArgument {
		t.Errorf("the empty key answered %v, want InvalidArgument", resp.GetResults()[2])
	}

	tests := []struct {
		name string
		req  *kurav1.GetManyRequest
	}{
		{"too many keys", &kurav1.GetManyRequest{Keyspace: "default", Keys: make([][]byte, apiserver.GetManyKeysMax+1)}},
		{"unknown level", &kurav1.GetManyRequest{Keyspace: "default", Keys: keys, Consistency: kurav1.Consistency(99)}},
	}
	for _, tt := range tests {
		if _, err := kv.GetMany(ctx, tt.req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", tt.name, err)
		}
	}
}

// startSoloKV starts a one-node cluster (replication simple=1, keyspace "default") with
// limits, stopped at the test's end, and dials its gRPC API.
func startSoloKV(t *testing.T, limits coord.Limits) kurav1.KVClient {
	t.Helper()
	n, err := Start(Config{ID: "n1", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", InMemory: true, DefaultReplication: "simple=1",
		Limits: limits, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return kvClient(t, n)
}
