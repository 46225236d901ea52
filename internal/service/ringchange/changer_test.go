package ringchange

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/ring"
)

// parts are a Changer's parts with no node behind them: gossip and streaming are
// recorded, peers refuse every call.
type parts struct {
	// promised is the KeyJoinPromised every member gossips ("" for none).
	promised string
	// arbiters is the KeyJoinArbiter each member gossips (none when absent), streamed
	// its KeyJoinStreamed.
	arbiters     map[string]string
	streamed     map[string]string
	removed      []string
	excluded     []string
	replications []Replication
	// saved are the promises saved (Promises); saveErr and loadErr, when set, fail each
	// save and load.
	saved            map[string]uint64
	saveErr, loadErr error
	// log records each save of promises and each gossip of KeyJoinPromised, in order.
	log []string
	// moving is the keyspaces MovingKeyspaces names from its movingFrom-th call on (0:
	// never), so that a keyspace can start moving after a ring change started;
	// movingCalls counts the calls.
	moving                  []string
	movingFrom, movingCalls int
}

func (p *parts) SetRingStatus(cluster.Status, []uint64) {}
func (p *parts) SetAppState(key, value string) {
	if key == KeyJoinPromised {
		p.log = append(p.log, "gossip "+value)
	}
}
func (p *parts) MarkRemoving(cluster.Node, bool) {}
func (p *parts) MarkRemoved(dead cluster.Node)   { p.removed = append(p.removed, dead.ID) }
func (p *parts) Generation() uint64              { return 1 }
func (p *parts) Member(id string) (membership.Member, bool) {
	return membership.Member{ID: id, Generation: 1, AppState: map[string]string{KeyJoinPromised: p.promised, KeyJoinArbitration: "1", KeyJoinArbiter: p.arbiters[id], KeyJoinStreamed: p.streamed[id]}}, true
}
func (p *parts) Gainers() ([]string, error)           { return nil, nil }
func (p *parts) Replications() ([]Replication, error) { return p.replications, nil }
func (p *parts) MovingKeyspaces() []string {
	p.movingCalls++
	if p.movingFrom == 0 || p.movingCalls < p.movingFrom {
		return nil
	}
	return p.moving
}
func (p *parts) PullRing(context.Context, cluster.Node) ([]byte, error) {
	return nil, context.DeadlineExceeded
}
func (p *parts) StreamGains(context.Context, cluster.Node, []byte) ([]byte, error) {
	return nil, context.DeadlineExceeded
}
func (p *parts) WaitingFor() []string { return nil }

func (p *parts) SavePromises(marks map[string]uint64) error {
	if p.saveErr != nil {
		return p.saveErr
	}
	p.saved = maps.Clone(marks)
	p.log = append(p.log, "save "+FormatMarks(marks))
	return nil
}
func (p *parts) LoadPromises() (map[string]uint64, error) { return maps.Clone(p.saved), p.loadErr }

func (p *parts) Gain(_ context.Context, exclude string) (Stats, error) {
	p.excluded = append(p.excluded, exclude)
	return Stats{Ranges: 2, Records: 3, Bytes: 40, CrossDCBytes: 5}, nil
}

// newChanger returns node a's changer over a directory holding others, of which only
// the ids in up are reachable.
func newChanger(t *testing.T, others []cluster.Node, up ...string) (*Changer, *cluster.Directory, *parts) {
	t.Helper()
	dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "x", Status: cluster.StatusNormal})
	for _, n := range others {
		if _, err := dir.Upsert(n); err != nil {
			t.Fatal(err)
		}
		// A node first heard of is presumed up until gossip's verdict.
		if !slices.Contains(up, n.ID) {
			dir.SetState(n.ID, cluster.StateDown)
		}
	}
	p := &parts{}
	c, err := New(Config{ID: "a", GossipInterval: time.Second}, Parts{Directory: dir, Gossip: p, Peers: p, Streamer: p, Moves: p, Promises: p})
	if err != nil {
		t.Fatal(err)
	}
	return c, dir, p
}

