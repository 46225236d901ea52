package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/replica/replicatest"
	"github.com/kuradb/kura/internal/io/storage"
)

// scanRecorder is a replica that keeps the scan requests it is sent, and fails them
// while failing is set.
type scanRecorder struct {
	replica.Replica

	mu      sync.Mutex
	asked   []replica.ScanRequest
	failing bool
}

func (r *scanRecorder) Scan(ctx context.Context, req replica.ScanRequest) ([]lww.Record, error) {
	r.mu.Lock()
	r.asked = append(r.asked, req)
	failing := r.failing
	r.mu.Unlock()
	if failing {
		return nil, errors.New("replica down")
	}
	return r.Replica.Scan(ctx, req)
}

type recorders map[string]*scanRecorder

// distances puts the nodes at fixed distances, so that every range's candidates come in
// one order.
type distances map[string]time.Duration

func (d distances) Distance(node string) time.Duration { return d[node] }

func (rs recorders) Replica(n cluster.Node) replica.Replica { return rs[n.ID] }

// take returns and forgets each node's scan requests since the last take, as
// "node:values" or "node:digest", by node in id order, each node's in the order sent.
func (rs recorders) take() []string {
	var out []string
	for _, id := range []string{"n1", "n2", "n3"} {
		r := rs[id]
		r.mu.Lock()
		for _, req := range r.asked {
			form := "values"
			if req.Digest {
				form = "digest"
			}
			out = append(out, id+":"+form)
		}
		r.asked = nil
		r.mu.Unlock()
	}
	return out
}

// A QUORUM scan reads values from one replica and digests from the other; when a digest
// tells of a newer live version the round is read again with values from both, so the
// scan answers the newest versions as a scan of values alone does. A replica that fails
// leaves digests alone, and the scan still answers.
func TestScanReadsDigestsFromTheSecondReplica(t *testing.T) {
	c, _ := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	nodes := recorders{}
	engines := map[string]*storage.Engine{}
	for _, id := range []string{"n1", "n2", "n3"} {
		local, engine := replicatest.NewLocal(t, "ks")
		nodes[id], engines[id] = &scanRecorder{Replica: local}, engine
	}
	c.replicas = nodes
	c.proximity = distances{"n1": 0, "n2": time.Millisecond, "n3": 2 * time.Millisecond}
	put := func(ids []string, key, value string, ts hlc.Timestamp, tombstone bool) {
		t.Helper()
		r := lww.Record{Key: []byte(key), Timestamp: ts, Tombstone: tombstone}
		if !tombstone {
			r.Value = []byte(value)
		}
		for _, id := range ids {
			if _, err := engines[id].Apply("ks", r); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := []string{"n1", "n2", "n3"}
	for i := range 20 {
		put(all, fmt.Sprintf("k%02d", i), "old", 10, false)
	}
	ctx := context.Background()
	scan := func(level consistency.Level) string {
		t.Helper()
		recs, err := c.Scan(ctx, "ks", nil, nil, 0, level)
		if err != nil {
			t.Fatalf("scan at %v: %v", level, err)
		}
		var s string
		for _, r := range recs {
			s += fmt.Sprintf("%s=%s ", r.Key, r.Value)
		}
		return s
	}
	want := func(changes map[string]string) string {
		var s string
		for i := range 20 {
			key := fmt.Sprintf("k%02d", i)
			value, changed := changes[key]
			switch {
			case !changed:
				s += key + "=old "
			case value != "":
				s += key + "=" + value + " "
			}
		}
		return s
	}

	// The nearest node answers values, the others digests.
	for _, tt := range []struct {
		level consistency.Level
		asked string
	}{
		{consistency.One, "[n1:values]"},
		{consistency.Quorum, "[n1:values n2:digest]"},
		{consistency.All, "[n1:values n2:digest n3:digest]"},
	} {
		if got := scan(tt.level); got != want(nil) {
			t.Fatalf("scan at %v = %s, want %s", tt.level, got, want(nil))
		}
		if asked := fmt.Sprint(nodes.take()); asked != tt.asked {
			t.Fatalf("scan at %v asked %s, want %s", tt.level, asked, tt.asked)
		}
	}
	valuesFrom, digestFrom := "n1", "n2"

	put([]string{digestFrom}, "k05", "new", 11, false)
	if got, w := scan(consistency.Quorum), want(map[string]string{"k05": "new"}); got != w {
		t.Fatalf("a newer value on the digest's replica: scan = %s, want %s", got, w)
	}
	if asked := fmt.Sprint(nodes.take()); asked != "[n1:values n1:values n2:digest n2:values]" {
		t.Fatalf("a newer value on the digest's replica: asked %v, want a round of values and digests, then one of values alone", asked)
	}
	if n := c.ScanRereads(); n != 1 {
		t.Fatalf("ScanRereads = %d after one round read again, want 1", n)
	}
	put(all, "k05", "new", 11, false)

	put([]string{digestFrom}, "k07", "", 12, true)
	if got, w := scan(consistency.Quorum), want(map[string]string{"k05": "new", "k07": ""}); got != w {
		t.Fatalf("a newer tombstone on the digest's replica: scan = %s, want %s", got, w)
	}
	if asked := nodes.take(); len(asked) != 2 {
		t.Fatalf("a newer tombstone on the digest's replica: asked %v, want one round: a tombstone needs no value", asked)
	}

	put([]string{valuesFrom}, "k09", "newer", 13, false)
	if got, w := scan(consistency.Quorum), want(map[string]string{"k05": "new", "k07": "", "k09": "newer"}); got != w {
		t.Fatalf("a newer value on the values' replica: scan = %s, want %s", got, w)
	}
	if asked := nodes.take(); len(asked) != 2 {
		t.Fatalf("a newer value on the values' replica: asked %v, want one round", asked)
	}

	put(all, "k09", "newer", 13, false)
	nodes[valuesFrom].failing = true
	if got, w := scan(consistency.Quorum), want(map[string]string{"k05": "new", "k07": "", "k09": "newer"}); got != w {
		t.Fatalf("the values' replica down: scan = %s, want %s", got, w)
	}
	if asked := fmt.Sprint(nodes.take()); asked != "[n1:values n1:values n2:digest n2:values n3:digest n3:values]" {
		t.Fatalf("the values' replica down: asked %v, want values from n1 (failing), digests from n2 and n3, then values from all", asked)
	}
	if n := c.ScanRereads(); n != 2 {
		t.Fatalf("ScanRereads = %d after two rounds read again, want 2", n)
	}
}
