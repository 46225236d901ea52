package coord

import (
	"slices"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/sched"
)

// kuraPolicy is a ReadPolicy fixed to p.
type kuraPolicy struct{ p sched.Policy }

func (k kuraPolicy) Policy() sched.Policy { return k.p }

// A scan request weighs an access and its rows, up to a page.
func TestScanWork(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  int64
	}{
		{1, 1},
		{15, 1},
		{16, 2},
		{100, 7},
		{sched.PageRows, 1 + sched.PageRows/scanRowsPerGet},
		{10 * sched.PageRows, 1 + sched.PageRows/scanRowsPerGet},
		{0, 1 + sched.PageRows/scanRowsPerGet},
	} {
		if got := scanWork(tc.limit); got != tc.want {
			t.Errorf("scanWork(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// Under kura's policy reads go to the replica of the local DC where they would wait
// least, gets by the gets pending there, scans by everything; equals keep the nearest
// first order, and other DCs stay behind. Under any other policy nothing is counted and
// the order is the nearest first.
func TestReadableLeastPendingFirst(t *testing.T) {
	kura, err := sched.ParsePolicy("kura")
	if err != nil {
		t.Fatal(err)
	}
	a, err := sched.ParsePolicy("A")
	if err != nil {
		t.Fatal(err)
	}
	members := []placement.Member{
		{ID: "n1", DC: "a", State: cluster.StateUp},
		{ID: "n2", DC: "a", State: cluster.StateUp},
		{ID: "n3", DC: "a", State: cluster.StateUp},
		{ID: "far", DC: "b", State: cluster.StateUp},
	}
	type read struct {
		node  string
		scan  bool
		limit int
	}
	for _, tc := range []struct {
		name      string
		policy    sched.Policy
		pending   []read
		scan      bool
		wantOrder []string
	}{
		{name: "nothing pending: this node, then by distance", policy: kura,
			wantOrder: []string{"n1", "n2", "n3", "far"}},
		{name: "a get avoids the gets pending", policy: kura,
			pending:   []read{{node: "n1"}, {node: "n1"}, {node: "n2"}},
			wantOrder: []string{"n3", "n2", "n1", "far"}},
		{name: "a get does not count scans, which it goes before", policy: kura,
			pending:   []read{{node: "n1", scan: true, limit: 256}, {node: "n2"}},
			wantOrder: []string{"n1", "n3", "n2", "far"}},
		{name: "a scan counts everything", policy: kura, scan: true,
			pending:   []read{{node: "n1", scan: true, limit: 256}, {node: "n2"}},
			wantOrder: []string{"n3", "n2", "n1", "far"}},
		{name: "another DC stays behind however loaded the local one", policy: kura,
			pending:   []read{{node: "n1"}, {node: "n2"}, {node: "n3"}},
			wantOrder: []string{"n1", "n2", "n3", "far"}},
		{name: "A counts nothing and keeps the nearest first", policy: a,
			pending:   []read{{node: "n1"}, {node: "n1"}, {node: "n2"}},
			wantOrder: []string{"n1", "n2", "n3", "far"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := stubCoordinator(t, "a=3", "n1", "n2", "n3")
			c.reads = kuraPolicy{tc.policy}
			var answered []pendingRead
			for _, r := range tc.pending {
				answered = append(answered, c.pending.asked(c.readPolicy(), r.node, r.limit, r.scan))
			}
			order := func() []string {
				var ids []string
				for _, t := range c.readable(nil, slices.Clone(members), 0, tc.scan) {
					ids = append(ids, t.ID)
				}
				return ids
			}
			if got := order(); !slices.Equal(got, tc.wantOrder) {
				t.Errorf("order %v, want %v", got, tc.wantOrder)
			}
			for _, r := range answered {
				r.done()
			}
			if got, want := order(), []string{"n1", "n2", "n3", "far"}; !slices.Equal(got, want) {
				t.Errorf("once all were answered: order %v, want %v", got, want)
			}
		})
	}
}

// Under kura's policy a get at ONE is asked of the replica with the fewest gets pending,
// and the count goes back down once it answered.
func TestKuraGetAsksLeastPending(t *testing.T) {
	c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	c.reads = kuraPolicy{sched.Policy{Queue: sched.Fair, Parallel: true, RaS: true}}
	defer c.pending.asked(c.readPolicy(), "n1", 0, false).done()
	if _, _, err := c.Get(t.Context(), "ks", []byte("k"), consistency.One); err != nil {
		t.Fatal(err)
	}
	if n := parts.replicas["n1"].gets(); n != 0 {
		t.Errorf("n1, with a get pending, was asked %d gets; want the read sent elsewhere", n)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		want := int64(0)
		if id == "n1" {
			want = 1
		}
		if got := c.pending.of(id).gets.Load(); got != want {
			t.Errorf("%s: %d gets pending after the get answered, want %d", id, got, want)
		}
	}
}
