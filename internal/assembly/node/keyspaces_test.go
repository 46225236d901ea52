package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
)

func TestErasureCodedKeyspaceThroughTheClientAPI(t *testing.T) {
	a := startNode(t, "a", "dc1")
	b := startNode(t, "b", "dc2", a.Addr())
	c := startNode(t, "c", "dc2", a.Addr())
	for _, n := range []*Node{a, b, c} {
		waitUntil(t, n.ID()+" knows all three", func() bool { return len(n.View().Nodes()) == 3 })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, []string{a.ClientAddr()}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	if err := cl.CreateErasureKeyspace(ctx, "coded", 3, 2, ""); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "c knows the code", func() bool {
		ks, err := c.Keyspace("coded")
		return err == nil && ks.Erasure == schema.Erasure{M: 3, K: 2}
	})
	described, err := cl.Keyspace(ctx, "coded")
	if err != nil || described.GetErasure().GetM() != 3 || described.GetErasure().GetK() != 2 || described.GetReplication() != "simple=1" {
		t.Fatalf("describe = %v, %v; want erasure 3,2 with replication simple=1", described, err)
	}
	if err := cl.CreateErasureKeyspace(ctx, "coded", 3, 2, schema.DefaultPartitioner); err != nil {
		t.Fatalf("re-creating an identical keyspace: %v", err)
	}
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "coded", Erasure: schema.Erasure{M: 4, K: 2}}); !errors.Is(err, schema.ErrInvalidKeyspace) {
		t.Fatalf("re-creating with another code: err = %v", err)
	}
	if err := cl.CreateErasureKeyspace(ctx, "bad", 2, 3, ""); err == nil {
		t.Fatal("k > m accepted")
	}

	if _, err := cl.Put(ctx, "coded", []byte("k"), []byte("rebuilt from chunks"), consistency.All); err != nil {
		t.Fatal(err)
	}
	value, found, err := cl.Get(ctx, "coded", []byte("k"), consistency.One)
	if err != nil || !found || string(value.Value) != "rebuilt from chunks" {
		t.Fatalf("get = %q, %v, %v", value.Value, found, err)
	}
}
