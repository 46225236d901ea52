package node

import (
	"context"
	"testing"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
)

func TestGRPCRequestsAreMetered(t *testing.T) {
	n, err := Start(Config{ID: "n1", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	if err := n.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=1"}); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, []string{n.ClientAddr()}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 3 {
		if _, err := cl.Put(ctx, "app", []byte("k"), []byte("v"), consistency.Quorum); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := cl.Get(ctx, "nope", []byte("k"), consistency.One); err == nil {
		t.Fatal("a read of a missing keyspace succeeded")
	}
	if _, err := cl.Keyspaces(ctx); err != nil { // an admin call: not metered
		t.Fatal(err)
	}

	families := scrape(t, n)
	tests := []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"kura_requests_total", map[string]string{"api": "grpc", "op": "put", "consistency": "QUORUM"}, 3},
		{"kura_requests_total", map[string]string{"api": "grpc", "op": "get", "consistency": "ONE"}, 1},
		{"kura_request_duration_seconds", map[string]string{"api": "grpc", "op": "put"}, 3},
		{"kura_request_errors_total", map[string]string{"api": "grpc", "op": "get", "kind": "no_keyspace"}, 1},
		{"kura_request_errors_total", map[string]string{"op": "put"}, 0},
		{"kura_requests_total", map[string]string{"api": "resp"}, 0},
	}
	for _, tt := range tests {
		got := sumMetric(families, tt.metric, func(labels map[string]string) bool {
			for k, v := range tt.labels {
				if labels[k] != v {
					return false
				}
			}
			return true
		})
		if got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.metric, tt.labels, got, tt.want)
		}
	}
	if total := sumMetric(families, "kura_requests_total", func(map[string]string) bool { return true }); total != 4 {
		t.Errorf("%v requests metered, want the 4 data requests only", total)
	}
}
