package rebalance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/cluster/clustertest"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// view is a directory in a table: its members, and which are up.
type view = clustertest.View

// catalog holds definitions by name.
type catalog map[string]schema.Keyspace

func (c catalog) Get(name string) (schema.Keyspace, error) {
	ks, ok := c[name]
	if !ok {
		return ks, schema.ErrNoKeyspace
	}
	return ks, nil
}

// Apply compiles ks, as schema.Catalog does, so that a move's next definition places
// keys.
func (c catalog) Apply(ks schema.Keyspace) (bool, error) {
	compiled, err := ks.Compile()
	if err != nil {
		return false, err
	}
	c[ks.Name] = compiled
	return true, nil
}

// unused stands for the parts a test never reaches: each call fails it.
type unused struct{ t *testing.T }

func (u unused) Publish(context.Context, schema.Keyspace) error { u.t.Fatal("published"); return nil }
func (u unused) Stamp() (hlc.Timestamp, error)                  { u.t.Fatal("stamped"); return 0, nil }
func (u unused) Now() hlc.Timestamp                             { u.t.Fatal("read the clock"); return 0 }
func (u unused) Step(context.Context, cluster.Node, []byte) ([]byte, error) {
	u.t.Fatal("asked a peer for a step")
	return nil, nil
}
func (u unused) Each(string, bool, func(lww.Record) error) error {
	u.t.Fatal("read the store")
	return nil
}
func (u unused) DropUnless(string, func([]byte) bool) (int64, int64, error) {
	u.t.Fatal("dropped records")
	return 0, 0, nil
}
func (u unused) Apply(context.Context, cluster.Node, string, []lww.Record) error {
	u.t.Fatal("copied records")
	return nil
}
func (u unused) Ring() (*ring.Ring, error)       { u.t.Fatal("read the ring"); return nil, nil }
func (u unused) FutureRing() (*ring.Ring, error) { u.t.Fatal("read the future ring"); return nil, nil }

func keyspace(t *testing.T, ks schema.Keyspace) schema.Keyspace {
	t.Helper()
	compiled, err := ks.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

// newRebalancer is node a's, of a, b and c on the ring and up unless down names them,
// whose catalog holds ordered, hashed and coded.
func newRebalancer(t *testing.T, cfg Config, down ...string) *Rebalancer {
	t.Helper()
	v := view{Up: map[string]bool{}}
	for _, id := range []string{"a", "b", "c"} {
		v.Members = append(v.Members, cluster.Node{ID: id, DC: "dc1", Status: cluster.StatusNormal})
		v.Up[id] = true
	}
	for _, id := range down {
		v.Up[id] = false
	}
	return rebalancerOver(t, cfg, v, []schema.Keyspace{
		{Name: "ordered", Replication: "simple=2", Partitioner: "ordered", Timestamp: 7},
		{Name: "hashed", Replication: "simple=2", Timestamp: 7},
		{Name: "coded", Partitioner: "ordered", Erasure: schema.Erasure{M: 2, K: 1}, Timestamp: 7},
	})
}

// rebalancerOver is node a's over view v, whose catalog holds keyspaces; its other
// parts fail the test if used, so a test of refusals shows that nothing was touched.
func rebalancerOver(t *testing.T, cfg Config, v view, keyspaces []schema.Keyspace) *Rebalancer {
	t.Helper()
	c := catalog{}
	for _, ks := range keyspaces {
		c[ks.Name] = keyspace(t, ks)
	}
	cfg.Self = "a"
	cfg.RingDelay, cfg.RetryInterval = time.Second, time.Second
	u := unused{t}
	r, err := New(cfg, Parts{View: v, Catalog: c, Publisher: u, Clock: u, Peers: u, Store: u, Copier: u, Placement: u})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	u := unused{t}
	parts := Parts{View: view{}, Catalog: catalog{}, Publisher: u, Clock: u, Peers: u, Store: u, Copier: u, Placement: u}
	for _, cfg := range []Config{
		{RingDelay: time.Second, RetryInterval: time.Second},
		{Self: "a", RetryInterval: time.Second},
		{Self: "a", RingDelay: time.Second},
	} {
		if _, err := New(cfg, parts); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
	if _, err := New(Config{Self: "a", RingDelay: time.Second, RetryInterval: time.Second}, Parts{}); err == nil {
		t.Error("New accepted no parts")
	}
}

// TestRebalanceRefusesWhatItCannotMoveSafely: each refusal comes before the move
// touches anything (the unused parts fail the test if it does).
func TestRebalanceRefusesWhatItCannotMoveSafely(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		down     []string
		keyspace string
		splits   int
		want     error
		says     string
	}{
		{"too many split keys", Config{}, nil, "ordered", schema.MaxSplits + 1, coord.ErrInvalidArgument, "split keys"},
		{"a DHT", Config{DHT: "mlchord"}, nil, "ordered", 0, coord.ErrInvalidArgument, "onehop"},
		{"hash partitioner", Config{}, nil, "hashed", 0, coord.ErrInvalidArgument, "partitioner"},
		{"erasure-coded", Config{}, nil, "coded", 0, coord.ErrInvalidArgument, "erasure-coded"},
		{"a node down", Config{}, []string{"c"}, "ordered", 0, coord.ErrUnavailable, "node c is down"},
		{"no such keyspace", Config{}, nil, "nothing", 0, schema.ErrNoKeyspace, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRebalancer(t, tc.cfg, tc.down...)
			err := r.Rebalance(context.Background(), tc.keyspace, tc.splits, func(p Progress) { t.Fatalf("reported %q", p.Step) })
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

// TestHandleStepWaitsForTheDefinition: a step for a definition this node has not
// learned, or one its definition forbids, is refused, so that the asker retries.
func TestHandleStepWaitsForTheDefinition(t *testing.T) {
	r := newRebalancer(t, Config{})
	for _, tc := range []struct {
		req  *kurav1.RebalanceStepRequest
		says string
	}{
		{&kurav1.RebalanceStepRequest{Keyspace: "ordered", Definition: 8, Step: stepSample}, "holds definition 7"},
		{&kurav1.RebalanceStepRequest{Keyspace: "ordered", Definition: 7, Step: stepCopy}, "not moving"},
		{&kurav1.RebalanceStepRequest{Keyspace: "ordered", Definition: 7, Step: "shuffle"}, "unknown step"},
	} {
		payload, err := proto.Marshal(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.HandleStep(context.Background(), payload); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: got %v, want an error saying %q", tc.req, err, tc.says)
		}
	}
}
