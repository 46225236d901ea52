package placement

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/routing"
)

// fakeRouter routes each token by a fixed table: the owner, then its successors.
type fakeRouter map[ring.Token][]string

// hashRoutes is a fakeRouter routing each key's hash token as routes says.
func hashRoutes(routes map[string][]string) fakeRouter {
	f := fakeRouter{}
	for key, ids := range routes {
		f[ring.HashPartitioner().Token([]byte(key))] = ids
	}
	return f
}

func (f fakeRouter) Lookup(_ context.Context, token ring.Token) (routing.Route, error) {
	ids, ok := f[token]
	if !ok {
		return routing.Route{}, routing.ErrNoRing
	}
	return routing.Route{Owner: ids[0], Successors: ids[1:]}, nil
}

func (fakeRouter) Name() string { return "fake" }

func threeNodes() *cluster.Directory {
	dir := cluster.NewDirectory(cluster.Node{ID: "n1", DC: "a"})
	dir.Upsert(cluster.Node{ID: "n2", DC: "b"})
	dir.Upsert(cluster.Node{ID: "n3", DC: "b"})
	dir.SetState("n3", cluster.StateDown)
	return dir
}

func TestDHTChunkOwnersFollowTheRouter(t *testing.T) {
	dir := threeNodes()
	router := hashRoutes(map[string][]string{"c0": {"n1"}, "c1": {"n2"}, "c2": {"n3"}})
	d := NewDHT(router, dir, NewRing(dir, 1))
	owners, err := d.ChunkOwners(context.Background(), schema.Keyspace{}, [][]byte{[]byte("c0"), []byte("c1"), []byte("c2")})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(owners); got != "[{n1 a up false} {n2 b up false} {n3 b down false}]" {
		t.Fatalf("owners = %s", got)
	}
	if _, err := d.ChunkOwners(context.Background(), schema.Keyspace{}, [][]byte{[]byte("nobody owns this")}); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("unroutable chunk: err = %v, want ErrNoRoute", err)
	}
}

func TestDHTReplicasTakeSuccessorsPerDC(t *testing.T) {
	dir := threeNodes()
	router := hashRoutes(map[string][]string{"k": {"n2", "n3", "n1"}, "lost": {"n9"}})
	d := NewDHT(router, dir, NewRing(dir, 1))
	tests := []struct {
		replication string
		want        string
	}{
		{"simple=2", "[{n2 b up false} {n3 b down false}]"},
		{"a=1,b=1", "[{n2 b up false} {n1 a up false}]"},
		{"b=2", "[{n2 b up false} {n3 b down false}]"},
	}
	for _, tt := range tests {
		ks, err := schema.Keyspace{Name: "ks", Replication: tt.replication, Partitioner: "hash"}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Replicas(context.Background(), ks, []byte("k"), nil)
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("%s: replicas = %v, %v; want %s", tt.replication, got, err, tt.want)
		}
	}
	ks, _ := schema.Keyspace{Name: "ks", Replication: "simple=1", Partitioner: "hash"}.Compile()
	if _, err := d.Replicas(context.Background(), ks, []byte("lost"), nil); !errors.Is(err, ErrNoRoute) {
		t.Errorf("an owner unknown to the view: err = %v, want ErrNoRoute", err)
	}
}

// TestDHTReplicasFollowTheKeyspacesToken checks that the DHT looks a key up by its
// token under the keyspace's partitioner: under grouped, the keys of one hash tag go to
// the tag's owner, as the ring's placement puts them, and an untagged key to its hash
// token's owner.
func TestDHTReplicasFollowTheKeyspacesToken(t *testing.T) {
	dir := threeNodes()
	router := hashRoutes(map[string][]string{"user42": {"n2"}, "{user42}:cart": {"n1"}, "plain": {"n1"}})
	d := NewDHT(router, dir, NewRing(dir, 1))
	tests := []struct {
		partitioner, key, want string
	}{
		{"grouped", "{user42}:cart", "[{n2 b up false}]"},
		{"grouped", "{user42}:profile", "[{n2 b up false}]"},
		{"grouped", "plain", "[{n1 a up false}]"},
		{"hash", "{user42}:cart", "[{n1 a up false}]"},
	}
	for _, tt := range tests {
		ks, err := schema.Keyspace{Name: "ks", Replication: "simple=1", Partitioner: tt.partitioner}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Replicas(context.Background(), ks, []byte(tt.key), nil)
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("%s %q: replicas = %v, %v; want %s", tt.partitioner, tt.key, got, err, tt.want)
		}
	}
}
