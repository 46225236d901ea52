package schemasync

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/cluster/clustertest"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/storage"
)

// view is a directory in a table: its members, and which are up.
type view = clustertest.View

// peers delivers announcements and pulls to other Syncers in the same test, by id; an
// id with no Syncer fails the call.
type peers struct {
	mu        sync.Mutex
	syncers   map[string]*Syncer
	announced []string
}

func (p *peers) Announce(_ context.Context, to cluster.Node, update []byte) error {
	p.mu.Lock()
	p.announced = append(p.announced, to.ID)
	s := p.syncers[to.ID]
	p.mu.Unlock()
	if s == nil {
		return errors.New("unreachable")
	}
	return s.HandleUpdate(update)
}

func (p *peers) Pull(_ context.Context, from cluster.Node) ([]byte, error) {
	p.mu.Lock()
	s := p.syncers[from.ID]
	p.mu.Unlock()
	if s == nil {
		return nil, errors.New("unreachable")
	}
	return s.HandlePull()
}

// digests keeps the last digest published.
type digests struct{ last uint64 }

func (d *digests) PublishDigest(digest uint64) { d.last = digest }

// guard stamps with its clock unless refuse is set, and keeps what it observed.
type guard struct {
	clock    *hlc.Clock
	refuse   error
	observed []hlc.Timestamp
}

func (g *guard) Stamp() (hlc.Timestamp, error) {
	if g.refuse != nil {
		return 0, g.refuse
	}
	return g.clock.Now(), nil
}

func (g *guard) Observe(ts hlc.Timestamp) error {
	g.observed = append(g.observed, ts)
	return nil
}

// store reports each truncation it is asked to drop.
type store struct{ dropped chan string }

func (s store) Truncate(keyspace string, _ hlc.Timestamp) (int, error) {
	s.dropped <- keyspace
	return 0, nil
}

// catalog is a schema.Catalog that tells when its truncations are first read: when
// DropTruncated has taken the truncations it leaves to garbage collection.
type catalog struct {
	*schema.Catalog
	read chan struct{}
}

func (c catalog) Truncations() map[string]hlc.Timestamp {
	select {
	case c.read <- struct{}{}:
	default:
	}
	return c.Catalog.Truncations()
}

// node is one Syncer with its parts.
type node struct {
	*Syncer
	catalog catalog
	digests *digests
	guard   *guard
	store   store
}

func newNode(t *testing.T, id string, v view, p *peers) *node {
	t.Helper()
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	opened, err := schema.Open(engine)
	if err != nil {
		t.Fatal(err)
	}
	catalog := catalog{Catalog: opened, read: make(chan struct{}, 1)}
	clock := hlc.NewClock(time.Now)
	n := &node{catalog: catalog, digests: &digests{}, guard: &guard{clock: clock}, store: store{dropped: make(chan string, 8)}}
	n.Syncer, err = New(Config{Self: id}, Parts{Catalog: catalog, View: v, Peers: p, Digests: n.digests, Clock: clock, Guard: n.guard, Store: n.store})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.syncers[id] = n.Syncer
	p.mu.Unlock()
	return n
}

// cluster3 is a, b and c in dc1, c down.
func cluster3() view {
	return view{
		Members: []cluster.Node{{ID: "a", DC: "dc1"}, {ID: "b", DC: "dc1"}, {ID: "c", DC: "dc1"}},
		Up:      map[string]bool{"a": true, "b": true},
	}
}

func TestNewRefusesMissingParts(t *testing.T) {
	if _, err := New(Config{}, Parts{}); err == nil {
		t.Fatal("New accepted a config without Self")
	}
	if _, err := New(Config{Self: "a"}, Parts{}); err == nil {
		t.Fatal("New accepted no parts")
	}
}

func TestCreateKeyspaceRefusesReplicationTheClusterCannotHold(t *testing.T) {
	a := newNode(t, "a", cluster3(), &peers{syncers: map[string]*Syncer{}})
	for _, replication := range []string{"dc2=1", "dc1=4", "simple=4"} {
		err := a.CreateKeyspace(context.Background(), schema.Keyspace{Name: "app", Replication: replication})
		if !errors.Is(err, schema.ErrInvalidKeyspace) {
			t.Errorf("replication %s: got %v, want %v", replication, err, schema.ErrInvalidKeyspace)
		}
	}
	if err := a.CreateKeyspace(context.Background(), schema.Keyspace{Name: "app", Replication: "dc1=3"}); err != nil {
		t.Fatalf("dc1=3 on three nodes, one down: %v", err)
	}
}

