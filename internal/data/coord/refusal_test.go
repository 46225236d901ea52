package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/replica/remote"
	"github.com/kuradb/kura/internal/io/transport"
)

// answeringCaller answers every request with a remote error of text msg, as the transport
// hands back a peer's handler error, and counts the requests.
type answeringCaller struct {
	msg   string
	calls *atomic.Int32
}

func (c answeringCaller) Call(context.Context, transport.Peer, transport.Kind, []byte) ([]byte, error) {
	if c.calls != nil {
		c.calls.Add(1)
	}
	return nil, &transport.RemoteError{Msg: c.msg}
}

// remoteAnswering returns node id's replica as a remote.Remote whose every request is
// answered with a remote error of text msg.
func remoteAnswering(id, msg string, calls *atomic.Int32) replica.Replica {
	return remote.NewSet("n1", nil, answeringCaller{msg: msg, calls: calls}).Replica(cluster.Node{ID: id, DC: "a"})
}

// notMemberText is a peer's refusal as the node's admission check words it.
func notMemberText(peer string) string {
	return fmt.Sprintf("not a member: node %s knows node n1 as left, and serves mutate only to members of its cluster", peer)
}

// TestReplicaRefusalsAreUnavailable checks that a level lost to replicas' refusals of
// this node (replica.ErrNotMember, as a peer's admission check sends it over the wire)
// is unavailable, with the refusals' reasons, and not a timeout: the replicas answered at
// once. A level that other failures lose too, where the refusals alone would have left
// it reachable, is still a timeout, as is a failure whose text merely quotes the words.
// (A refusal and a failure at ALL are left out: whichever is settled first decides.)
func TestReplicaRefusalsAreUnavailable(t *testing.T) {
	const (
		refuse = "refuse"
		fail   = "fail"
		quote  = "quote"
	)
	tests := []struct {
		name    string
		op      string // put, get or puteach
		level   consistency.Level
		answers map[string]string // how n2 and n3 answer; absent answers as a replica
		want    ErrorClass
	}{
		{"write at QUORUM, both peers refuse", "put", consistency.Quorum, map[string]string{"n2": refuse, "n3": refuse}, ClassUnavailable},
		{"write at ALL, one peer refuses", "put", consistency.All, map[string]string{"n2": refuse}, ClassUnavailable},
		{"write at QUORUM, a refusal and a failure", "put", consistency.Quorum, map[string]string{"n2": refuse, "n3": fail}, ClassTimeout},
		{"write at QUORUM, both peers fail", "put", consistency.Quorum, map[string]string{"n2": fail, "n3": fail}, ClassTimeout},
		{"write at QUORUM, failures quoting the words", "put", consistency.Quorum, map[string]string{"n2": quote, "n3": quote}, ClassTimeout},
		{"read at ALL, one peer refuses", "get", consistency.All, map[string]string{"n2": refuse}, ClassUnavailable},
		{"read at QUORUM, both peers refuse", "get", consistency.Quorum, map[string]string{"n2": refuse, "n3": refuse}, ClassUnavailable},
		{"read at QUORUM, both peers fail", "get", consistency.Quorum, map[string]string{"n2": fail, "n3": fail}, ClassTimeout},
		{"writes together at QUORUM, both peers refuse", "puteach", consistency.Quorum, map[string]string{"n2": refuse, "n3": refuse}, ClassUnavailable},
		{"writes together at QUORUM, a refusal and a failure", "puteach", consistency.Quorum, map[string]string{"n2": refuse, "n3": fail}, ClassTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
			parts.remotes = map[string]replica.Replica{}
			for id, answer := range tt.answers {
				msg := map[string]string{refuse: notMemberText(id), fail: "disk full", quote: "open /data/not a member: no such file"}[answer]
				parts.remotes[id] = remoteAnswering(id, msg, nil)
			}
			ctx := context.Background()
			var errs []error
			switch tt.op {
			case "put":
				_, err := c.Put(ctx, "ks", []byte("k"), []byte("v"), 0, tt.level)
				errs = append(errs, err)
			case "get":
				_, _, err := c.Get(ctx, "ks", []byte("k"), tt.level)
				errs = append(errs, err)
			case "puteach":
				for _, r := range c.PutEach(ctx, "ks", []lww.Record{{Key: []byte("k1"), Value: []byte("v")}, {Key: []byte("k2"), Value: []byte("v")}}, tt.level) {
					errs = append(errs, r.Err)
				}
			}
			for _, err := range errs {
				if got := Classify(err); got != tt.want {
					t.Fatalf("error %v is %v, want %v", err, got, tt.want)
				}
				if tt.want != ClassUnavailable {
					continue
				}
				var refused *RefusedError
				if !errors.As(err, &refused) {
					t.Fatalf("error %v (%T) is no *RefusedError", err, err)
				}
				for id, answer := range tt.answers {
					if want := "replica " + id + ": " + notMemberText(id); answer == refuse && !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not give %s's reason %q", err, id, want)
					}
				}
				if !strings.HasPrefix(err.Error(), "unavailable: ") || !strings.Contains(err.Error(), "send it to another node") {
					t.Errorf("error %q does not start with unavailable or say what to do", err)
				}
			}
		})
	}
}