func TestMarks(t *testing.T) {
	tests := []struct {
		name  string
		marks map[string]uint64
		text  string
	}{
		{"none", map[string]uint64{}, ""},
		{"sorted by id", map[string]uint64{"n2": 7, "n10": 3}, "n10@3,n2@7"},
	}
	for _, tt := range tests {
		if got := FormatMarks(tt.marks); got != tt.text {
			t.Errorf("%s: FormatMarks = %q, want %q", tt.name, got, tt.text)
		}
		if got := ParseMarks(tt.text); !maps.Equal(got, tt.marks) {
			t.Errorf("%s: ParseMarks(%q) = %v, want %v", tt.name, tt.text, got, tt.marks)
		}
	}
	if got, want := ParseMarks("n1@4,n2,n3@x,@9"), map[string]uint64{"n1": 4, "": 9}; !maps.Equal(got, want) {
		t.Errorf("ParseMarks skipping malformed entries = %v, want %v", got, want)
	}
}

// TestHandleRingPull: a ring pull answers every entry of the directory, this node's
// included, with its liveness.
func TestHandleRingPull(t *testing.T) {
	c, _, _ := newChanger(t, []cluster.Node{{ID: "b", DC: "x", Status: cluster.StatusNormal}, {ID: "c", DC: "y", Status: cluster.StatusLeaving}}, "b")
	raw, err := c.HandleRingPull()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := cluster.DecodeRing(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range entries {
		got[e.ID+":"+e.Status.String()] = e.Up
	}
	want := map[string]bool{"a:normal": true, "b:normal": true, "c:leaving": false}
	if !maps.Equal(got, want) {
		t.Errorf("ring pulled = %v, want %v", got, want)
	}
}

// TestHandleStreamGains: a gainer streams only once its own view shows the move, and
// never from a removed node, which it is told to exclude.
func TestHandleStreamGains(t *testing.T) {
	c, _, p := newChanger(t, []cluster.Node{{ID: "b", DC: "x", Status: cluster.StatusNormal}, {ID: "c", DC: "x", Status: cluster.StatusLeaving}})
	ask := func(moving string, exclude bool) ([]byte, error) {
		req, err := proto.Marshal(&kurav1.StreamGainsRequest{Moving: moving, Exclude: exclude})
		if err != nil {
			t.Fatal(err)
		}
		return c.HandleStreamGains(context.Background(), req)
	}
	if _, err := ask("b", false); err == nil || err.Error() != "node a does not see b leaving yet" {
		t.Errorf("asked to stream from a normal node: err %v", err)
	}
	if _, err := ask("d", false); err == nil {
		t.Error("asked to stream from an unknown node: no error")
	}
	for _, exclude := range []bool{false, true} {
		raw, err := ask("c", exclude)
		if err != nil {
			t.Fatal(err)
		}
		var resp kurav1.StreamGainsResponse
		if err := proto.Unmarshal(raw, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.GetRanges() != 2 || resp.GetRecords() != 3 || resp.GetBytes() != 40 || resp.GetCrossDcBytes() != 5 {
			t.Errorf("answer %v, want the streamer's counts", &resp)
		}
	}
	if want := []string{"", "c"}; !slices.Equal(p.excluded, want) {
		t.Errorf("streamed excluding %q, want %q", p.excluded, want)
	}
}

// TestRemoveNodeAbortsADeadJoiner: a dead joiner owned nothing yet, so its removal
// streams nothing and marks it removed at once, when this node may decide on its join:
// it names no arbiter, or this node as its arbiter, which did not promise it, or an
// arbiter that is no member any more (or, with force, down). A promised join is never
// aborted, another arbiter that is up decides alone, and a join whose claim this node
// has not heard in the joiner's generation is left alone; each refusal says why and
// what to do.
func TestRemoveNodeAbortsADeadJoiner(t *testing.T) {
	tests := []struct {
		name         string
		arbiter      string // the joiner j's claim
		generation   uint64 // j's generation in the directory; gossip holds 1
		promised     string // what every member gossips as promised
		selfPromised bool   // this node, a, holds j's join promised
		force        bool
		refused      string // "" when removed
	}{
		{name: "no arbiter (older builds)", generation: 1},
		{name: "this node arbitrates, no promise", arbiter: "a", generation: 1},
		{name: "this node promised", arbiter: "a", generation: 1, selfPromised: true, refused: "promised its join"},
		{name: "arbiter up promised", arbiter: "b", generation: 1, promised: "j@1", refused: "promised its join"},
		{name: "arbiter up promised, force", arbiter: "b", generation: 1, promised: "j@1", force: true, refused: "promised its join"},
		{name: "arbiter up decides", arbiter: "b", generation: 1, refused: "run node remove j through b"},
		{name: "arbiter promised an older life", arbiter: "b", generation: 1, promised: "j@0", refused: "run node remove j through b"},
		{name: "arbiter down", arbiter: "d", generation: 1, refused: "run node remove --force j"},
		{name: "arbiter down, force", arbiter: "d", generation: 1, force: true},
		{name: "arbiter removed", arbiter: "r", generation: 1},
		{name: "arbiter unknown to this node", arbiter: "zz", generation: 1, refused: "run node remove --force j"},
		{name: "claim not heard in this generation", arbiter: "a", generation: 2, refused: "has not heard yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, p := newChanger(t, []cluster.Node{
				{ID: "b", DC: "x", Status: cluster.StatusNormal},
				{ID: "d", DC: "x", Status: cluster.StatusNormal},
				{ID: "r", DC: "x", Status: cluster.StatusRemoved},
				{ID: "j", DC: "x", Status: cluster.StatusJoining, Generation: tt.generation},
			}, "b")
			p.arbiters, p.promised = map[string]string{"j": tt.arbiter}, tt.promised
			if tt.selfPromised {
				c.joins.promised = map[string]uint64{"j": tt.generation}
			}
			st, err := c.RemoveNode(context.Background(), "j", tt.force)
			switch {
			case tt.refused == "" && err != nil:
				t.Fatal(err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused) || !errors.Is(err, ErrBadMove)):
				t.Fatalf("err %v, want a refusal saying %q", err, tt.refused)
			case tt.refused != "" && len(p.removed) != 0:
				t.Fatalf("refused, yet marked removed %q", p.removed)
			case tt.refused == "" && (len(st.Gainers) != 0 || len(p.excluded) != 0 || !slices.Equal(p.removed, []string{"j"})):
				t.Errorf("removal of a dead joiner: stats %+v, streamed %q, marked removed %q; want nothing streamed, j removed", st, p.excluded, p.removed)
			}
		})
	}
}

