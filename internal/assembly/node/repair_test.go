package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
)

// TestRepairRPC gives node a records its replica b lacks, and repairs through the Admin
// API: b gets exactly those, and a second repair moves nothing but trees.
func TestRepairRPC(t *testing.T) {
	ctx := context.Background()
	b := startNode(t, "b", "dc1")
	a, err := Start(Config{
		ID: "a", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", InMemory: true,
		Peers: []cluster.Node{b.Self()}, Founding: true, GossipInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	// b serves a's repair requests once it knows a as a member, which gossip tells it.
	waitUntil(t, "b knows a", func() bool { _, known := b.View().Node("a"); return known })
	for _, n := range []*Node{b, a} {
		if err := n.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=2"}); err != nil {
			t.Fatal(err)
		}
	}
	var only []lww.Record // written to a alone, as if b had missed them
	for i := range 3 {
		only = append(only, lww.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v"), Timestamp: a.clock.Now()})
	}
	if err := a.local.Apply(ctx, "app", only); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(a.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := kurav1.NewAdminClient(conn)

	first, err := admin.Repair(ctx, &kurav1.RepairRequest{Keyspace: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if first.GetNode() != "a" || first.GetRanges() == 0 || first.GetRecordsSent() != 3 || first.GetRecordBytes() == 0 || first.GetFailed() != 0 {
		t.Fatalf("first repair: %v", first)
	}
	for _, r := range only {
		if _, found, err := b.local.Get(ctx, "app", r.Key); err != nil || !found {
			t.Fatalf("b lacks %s after the repair (%v)", r.Key, err)
		}
	}
	second, err := admin.Repair(ctx, &kurav1.RepairRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if second.GetRecordsSent() != 0 || second.GetRecordBytes() != 0 || second.GetTreeBytes() == 0 || second.GetKeyspaces() != 2 { // app and default
		t.Fatalf("repair of agreeing replicas: %v", second)
	}
	_, err = admin.Repair(ctx, &kurav1.RepairRequest{Keyspace: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("repair of an unknown keyspace: %v, want NotFound", err)
	}
}

// TestRepairBeforeTheRingIsLearned: issue 45, item 5. A joining node's first background
// repair pass starts at once, before the node has learned the ring from its seeds, and
// logged a WARN on every joiner. The pass is skipped with an INFO line while the node is
// young. Here the seed never answers, so the ring is never learned.
func TestRepairBeforeTheRingIsLearned(t *testing.T) {
	seed := startNode(t, "s", "dc1")
	addr := seed.Addr()
	seed.Close() // a seed that does not answer: the node learns no ring
	logged := &repairLog{}
	n, err := Start(Config{
		ID: "j", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", Seeds: []string{addr}, InMemory: true,
		RepairInterval: time.Hour, Logger: slog.New(logged),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	waitUntil(t, "the first repair pass", func() bool { return len(logged.repairLines()) > 0 })
	n.Close()
	for _, r := range logged.repairLines() {
		if r.Level != slog.LevelInfo || !strings.HasPrefix(r.Message, "background repair skipped: this node has not learned the ring yet") {
			t.Errorf("repair logged %v %q, want INFO: background repair skipped", r.Level, r.Message)
		}
	}
}

// repairLog is a slog handler that keeps the records about background repair.
type repairLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *repairLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *repairLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *repairLog) WithGroup(string) slog.Handler            { return h }
func (h *repairLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "repair") {
		h.mu.Lock()
		h.records = append(h.records, r)
		h.mu.Unlock()
	}
	return nil
}

func (h *repairLog) repairLines() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.records)
}
