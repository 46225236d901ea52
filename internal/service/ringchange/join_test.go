package ringchange

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
)

// lockedBuffer is a log sink the changer's goroutine and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestJoinOfAReplacement: a node started with --replace x whose replacement was refused
// logged why and stayed booting for ever, so its process never ended. Join now returns
// ErrReplaceRefused, which the server exits on, when waiting cannot help (x unknown, up,
// decommissioned or removed); it goes on waiting, and says every 30 s in the log what
// for, while another ring change is in progress; and with x down and nothing moving it
// replaces x. Virtual time: a gossip round is a second.
func TestJoinOfAReplacement(t *testing.T) {
	const moveWait = "waiting to join until a ring change in progress completes"
	tests := []struct {
		name    string
		x       *cluster.Node // the node to replace, as the ring has it; nil: unknown
		xUp     bool
		joiner  bool   // another node is joining, and up
		refused string // the refusal's text; "" for none
		waits   bool   // still waiting after 2 minutes, and saying so
	}{
		{name: "x unknown", refused: "node x is not in the cluster"},
		{name: "x up", x: &cluster.Node{ID: "x", Status: cluster.StatusNormal}, xUp: true, refused: "node x is up"},
		{name: "x decommissioned", x: &cluster.Node{ID: "x", Status: cluster.StatusLeft}, refused: "node x was decommissioned"},
		{name: "x removed", x: &cluster.Node{ID: "x", Status: cluster.StatusRemoved}, refused: "node x was removed"},
		{name: "x down, another node joining: waits", x: &cluster.Node{ID: "x", Status: cluster.StatusNormal}, joiner: true, waits: true},
		{name: "x down, nothing moving: replaced", x: &cluster.Node{ID: "x", Status: cluster.StatusNormal}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := cluster.NewDirectory(cluster.Node{ID: "r", DC: "dc1", Status: cluster.StatusBooting})
				others := []cluster.Node{{ID: "a", DC: "dc1", Status: cluster.StatusNormal, Tokens: []uint64{1}}}
				if tt.x != nil {
					x := *tt.x
					x.DC, x.Tokens = "dc1", []uint64{2}
					others = append(others, x)
				}
				if tt.joiner {
					others = append(others, cluster.Node{ID: "j", DC: "dc1", Status: cluster.StatusJoining, Tokens: []uint64{3}})
				}
				for _, n := range others {
					if _, err := dir.Upsert(n); err != nil {
						t.Fatal(err)
					}
				}
				if tt.x != nil && !tt.xUp {
					dir.SetState("x", cluster.StateDown)
				}
				var log lockedBuffer
				p := &parts{promised: "r@1"} // its arbiter, a, promises its join
				c, err := New(Config{ID: "r", Replace: "x", Fresh: true, Seeded: true, GossipInterval: time.Second,
					Logger: slog.New(slog.NewTextHandler(&log, nil))}, Parts{Directory: dir, Gossip: p, Peers: p, Streamer: p, Moves: p, Promises: p})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute+time.Second)
				defer cancel()
				err = c.Join(ctx)
				switch {
				case tt.refused != "":
					if !errors.Is(err, ErrReplaceRefused) || !strings.Contains(err.Error(), tt.refused) {
						t.Errorf("Join = %v, want ErrReplaceRefused saying %q", err, tt.refused)
					}
					if !strings.Contains(log.String(), tt.refused) {
						t.Errorf("the log does not say %q:\n%s", tt.refused, log.String())
					}
				case err != nil:
					t.Errorf("Join = %v, want no refusal", err)
				}
				if tt.waits && ctx.Err() == nil {
					t.Error("Join returned before its context ended; want it to wait")
				}
				// At 0, 30, 60, 90 and 120 s.
				if got := strings.Count(log.String(), moveWait); tt.waits && got != 5 {
					t.Errorf("the log says %d times that the join waits, want 5:\n%s", got, log.String())
				}
				if replaced := slices.Equal(p.removed, []string{"x"}); replaced != (tt.refused == "" && !tt.waits) {
					t.Errorf("marked removed %q; want x only when the replacement went through", p.removed)
				}
			})
		})
	}
}

// TestWaitForAMemberIsSaidOnlyWhenNeeded: a node that joins and hears of no member says
// every 30 s in the log what it waits for; the first node of a new cluster, which only
// listens for a member that might say it was one before (checkMembership), said the same
// warning every 30 s for ever, on every one-node cluster. Virtual time.
func TestWaitForAMemberIsSaidOnlyWhenNeeded(t *testing.T) {
	const wait = "waiting to learn the ring from a member"
	for _, tt := range []struct {
		name   string
		seeded bool
		says   int
	}{
		{name: "first node of a new cluster", seeded: false, says: 0},
		{name: "seeded joiner", seeded: true, says: 4}, // at 30, 60, 90 and 120 s
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// An empty store: the directory is trusted only once a member gave the ring.
				dir, err := cluster.Open(cluster.Node{ID: "r", DC: "dc1", Status: cluster.StatusBooting}, noStore{})
				if err != nil {
					t.Fatal(err)
				}
				var log lockedBuffer
				p := &parts{}
				c, err := New(Config{ID: "r", Fresh: true, Seeded: tt.seeded, GossipInterval: time.Second,
					Logger: slog.New(slog.NewTextHandler(&log, nil))}, Parts{Directory: dir, Gossip: p, Peers: p, Streamer: p, Moves: p, Promises: p})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute+time.Second)
				defer cancel()
				if !tt.seeded {
					dir.SetTrusted() // a seedless node trusts its directory as it opens
				}
				if err := c.Join(ctx); err != nil {
					t.Fatalf("Join = %v", err)
				}
				if got := strings.Count(log.String(), wait); got != tt.says {
					t.Errorf("the log says %d times %q, want %d:\n%s", got, wait, tt.says, log.String())
				}
			})
		})
	}
}

// noStore is a ring store that keeps nothing.
type noStore struct{}

func (noStore) SaveNode(cluster.Node) error    { return nil }
func (noStore) Nodes() ([]cluster.Node, error) { return nil, nil }
func (noStore) DeleteNode(string) error        { return nil }