// TestRemoveNodeShortOfReplicas: the removal of a dead node that would leave its DC with
// fewer nodes than a keyspace's replication there is refused, saying so, and removes
// nothing; with force it goes on.
func TestRemoveNodeShortOfReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, p := newChanger(t, []cluster.Node{{ID: "b", DC: "x", Status: cluster.StatusNormal}})
		strategy, err := ring.ParseReplication("x=2")
		if err != nil {
			t.Fatal(err)
		}
		p.replications = []Replication{{Keyspace: "app", Strategy: strategy}}
		_, err = c.RemoveNode(context.Background(), "b", false)
		if !errors.Is(err, ErrBadMove) || !strings.Contains(err.Error(), "--force") || len(p.removed) != 0 {
			t.Fatalf("removal leaving x one node for x=2: %v, marked removed %q; want a refusal naming --force, nothing removed", err, p.removed)
		}
		if _, err := c.RemoveNode(context.Background(), "b", true); err != nil || !slices.Equal(p.removed, []string{"b"}) {
			t.Errorf("forced removal: %v, marked removed %q; want b removed", err, p.removed)
		}
	})
}

// TestDecommissionRefusedShortOfReplicas: a decommission that would leave its DC with
// fewer nodes than a keyspace's replication there is refused before anything moves (the
// node stays normal); with force it goes on and the node leaves.
func TestDecommissionRefusedShortOfReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, dir, p := newChanger(t, []cluster.Node{{ID: "b", DC: "y", Status: cluster.StatusNormal}}, "b")
		p.replications = replications(t, "app=x=1,y=1")
		_, err := c.Decommission(context.Background(), false)
		if !errors.Is(err, ErrBadMove) || !strings.Contains(err.Error(), "--force") || dir.Self().Status != cluster.StatusNormal {
			t.Fatalf("decommission leaving x no node for x=1: %v, status %s; want a refusal naming --force, still normal", err, dir.Self().Status)
		}
		if _, err := c.Decommission(context.Background(), true); err != nil || dir.Self().Status != cluster.StatusLeft {
			t.Errorf("forced decommission: %v, status %s; want it left", err, dir.Self().Status)
		}
	})
}