// TestCreateKeyspaceAgainWithoutAPartitioner: a creation that names no partitioner
// gets the default, and re-running it over a keyspace of another partitioner (created
// before grouped was the default) is the no-op it was; naming another one is refused.
func TestCreateKeyspaceAgainWithoutAPartitioner(t *testing.T) {
	a := newNode(t, "a", cluster3(), &peers{syncers: map[string]*Syncer{}})
	ctx := context.Background()
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "fresh", Replication: "dc1=2"}); err != nil {
		t.Fatal(err)
	}
	if ks, _ := a.catalog.Get("fresh"); ks.Partitioner != schema.DefaultPartitioner {
		t.Errorf("a keyspace created without a partitioner has %q, want %q", ks.Partitioner, schema.DefaultPartitioner)
	}
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "old", Replication: "dc1=2", Partitioner: "hash"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		partitioner string
		want        error
	}{
		{"", nil},
		{"hash", nil},
		{"grouped", schema.ErrInvalidKeyspace},
		{"ordered", schema.ErrInvalidKeyspace},
	}
	for _, tt := range tests {
		err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "old", Replication: "dc1=2", Partitioner: tt.partitioner})
		if !errors.Is(err, tt.want) {
			t.Errorf("re-creating a hash keyspace with partitioner %q: err = %v, want %v", tt.partitioner, err, tt.want)
		}
	}
	if ks, _ := a.catalog.Get("old"); ks.Partitioner != "hash" {
		t.Errorf("after the re-creations the keyspace has partitioner %q, want hash", ks.Partitioner)
	}
}

// TestDefinitionsReachEveryLiveNode: a creation and a truncation are announced to the
// reachable nodes, which apply them, gossip their new digest and drop the truncated
// records; a node that missed them pulls them.
func TestDefinitionsReachEveryLiveNode(t *testing.T) {
	p := &peers{syncers: map[string]*Syncer{}}
	v := cluster3()
	a, b := newNode(t, "a", v, p), newNode(t, "b", v, p)
	ctx := context.Background()
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=2"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.announced, []string{"b"}) {
		t.Fatalf("announced to %v, want [b]: c is down, a is the announcer", p.announced)
	}
	if _, err := b.catalog.Get("app"); err != nil {
		t.Fatalf("b did not apply the announcement: %v", err)
	}
	if a.digests.last != a.catalog.Digest() || b.digests.last != b.catalog.Digest() || a.catalog.Digest() != b.catalog.Digest() {
		t.Fatal("a and b do not gossip the same, current digest")
	}
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=2"}); err != nil || len(p.announced) != 1 {
		t.Fatalf("creating what exists: %v, announced %v; want a silent no-op", err, p.announced)
	}

	dropCtx, stop := context.WithCancel(ctx)
	defer stop()
	<-b.catalog.read // drain the reads of the creation's
	go b.DropTruncated(dropCtx)
	<-b.catalog.read
	at, err := a.Truncate(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if got := <-b.store.dropped; got != "app" {
		t.Fatalf("b dropped %s, want app", got)
	}
	if !slices.Contains(b.guard.observed, at) {
		t.Fatalf("b observed %v, not the truncation %v", b.guard.observed, at)
	}

	// c comes back having missed both, and pulls a's catalog.
	c := newNode(t, "c", v, p)
	c.Pull(ctx, cluster.Node{ID: "a"})
	ks, err := c.catalog.Get("app")
	if err != nil || ks.TruncatedAt != at {
		t.Fatalf("c after its pull: %+v, %v; want app truncated at %v", ks, err, at)
	}
}

func TestTruncateRefusedOnABadClock(t *testing.T) {
	a := newNode(t, "a", cluster3(), &peers{syncers: map[string]*Syncer{}})
	if err := a.CreateKeyspace(context.Background(), schema.Keyspace{Name: "app", Replication: "simple=1"}); err != nil {
		t.Fatal(err)
	}
	a.guard.refuse = errors.New("clock off")
	if _, err := a.Truncate(context.Background(), "app"); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("truncate on a bad clock: %v, want %v", err, coord.ErrUnavailable)
	}
	if _, err := a.DropKeyspace(context.Background(), "app"); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("drop on a bad clock: %v, want %v", err, coord.ErrUnavailable)
	}
}

func TestKeyspaceProtoRoundTrip(t *testing.T) {
	ks := schema.Keyspace{Name: "app", Replication: "dc1=2", Partitioner: "ordered", Erasure: schema.Erasure{M: 4, K: 2},
		Splits: [][]byte{[]byte("m")}, Moving: true, NextSplits: [][]byte{[]byte("g"), []byte("t")}, NextReplication: "dc1=3"}
	got := KeyspaceFromProto(KeyspaceProto(ks))
	if got.Name != ks.Name || got.Replication != ks.Replication || got.Partitioner != ks.Partitioner || got.Erasure != ks.Erasure ||
		got.Moving != ks.Moving || len(got.Splits) != 1 || len(got.NextSplits) != 2 || got.NextReplication != ks.NextReplication {
		t.Fatalf("round trip: %+v, want %+v", got, ks)
	}
}
