package coord

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/racedetector"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/hints"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// stubReplica answers every read with rec and counts writes; a replica with a gate
// blocks each write until the gate is closed. Its other methods are not called.
type stubReplica struct {
	replica.Replica
	rec  lww.Record
	gate chan struct{}

	mu      sync.Mutex
	applied []lww.Record
	asked   atomic.Int64 // gets
}

func (s *stubReplica) Get(context.Context, string, []byte) (lww.Record, bool, error) {
	s.asked.Add(1)
	return s.rec, true, nil
}

// gets is how many gets the replica was asked.
func (s *stubReplica) gets() int64 { return s.asked.Load() }

func (s *stubReplica) Apply(_ context.Context, _ string, records []lww.Record) error {
	s.mu.Lock()
	s.applied = append(s.applied, records...)
	s.mu.Unlock()
	if s.gate != nil {
		<-s.gate
	}
	return nil
}

func (s *stubReplica) writes() []lww.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]lww.Record(nil), s.applied...)
}

// stubParts are the parts of a coordinator over stub replicas, one per node id.
type stubParts struct {
	keyspaces map[string]schema.Keyspace
	replicas  map[string]*stubReplica
	clock     hlc.Timestamp
	clockMu   sync.Mutex

	// remotes, when a node has one, stands in for its stub: a remote.Remote over a
	// fake network, whose errors are made as a real peer's are.
	remotes map[string]replica.Replica

	// takesHints makes Add store hints, whose targets hinted lists; otherwise Add fails.
	takesHints bool
	hintsMu    sync.Mutex
	hinted     []string
}

func (p *stubParts) Get(name string) (schema.Keyspace, error) {
	ks, ok := p.keyspaces[name]
	if !ok {
		return schema.Keyspace{}, schema.ErrNoKeyspace
	}
	return ks, nil
}

func (p *stubParts) Replica(n cluster.Node) replica.Replica {
	if r, ok := p.remotes[n.ID]; ok {
		return r
	}
	return p.replicas[n.ID]
}

func (p *stubParts) Add(target, _ string, _ lww.Record) error {
	if !p.takesHints {
		return errors.New("no hints here")
	}
	p.hintsMu.Lock()
	defer p.hintsMu.Unlock()
	p.hinted = append(p.hinted, target)
	return nil
}

func (p *stubParts) Pending() (int, error)                            { return 0, nil }
func (p *stubParts) For(string, int, int) ([]hints.Hint, bool, error) { return nil, false, nil }
func (p *stubParts) Delivered(hints.Hint) error                       { return nil }
func (p *stubParts) Distance(string) time.Duration                    { return 0 }
func (p *stubParts) Observe(hlc.Timestamp) error                      { return nil }
func (p *stubParts) Now() hlc.Timestamp                               { return 1 }
func (p *stubParts) Stamp() (hlc.Timestamp, error)                    { return p.tick(), nil }
func (p *stubParts) tick() hlc.Timestamp {
	p.clockMu.Lock()
	defer p.clockMu.Unlock()
	p.clock++
	return p.clock
}

// stubCoordinator returns a coordinator on node n1 of nodes (all in DC a, all up) over
// stub replicas, and keyspace "ks" replicated as replication says.
func stubCoordinator(t testing.TB, replication string, nodes ...string) (*Coordinator, *stubParts) {
	t.Helper()
	dir := cluster.NewDirectory(cluster.Node{ID: nodes[0], DC: "a"})
	parts := &stubParts{keyspaces: map[string]schema.Keyspace{}, replicas: map[string]*stubReplica{}}
	for _, id := range nodes {
		if id != nodes[0] {
			if _, err := dir.Upsert(cluster.Node{ID: id, DC: "a"}); err != nil {
				t.Fatal(err)
			}
			dir.SetState(id, cluster.StateUp)
		}
		parts.replicas[id] = &stubReplica{rec: lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}}
	}
	ks, err := schema.Keyspace{Name: "ks", Replication: replication}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	parts.keyspaces[ks.Name] = ks
	c := New(Config{}, Parts{View: dir, Keyspaces: parts, Placement: placement.NewRing(dir, 8),
		Replicas: parts, Hints: parts, Clock: parts, Proximity: parts})
	return c, parts
}

// TestPointPathAllocations checks what the coordinator itself allocates for a point read
// and write whose replica is this node: nothing for a read (the pooled pointOp, the
// placement's strategy name made once, LOCAL_QUORUM's shared requirement map), and for a
// write only the replica's batch of one record. Storage's own allocations are not
// counted: the replica is a stub.
func TestPointPathAllocations(t *testing.T) {
	if racedetector.Enabled {
		t.Skip("the race detector's sync.Pool drops pooled ops at random")
	}
	c, _ := stubCoordinator(t, "a=1", "n1")
	ctx := context.Background()
	key, value := []byte("k"), []byte("v")
	for _, tt := range []struct {
		level    consistency.Level
		get, put float64
	}{
		{consistency.One, 0, 1},
		{consistency.Quorum, 0, 1},
		{consistency.LocalQuorum, 0, 1},
	} {
		get := testing.AllocsPerRun(200, func() {
			if _, found, err := c.Get(ctx, "ks", key, tt.level); err != nil || !found {
				t.Fatalf("Get = %v, %v", found, err)
			}
		})
		put := testing.AllocsPerRun(200, func() {
			if _, err := c.Put(ctx, "ks", key, value, 0, tt.level); err != nil {
				t.Fatalf("Put: %v", err)
			}
		})
		if get > tt.get || put > tt.put {
			t.Errorf("%v: Get made %v allocations, Put %v; want at most %v and %v", tt.level, get, put, tt.get, tt.put)
		}
	}
}

// TestPointOpNotReusedWhileInFlight checks that a write answered by this node's replica
// while a remote one is still being written does not give its memory back for the next
// write: the remote replica, once it answers, got the first write's record, and the
// second write's reached it as its own.
func TestPointOpNotReusedWhileInFlight(t *testing.T) {
	c, parts := stubCoordinator(t, "a=2", "n1", "n2")
	remote := parts.replicas["n2"]
	remote.gate = make(chan struct{})
	ctx := context.Background()
	for _, v := range []string{"first", "second"} {
		if _, err := c.Put(ctx, "ks", []byte("k"), []byte(v), 0, consistency.One); err != nil {
			t.Fatalf("Put %s: %v", v, err)
		}
	}
	// Both writes returned on the local answer; the remote replica holds both requests.
	deadline := time.Now().Add(5 * time.Second)
	for len(remote.writes()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(remote.gate)
	got := remote.writes()
	if len(got) != 2 || string(got[0].Value) == string(got[1].Value) {
		var values []string
		for _, r := range got {
			values = append(values, string(r.Value))
		}
		t.Fatalf("remote replica got %q; want first and second, one each", values)
	}
	if local := parts.replicas["n1"].writes(); len(local) != 2 {
		t.Errorf("local replica got %d writes, want 2", len(local))
	}
}