// TestRingChangesWaitForKeyspaceMoves: a decommission or a removal does not start
// while a keyspace moves (its streams would follow the current placement only), saying
// which and how to end it; one that sees a keyspace start moving a ring delay after it
// announced itself gives way (the mover, seeing it, gives way too), and the node stays
// normal, the dead node on the ring. With no keyspace moving, each completes.
func TestRingChangesWaitForKeyspaceMoves(t *testing.T) {
	tests := []struct {
		name       string
		remove     bool // remove the dead node d, else decommission a
		movingFrom int  // MovingKeyspaces' call from which app moves; 0 never
		want       error
		says       string
	}{
		{name: "decommission, nothing moves"},
		{name: "decommission while app moves", movingFrom: 1, want: ErrBadMove,
			says: "keyspace app is moving (a rebalance or kura keyspace alter; a ring change streams under the current placement only): wait until it completes, or, if none runs any more, end it with kura keyspace alter app --settle"},
		{name: "decommission, app starts moving with it", movingFrom: 2, want: ErrOverlap, says: "it started at the same time as a keyspace's move"},
		{name: "removal, nothing moves", remove: true},
		{name: "removal while app moves", remove: true, movingFrom: 1, want: ErrBadMove, says: "end it with kura keyspace alter app --settle"},
		{name: "removal, app starts moving with it", remove: true, movingFrom: 2, want: ErrOverlap, says: "run it again once the keyspace no longer moves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, dir, p := newChanger(t, []cluster.Node{{ID: "b", DC: "x", Status: cluster.StatusNormal}, {ID: "d", DC: "x", Status: cluster.StatusNormal}}, "b")
				p.moving, p.movingFrom = []string{"app"}, tt.movingFrom
				var err error
				if tt.remove {
					_, err = c.RemoveNode(context.Background(), "d", false)
				} else {
					_, err = c.Decommission(context.Background(), false)
				}
				done := dir.Self().Status == cluster.StatusLeft || slices.Contains(p.removed, "d")
				switch {
				case tt.want == nil && (err != nil || !done):
					t.Fatalf("err %v, status %s, removed %q; want it done", err, dir.Self().Status, p.removed)
				case tt.want != nil && (!errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says)):
					t.Fatalf("err %v; want %v saying %q", err, tt.want, tt.says)
				case tt.want != nil && (dir.Self().Status != cluster.StatusNormal || len(p.removed) != 0):
					t.Errorf("refused, yet status %s, removed %q; want a normal, nothing removed", dir.Self().Status, p.removed)
				}
			})
		})
	}
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	p := &parts{}
	all := Parts{Directory: cluster.NewDirectory(cluster.Node{ID: "a"}), Gossip: p, Peers: p, Streamer: p, Moves: p, Promises: p}
	tests := []struct {
		name  string
		cfg   Config
		parts Parts
	}{
		{"no id", Config{GossipInterval: time.Second}, all},
		{"no gossip interval", Config{ID: "a"}, all},
		{"no streamer", Config{ID: "a", GossipInterval: time.Second}, Parts{Directory: all.Directory, Gossip: p, Peers: p, Moves: p}},
		{"no store of promises", Config{ID: "a", GossipInterval: time.Second}, Parts{Directory: all.Directory, Gossip: p, Peers: p, Streamer: p, Moves: p}},
		{"promises that cannot be read", Config{ID: "a", GossipInterval: time.Second}, Parts{Directory: all.Directory, Gossip: p, Peers: p, Streamer: p, Moves: p, Promises: &parts{loadErr: errors.New("disk error")}}},
		{"a join aborted after less than six ring delays", Config{ID: "a", GossipInterval: time.Second, AbortJoinAfter: 29 * time.Second}, all},
		{"a negative abort-join-after", Config{ID: "a", GossipInterval: time.Second, AbortJoinAfter: -time.Minute}, all},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg, tt.parts); err == nil {
			t.Errorf("%s: New accepted it", tt.name)
		}
	}
	c, err := New(Config{ID: "a", GossipInterval: time.Second}, all)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.RingDelay(), RingDelayRounds*time.Second; got != want {
		t.Errorf("default ring delay %v, want %d gossip rounds (%v)", got, RingDelayRounds, want)
	}
}

