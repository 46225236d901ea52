package node

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
)

// TestPutExpiryOverGRPC checks the gRPC API's expiry: a relative or absolute deadline is
// stored with the value and returned by Get, a deadline already past makes the value
// absent at once, and malformed expiries are invalid arguments.
func TestPutExpiryOverGRPC(t *testing.T) {
	a := startNode(t, "a", "dc1")
	ctx := context.Background()
	cl, err := client.Dial(ctx, []string{a.ClientAddr()}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.CreateKeyspace(ctx, "app", "simple=1", ""); err != nil {
		t.Fatal(err)
	}
	kv := kvClient(t, a)
	hour := time.Hour.Milliseconds()
	later := time.Now().Add(24 * time.Hour).UnixMilli()
	tests := []struct {
		name      string
		ttlMs     int64
		atUnixMs  int64
		code      codes.Code // of the put
		wantFound bool
	}{
		{"no expiry", 0, 0, codes.OK, true},
		{"relative", hour, 0, codes.OK, true},
		{"absolute", 0, later, codes.OK, true},
		{"absolute, already past", 0, 1, codes.OK, false},
		{"negative ttl", -1, 0, codes.InvalidArgument, false},
		{"negative deadline", 0, -1, codes.InvalidArgument, false},
		{"both", hour, later, codes.InvalidArgument, false},
		{"past what a timestamp holds", 0, 1 << 48, codes.InvalidArgument, false},
		{"ttl past what a timestamp holds", 1 << 48, 0, codes.InvalidArgument, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := []byte(tt.name)
			before := time.Now().UnixMilli()
			_, err := kv.Put(ctx, &kurav1.PutRequest{Keyspace: "app", Key: key, Value: []byte("v"), TtlMs: tt.ttlMs, ExpiresAtUnixMs: tt.atUnixMs})
			after := time.Now().UnixMilli()
			if got := status.Code(err); got != tt.code {
				t.Fatalf("put: %v, want code %v", err, tt.code)
			}
			got, err := kv.Get(ctx, &kurav1.GetRequest{Keyspace: "app", Key: key})
			if err != nil {
				t.Fatal(err)
			}
			if got.GetFound() != tt.wantFound {
				t.Fatalf("get found = %t, want %t", got.GetFound(), tt.wantFound)
			}
			if !got.GetFound() {
				return
			}
			expires := got.GetExpiresAtUnixMs()
			switch {
			case tt.ttlMs > 0 && (expires < before+tt.ttlMs || expires > after+tt.ttlMs):
				t.Errorf("expires at %d, want %d ms after the put, within [%d, %d]", expires, tt.ttlMs, before+tt.ttlMs, after+tt.ttlMs)
			case tt.ttlMs == 0 && expires != tt.atUnixMs:
				t.Errorf("expires at %d, want %d", expires, tt.atUnixMs)
			}
		})
	}

	// Through the Go client: a TTL, then the value gone once it passed.
	if _, err := cl.Put(ctx, "app", []byte("short"), []byte("v"), consistency.One, client.WithTTL(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the value with a 20 ms TTL reads as absent", func() bool {
		_, found, err := cl.Get(ctx, "app", []byte("short"), consistency.One)
		return err == nil && !found
	})
	deadline := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if _, err := cl.Put(ctx, "app", []byte("long"), []byte("v"), consistency.One, client.WithExpiresAt(deadline)); err != nil {
		t.Fatal(err)
	}
	if item, found, err := cl.Get(ctx, "app", []byte("long"), consistency.One); err != nil || !found || !item.ExpiresAt.Equal(deadline) {
		t.Fatalf("Get = %+v, %t, %v; want the value expiring at %v", item, found, err, deadline)
	}
}

// TestTruncateSpreadsAndDrops truncates a keyspace through one node: every node learns
// the truncation before Truncate returns, so a write coordinated by another node right
// after it stays while the older values read as absent, and each replica drops the older
// values from its disk in the background.
func TestTruncateSpreadsAndDrops(t *testing.T) {
	a := startNode(t, "a", "dc1")
	b := startNode(t, "b", "dc2", a.Addr())
	c := startNode(t, "c", "dc2", a.Addr())
	nodes := []*Node{a, b, c}
	for _, n := range nodes {
		waitUntil(t, n.ID()+" knows all three normal", func() bool { return normalNodes(n) == 3 })
	}
	ctx := context.Background()
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "dc1=1,dc2=2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Coordinator().Put(ctx, "app", []byte("before"), []byte("v"), 0, consistency.All); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, []string{b.ClientAddr()}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.TruncateKeyspace(ctx, "nope"); !client.IsNotFound(err) {
		t.Fatalf("truncating an unknown keyspace: err = %v, want not found", err)
	}
	truncatedAt, err := cl.TruncateKeyspace(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if ks, err := n.Keyspace("app"); err != nil || ks.TruncatedAt != truncatedAt {
			t.Fatalf("%s: keyspace %+v, %v; want truncated at %s when Truncate returns", n.ID(), ks, err, truncatedAt)
		}
	}
	if _, err := c.Coordinator().Put(ctx, "app", []byte("after"), []byte("v"), 0, consistency.All); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if _, found, err := n.Coordinator().Get(ctx, "app", []byte("before"), consistency.All); err != nil || found {
			t.Errorf("%s: get of a value written before the truncation = found %t, %v; want absent", n.ID(), found, err)
		}
		if _, found, err := n.Coordinator().Get(ctx, "app", []byte("after"), consistency.All); err != nil || !found {
			t.Errorf("%s: get of a value written after the truncation = found %t, %v; want found", n.ID(), found, err)
		}
	}
	for _, n := range nodes {
		waitUntil(t, n.ID()+" drops the truncated value from its disk", func() bool {
			_, found, err := n.local.Get(ctx, "app", []byte("before"))
			return err == nil && !found
		})
		if _, found, err := n.local.Get(ctx, "app", []byte("after")); err != nil || !found {
			t.Errorf("%s: the value written after the truncation is gone from its disk (%v)", n.ID(), err)
		}
	}
}
