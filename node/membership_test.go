package node

import (
	"testing"

	"github.com/kuradb/kura/schema"
)

func TestTokensRoundTrip(t *testing.T) {
	for _, tokens := range [][]uint64{nil, {0}, {1, 1 << 63, ^uint64(0)}} {
		got, err := parseTokens(formatTokens(tokens))
		if err != nil || len(got) != len(tokens) {
			t.Fatalf("parseTokens(formatTokens(%v)) = %v, %v", tokens, got, err)
		}
		for i := range tokens {
			if got[i] != tokens[i] {
				t.Fatalf("token %d: %d, want %d", i, got[i], tokens[i])
			}
		}
	}
	if _, err := parseTokens("12,x"); err == nil {
		t.Fatal("a malformed token list was accepted")
	}
}

// A node that missed a keyspace's announcement notices the gossiped schema digest and
// pulls the catalog.
func TestMissedKeyspaceArrivesThroughGossip(t *testing.T) {
	a := startNode(t, "a", "dc1")
	b := startNode(t, "b", "dc1", a.Addr())
	waitUntil(t, "a and b know each other", func() bool {
		return a.View().State("b").Reachable() && b.View().State("a").Reachable()
	})
	// Define the keyspace on a alone, as if the announcement to b had been lost.
	ks, err := schema.Keyspace{Name: "quiet", Replication: "simple=1", Timestamp: a.clock.Now()}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.catalog.Apply(ks); err != nil {
		t.Fatal(err)
	}
	a.gossip.schemaChanged()
	waitUntil(t, "b learns the keyspace", func() bool {
		_, err := b.Keyspace("quiet")
		return err == nil
	})
}
