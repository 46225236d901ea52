package coord

import (
	"context"
	"fmt"
	"math"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// KeyCount is how many live keys a keyspace holds, and how many of them expire.
type KeyCount struct {
	Keys, Expiring int64
}

// countPage bounds the index entries a replica visits for one count request.
const countPage = 1 << 16

// CountKeys counts a keyspace's live keys (Redis's DBSIZE, INFO's keyspace line). Each
// token range is counted by one replica, the nearest readable one, as a read at ONE
// would be; each replica counts all the ranges it was chosen for, walking its live-key
// index, a page of countPage entries per request, the replicas in parallel. The cost is
// an index entry and a record read per live key on the replicas, tombstones none, and
// no key crosses the network. A replica that fails fails the count.
func (c *Coordinator) CountKeys(ctx context.Context, keyspace string) (KeyCount, error) {
	plan, err := c.keysPlan(ctx, keyspace)
	if err != nil || len(plan.ranges) == 0 {
		return KeyCount{}, err
	}
	// counting is one replica's walk of the spans of the ranges it was chosen for.
	type counting struct {
		member placement.Member
		spans  []replica.Span // what is left to walk
		ranges []ring.Range   // byToken: the ranges to keep
	}
	var work []*counting
	chosen := map[string]*counting{}
	owner := make([]*counting, len(plan.ranges))
	for i, rg := range plan.ranges {
		candidates := c.readable(nil, rg.Replicas, i, true)
		if len(candidates) == 0 {
			required := levelRequirement(consistency.One, rg.Replicas, c.view.Self().DC)
			return KeyCount{}, &UnavailableError{Level: consistency.One, Required: required, Alive: map[string]int{}}
		}
		m := candidates[0].Member
		if chosen[m.ID] == nil {
			chosen[m.ID] = &counting{member: m}
			work = append(work, chosen[m.ID])
		}
		owner[i] = chosen[m.ID]
		if plan.byToken {
			owner[i].ranges = append(owner[i].ranges, rg.Range)
		}
	}
	if plan.byToken {
		for _, w := range work {
			w.spans = []replica.Span{{From: 0, To: math.MaxUint64}}
		}
	}
	for _, s := range plan.segments {
		owner[s.rangeIndex].spans = append(owner[s.rangeIndex].spans, replica.Span{From: s.from, To: s.to})
	}

	var total KeyCount
	var failed error
	now := c.clock.Now()
	for {
		var active []*counting
		q := &quorum{self: c.view.Self().ID, workers: c.tasks}
		for _, w := range work {
			if len(w.spans) > 0 {
				q.groups = append(q.groups, newGroup(consistency.Requirement{Total: 1}, []target{{Member: w.member, group: len(active)}}))
				active = append(active, w)
			}
		}
		if len(active) == 0 {
			return total, nil
		}
		out, err := gather(ctx, q, func(m placement.Member, ts []target) (replica.KeysPage, error) {
			w := active[ts[0].group]
			req := replica.KeysRequest{Keyspace: plan.ks.Name, Spans: w.spans, Ranges: w.ranges, CountOnly: true, VisitMax: countPage, Now: now}
			return c.scanKeysReplica(ctx, m, req)
		}, func(ts []target, page replica.KeysPage) {
			w := active[ts[0].group]
			total.Keys += int64(page.Live)
			total.Expiring += int64(page.Expiring)
			for !page.Done && len(w.spans) > 0 && w.spans[0].To < page.Next {
				w.spans = w.spans[1:]
			}
			if page.Done || len(w.spans) == 0 {
				w.spans = nil
				return
			}
			if page.Next <= w.spans[0].From { // every walk visits a position: a replica misbehaves
				failed = fmt.Errorf("count keys of %s: replica %s stopped at position %d, before %d", plan.ks.Name, w.member.ID, page.Next, w.spans[0].From)
				return
			}
			w.spans[0].From = page.Next
		})
		switch {
		case failed != nil:
			return KeyCount{}, failed
		case err != nil:
			return KeyCount{}, &TimeoutError{Level: consistency.One, Required: consistency.Requirement{Total: 1}, Acked: out.acked, Cause: err}
		case !out.met:
			return KeyCount{}, fmt.Errorf("count keys: a replica failed (%v): %w", out.lastErr, ErrUnavailable)
		}
	}
}