// TestLeftNodeRefusesClientRequests checks that a coordinator whose node has left the
// ring, or was removed, refuses every client request at once as unavailable, asking no
// replica (whose peers would refuse it), and that a leaving node still serves.
func TestLeftNodeRefusesClientRequests(t *testing.T) {
	ctx := context.Background()
	keys := [][]byte{[]byte("k1"), []byte("k2")}
	records := []lww.Record{{Key: keys[0], Value: []byte("v")}, {Key: keys[1], Value: []byte("v")}}
	ops := []struct {
		name string
		run  func(c *Coordinator) []error
	}{
		{"put", func(c *Coordinator) []error {
			_, err := c.Put(ctx, "ks", keys[0], []byte("v"), 0, consistency.Quorum)
			return []error{err}
		}},
		{"delete", func(c *Coordinator) []error {
			_, err := c.Delete(ctx, "ks", keys[0], consistency.One)
			return []error{err}
		}},
		{"get", func(c *Coordinator) []error {
			_, _, err := c.Get(ctx, "ks", keys[0], consistency.One)
			return []error{err}
		}},
		{"serial get", func(c *Coordinator) []error {
			_, _, err := c.Get(ctx, "ks", keys[0], consistency.Serial)
			return []error{err}
		}},
		{"update", func(c *Coordinator) []error {
			_, err := c.Update(ctx, "ks", keys[0], consistency.Serial, func(lww.Record, bool) (lww.Record, bool, error) {
				return lww.Record{Key: keys[0], Value: []byte("v")}, true, nil
			})
			return []error{err}
		}},
		{"get all", func(c *Coordinator) []error {
			var errs []error
			for _, r := range c.GetAll(ctx, "ks", keys, consistency.One) {
				errs = append(errs, r.Err)
			}
			return errs
		}},
		{"put all", func(c *Coordinator) []error { return c.PutAll(ctx, "ks", records, consistency.One) }},
		{"put each", func(c *Coordinator) []error {
			var errs []error
			for _, r := range c.PutEach(ctx, "ks", records, consistency.One) {
				errs = append(errs, r.Err)
			}
			return errs
		}},
		{"scan", func(c *Coordinator) []error {
			_, err := c.Scan(ctx, "ks", nil, nil, 10, consistency.One)
			return []error{err}
		}},
		{"scan keys", func(c *Coordinator) []error {
			_, _, err := c.ScanKeys(ctx, "ks", 0, 10, consistency.One)
			return []error{err}
		}},
		{"count keys", func(c *Coordinator) []error {
			_, err := c.CountKeys(ctx, "ks")
			return []error{err}
		}},
	}
	for _, status := range []cluster.Status{cluster.StatusLeft, cluster.StatusRemoved} {
		for _, op := range ops {
			t.Run(status.String()+"/"+op.name, func(t *testing.T) {
				c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
				// Every replica, this node's included, is one that counts its requests:
				// none may be asked.
				var calls atomic.Int32
				parts.remotes = map[string]replica.Replica{}
				for _, id := range []string{"n1", "n2", "n3"} {
					parts.remotes[id] = remoteAnswering(id, notMemberText(id), &calls)
				}
				if err := c.view.(*cluster.Directory).SetSelf(status, nil); err != nil {
					t.Fatal(err)
				}
				for _, err := range op.run(c) {
					var left *LeftRingError
					if !errors.As(err, &left) || Classify(err) != ClassUnavailable {
						t.Fatalf("error %v (%T), want a *LeftRingError, unavailable", err, err)
					}
					if want := "this node has left the ring; send requests to another node"; !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if n := calls.Load(); n != 0 {
					t.Errorf("%d replica requests sent, want none", n)
				}
			})
		}
	}
	for _, status := range []cluster.Status{cluster.StatusNormal, cluster.StatusLeaving} {
		t.Run(status.String()+" still serves", func(t *testing.T) {
			c, _ := stubCoordinator(t, "a=3", "n1", "n2", "n3")
			if err := c.view.(*cluster.Directory).SetSelf(status, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Put(ctx, "ks", keys[0], []byte("v"), 0, consistency.Quorum); err != nil {
				t.Fatalf("put: %v", err)
			}
			if _, found, err := c.Get(ctx, "ks", keys[0], consistency.Quorum); err != nil || !found {
				t.Fatalf("get = %v, %v", found, err)
			}
		})
	}
}