// blockingStreamer is a Streamer whose pulls last until released, or until their context
// ends; it counts them.
type blockingStreamer struct {
	parts
	pulls   int
	release chan struct{}
	ended   chan error
}

func (s *blockingStreamer) Gain(ctx context.Context, _ string) (Stats, error) {
	s.pulls++
	select {
	case <-s.release:
		return Stats{Ranges: 4}, nil
	case <-ctx.Done():
		s.ended <- ctx.Err()
		return Stats{}, ctx.Err()
	}
}

// TestGainsAreSharedByTheRequestsForAMove: a request to stream that ends (the mover's
// timeout, when an answer is slow) leaves its pull going; the mover's next request joins
// that pull instead of starting a second, and gets its result. A pull no request has
// waited for in streamAskTimeout is canceled (the mover gave up, or the node closes).
func TestGainsAreSharedByTheRequestsForAMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "x", Status: cluster.StatusNormal})
		s := &blockingStreamer{release: make(chan struct{}), ended: make(chan error, 1)}
		c, err := New(Config{ID: "a", GossipInterval: time.Second}, Parts{Directory: dir, Gossip: s, Peers: s, Streamer: s, Moves: s, Promises: s})
		if err != nil {
			t.Fatal(err)
		}
		first, cancel := context.WithCancel(context.Background())
		answered := make(chan error, 1)
		go func() {
			_, err := c.gainFor(first, "m", "")
			answered <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-answered; err == nil {
			t.Fatal("the first request, ended, answered no error")
		}
		go func() {
			st, err := c.gainFor(context.Background(), "m", "")
			if err == nil && st.Ranges != 4 {
				err = fmt.Errorf("stats %+v", st)
			}
			answered <- err
		}()
		synctest.Wait()
		close(s.release)
		if err := <-answered; err != nil || s.pulls != 1 {
			t.Fatalf("the second request = %v after %d pulls; want the first pull's result", err, s.pulls)
		}

		s.release = make(chan struct{})
		abandoned, cancel := context.WithCancel(context.Background())
		go func() {
			_, err := c.gainFor(abandoned, "m", "")
			answered <- err
		}()
		synctest.Wait()
		cancel()
		<-answered
		time.Sleep(c.streamAskTimeout())
		synctest.Wait()
		select {
		case err := <-s.ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the abandoned pull ended with %v", err)
			}
		default:
			t.Errorf("a pull no request waits for is still going after %v", c.streamAskTimeout())
		}
	})
}

// settlingMove is a keyspace app moving until settled, and a streamer counting its
// pulls, safe to share between the test and the changer's goroutine.
type settlingMove struct {
	*parts
	settled atomic.Bool
	pulls   atomic.Int32
}

func (m *settlingMove) MovingKeyspaces() []string {
	if m.settled.Load() {
		return nil
	}
	return []string{"app"}
}

func (m *settlingMove) Gain(context.Context, string) (Stats, error) {
	m.pulls.Add(1)
	return Stats{}, nil
}

// A rebuilding node streams only once no keyspace moves: its streaming follows the
// current placement, and the move's copy may have reached it before it lost its data.
func TestRebuildWaitsForKeyspaceMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "x", Status: cluster.StatusRebuilding})
		m := &settlingMove{parts: &parts{}}
		c, err := New(Config{ID: "a", GossipInterval: time.Second}, Parts{Directory: dir, Gossip: m, Peers: m, Streamer: m, Moves: m, Promises: m})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan bool)
		go func() {
			normal, err := c.gainThenNormal(context.Background(), "rebuilt", "")
			if err != nil {
				t.Errorf("gainThenNormal: %v", err)
			}
			done <- normal
		}()
		time.Sleep(10 * c.RingDelay())
		synctest.Wait()
		if pulls, st := m.pulls.Load(), dir.Self().Status; pulls != 0 || st != cluster.StatusRebuilding {
			t.Fatalf("while app moves: %d pulls, status %s; want none, rebuilding", pulls, st)
		}
		m.settled.Store(true)
		if normal := <-done; !normal || m.pulls.Load() != 1 || dir.Self().Status != cluster.StatusNormal {
			t.Fatalf("after the move: normal %v, %d pulls, status %s; want one pull, then normal", normal, m.pulls.Load(), dir.Self().Status)
		}
	})
}
