package placement

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/routing"
)

// DHT places data with a DHT router (chord, mlchord): a key's owner is found by lookup,
// and its further replicas are the owner's successors, taken per DC when the keyspace's
// strategy counts replicas per DC. Scans and whole-cluster reads use the view's ring:
// with one token per node at the DHT's own positions (vnodes 1), it is the DHT's ring.
type DHT struct {
	router routing.Router
	view   cluster.View
	ring   *Ring
}

// NewDHT returns the DHT placement over router; ring is the view's ring (vnodes 1).
func NewDHT(router routing.Router, view cluster.View, ring *Ring) *DHT {
	return &DHT{router: router, view: view, ring: ring}
}

// Replicas looks the owner of key's token under the keyspace's partitioner up and walks
// its successors for the strategy's replicas.
func (d *DHT) Replicas(ctx context.Context, ks schema.Keyspace, key []byte, buf []Member) ([]Member, error) {
	token := ks.Partition().Token(key)
	route, err := d.router.Lookup(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoRoute, err)
	}
	want := ks.Strategy().Wants
	taken := map[string]int{}
	chosen := map[string]bool{}
	out := buf[:0]
	take := func(id, dc string) {
		if chosen[id] || !want(dc, taken[dc], len(out)) {
			return
		}
		chosen[id] = true
		taken[dc]++
		out = append(out, Member{ID: id, DC: dc, State: d.view.State(id)})
	}
	for _, id := range append([]string{route.Owner}, route.Successors...) {
		n, ok := d.view.Node(id)
		if !ok {
			return nil, fmt.Errorf("%w: routing named node %s, unknown to the directory", ErrNoRoute, id)
		}
		take(n.ID, n.DC)
	}
	// The successor list may be too short for the strategy (a DC far along the ring, or
	// Each, which wants every DC): go on along the view's ring, which is the DHT's ring.
	// take refuses whom the strategy does not want, so the walk is cheap next to a lookup.
	r, err := d.ring.Ring()
	if err != nil {
		return nil, err
	}
	r.Walk(token, func(m ring.Member) bool {
		take(m.ID, m.DC)
		return true
	})
	return out, nil
}

// ChunkOwners looks every chunk key's hash token up, all at once, whatever the
// keyspace's partitioner, as Ring.ChunkOwners places them.
func (d *DHT) ChunkOwners(ctx context.Context, _ schema.Keyspace, chunkKeys [][]byte) ([]Member, error) {
	owners := make([]Member, len(chunkKeys))
	errs := make([]error, len(chunkKeys))
	var wg sync.WaitGroup
	for i, key := range chunkKeys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			route, err := d.router.Lookup(ctx, ring.HashPartitioner().Token(key))
			if err != nil {
				errs[i] = fmt.Errorf("%w: route chunk %d: %v", ErrNoRoute, i, err)
				return
			}
			n, ok := d.view.Node(route.Owner)
			if !ok {
				errs[i] = fmt.Errorf("%w: routing named node %s for chunk %d, unknown to the directory", ErrNoRoute, route.Owner, i)
				return
			}
			owners[i] = Member{ID: n.ID, DC: n.DC, State: d.view.State(n.ID)}
		}()
	}
	wg.Wait()
	return owners, errors.Join(errs...)
}

// ScanRanges reads the view's ring, which is the DHT's.
func (d *DHT) ScanRanges(ctx context.Context, ks schema.Keyspace, start, end []byte) ([]RangeReplicas, error) {
	return d.ring.ScanRanges(ctx, ks, start, end)
}

// Members returns every node on the view's ring.
func (d *DHT) Members(ctx context.Context) ([]Member, error) { return d.ring.Members(ctx) }
