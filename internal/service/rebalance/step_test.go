package rebalance

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
)

// thirdsRing places a, b and c of newRebalancer a third of the token space each, with
// no ring change under way: the future ring is the same.
type thirdsRing struct{}

func (thirdsRing) Ring() (*ring.Ring, error) {
	var members []ring.Member
	for i, id := range []string{"a", "b", "c"} {
		members = append(members, ring.Member{ID: id, DC: "dc1", Tokens: []ring.Token{ring.Token(uint64(i) * (math.MaxUint64 / 3))}})
	}
	return ring.New(members)
}

func (t thirdsRing) FutureRing() (*ring.Ring, error) { return t.Ring() }

// listStore holds records in a list; before is called with how many records a copy's
// scan or a drop's keep has passed, before the next one.
type listStore struct {
	unused
	records []lww.Record
	before  func(passed int)
	dropped int64
}

func (s *listStore) Each(_ string, _ bool, fn func(lww.Record) error) error {
	for _, rec := range s.records {
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

func (s *listStore) DropUnless(_ string, keep func([]byte) bool) (int64, int64, error) {
	for i, rec := range s.records {
		s.before(i)
		if !keep(rec.Key) {
			s.dropped++
		}
	}
	return s.dropped, 0, nil
}

// countingCopier counts the batches copied, calling after on each.
type countingCopier struct {
	unused
	batches int
	after   func()
}

func (c *countingCopier) Apply(context.Context, cluster.Node, string, []lww.Record) error {
	c.batches++
	c.after()
	return nil
}

// TestStepStopsOnceTheDefinitionChanges: a copy or a drop runs on after every requester
// has gone (HandleStep), so it checks the catalog itself: once the definition is no
// longer the step's, a copy sends no further batch (the move settled back: its copies
// would be leftovers where the settle's drop has run) and a drop keeps every record it
// has not dropped yet (a new move started, whose pending replicas this node may be),
// and the step fails. With the definition unchanged each runs to the end.
func TestStepStopsOnceTheDefinitionChanges(t *testing.T) {
	moving := schema.Keyspace{Name: "app", Replication: "simple=1", Timestamp: 7, Moving: true, NextReplication: "simple=3"}
	settled := schema.Keyspace{Name: "app", Replication: "simple=1", Timestamp: 7}
	for _, tc := range []struct {
		name string
		step string
		// ks is the definition the step is for; then, if set, the one the catalog learns
		// once the first batch is copied or the first record passed to the drop.
		ks, then schema.Keyspace
		// held picks the records: those this node is a replica of (true) or not.
		held      bool
		wantCalls int // batches copied, or records dropped
		says      string
	}{
		{name: "copy, unchanged", step: stepCopy, ks: moving, held: true, wantCalls: 6},
		{name: "copy, the move settled back", step: stepCopy, ks: moving, held: true,
			then: schema.Keyspace{Name: "app", Replication: "simple=1", Timestamp: 8}, wantCalls: 1, says: "changed meanwhile"},
		{name: "drop, unchanged", step: stepDrop, ks: settled, wantCalls: 3 * copyBatch},
		{name: "drop, a new move started", step: stepDrop, ks: settled,
			then: schema.Keyspace{Name: "app", Replication: "simple=1", Timestamp: 8, Moving: true, NextReplication: "simple=2"}, wantCalls: 1, says: "changed meanwhile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRebalancer(t, Config{})
			c := r.catalog.(catalog)
			c["app"] = keyspace(t, tc.ks)
			r.placement = thirdsRing{}
			replicaOf, err := r.replicaOf(c["app"])
			if err != nil {
				t.Fatal(err)
			}
			learn := func() {
				if tc.then.Name != "" {
					c["app"] = keyspace(t, tc.then)
				}
			}
			store := &listStore{unused: unused{t}, before: func(passed int) {
				if passed == 1 {
					learn()
				}
			}}
			for i := 0; len(store.records) < 3*copyBatch; i++ {
				if i == 100*copyBatch {
					t.Fatalf("%d keys, %d of them held %v", i, len(store.records), tc.held)
				}
				key := []byte(fmt.Sprintf("k%05d", i))
				if replicaOf(key) == tc.held {
					store.records = append(store.records, lww.Record{Key: key, Value: key, Timestamp: 1})
				}
			}
			copier := &countingCopier{unused: unused{t}, after: learn}
			r.store, r.copier = store, copier
			payload, err := proto.Marshal(&kurav1.RebalanceStepRequest{Keyspace: "app", Definition: uint64(tc.ks.Timestamp), Step: tc.step})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.HandleStep(context.Background(), payload)
			switch {
			case tc.says == "" && err != nil:
				t.Fatalf("failed: %v", err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Fatalf("got %v, want an error saying %q", err, tc.says)
			}
			calls := copier.batches
			if tc.step == stepDrop {
				calls = int(store.dropped)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d batches copied or records dropped, want %d", calls, tc.wantCalls)
			}
		})
	}
}
