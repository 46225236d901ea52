package ringchange

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
)

func TestJoinArbiter(t *testing.T) {
	tests := []struct {
		name string
		v    view
		want string
	}{
		{"the smallest alive normal node of the joiner's DC", ringOf([]string{"a", "b", "c", "j"}, "a:normal@dc1", "b:normal@dc2", "c:normal@dc2", "j:booting@dc2"), "b"},
		{"a dead one is passed over", ringOf([]string{"a", "c", "j"}, "a:normal@dc1", "b:normal@dc2", "c:normal@dc2", "j:booting@dc2"), "c"},
		{"none normal and alive in its DC: any DC's", ringOf([]string{"a", "c", "j"}, "a:normal@dc1", "b:normal@dc2", "c:leaving@dc2", "j:booting@dc2"), "a"},
		{"nor a joining or rebuilding one", ringOf([]string{"a", "b", "c", "j"}, "a:joining@dc1", "b:rebuilding@dc1", "c:normal@dc2", "j:booting@dc1"), "c"},
		{"none at all", ringOf([]string{"j"}, "a:normal@dc1", "j:booting@dc1"), ""},
		{"only one that arbitrates (an older build does not)", ringOf([]string{"a", "old", "j"}, "a:normal@dc2", "old:normal@dc1", "j:booting@dc1"), "a"},
		{"none that arbitrates: unarbitrated", ringOf([]string{"old", "j"}, "old:normal@dc1", "j:booting@dc1"), ""},
	}
	arbitrates := func(id string) bool { return id != "old" }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JoinArbiter(tt.v, "j", arbitrates); got != tt.want {
				t.Errorf("JoinArbiter = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestJoinWatch plays an arbiter's rounds: what it promises and what it aborts, given
// each round's view of the joiner j (generation 1 unless said) and what j gossips.
func TestJoinWatch(t *testing.T) {
	const after = 5 * time.Minute
	type round struct {
		at               time.Duration // since the first round
		up               bool          // gossip holds j alive
		status           cluster.Status
		gen              uint64
		arbiter          string // j's KeyJoinArbiter
		streamed         bool
		promise, abort   bool // what the round decides about j
		promisedAfterall bool // whether j@gen is promised after the round
	}
	joining, normal := cluster.StatusJoining, cluster.StatusNormal
	tests := []struct {
		name   string
		after  time.Duration
		rounds []round
	}{
		{"a dead joiner is aborted after the bound, not before", after, []round{
			{at: 0, status: joining, arbiter: "a"},
			{at: after - time.Second, status: joining, arbiter: "a"},
			{at: after, status: joining, arbiter: "a", abort: true}}},
		{"seen alive meanwhile: the bound starts again", after, []round{
			{at: 0, status: joining, arbiter: "a"},
			{at: time.Minute, up: true, status: joining, arbiter: "a"},
			{at: 2 * time.Minute, status: joining, arbiter: "a"},
			{at: 2*time.Minute + after - time.Second, status: joining, arbiter: "a"},
			{at: 2*time.Minute + after, status: joining, arbiter: "a", abort: true}}},
		{"another node's joiner is not this one's to abort", after, []round{
			{at: 0, status: joining, arbiter: "b"},
			{at: time.Hour, status: joining, arbiter: "b"}}},
		{"a joiner that named no arbiter (an older build) is never aborted", after, []round{
			{at: 0, status: joining},
			{at: time.Hour, status: joining}}},
		{"an alive joiner that has streamed is promised, once", after, []round{
			{at: 0, up: true, status: joining, arbiter: "a"},
			{at: time.Second, up: true, status: joining, arbiter: "a", streamed: true, promise: true, promisedAfterall: true},
			{at: 2 * time.Second, up: true, status: joining, arbiter: "a", streamed: true, promisedAfterall: true}}},
		{"a dead joiner that has streamed is not promised", after, []round{
			{at: 0, status: joining, arbiter: "a", streamed: true},
			{at: after, status: joining, arbiter: "a", streamed: true, abort: true}}},
		{"a promised joiner that dies is never aborted: it may have turned normal already", after, []round{
			{at: 0, up: true, status: joining, arbiter: "a", streamed: true, promise: true, promisedAfterall: true},
			{at: time.Second, status: joining, arbiter: "a", streamed: true, promisedAfterall: true},
			{at: time.Hour, status: joining, arbiter: "a", streamed: true, promisedAfterall: true}}},
		{"a promise holds for its generation only: restarted, it is promised again, or aborted", after, []round{
			{at: 0, up: true, status: joining, gen: 1, arbiter: "a", streamed: true, promise: true, promisedAfterall: true},
			{at: time.Second, status: joining, gen: 2, arbiter: "a"},
			{at: time.Second + after, status: joining, gen: 2, arbiter: "a", abort: true}}},
		{"normal once promised: the promise is dropped", after, []round{
			{at: 0, up: true, status: joining, arbiter: "a", streamed: true, promise: true, promisedAfterall: true},
			{at: time.Second, up: true, status: normal, arbiter: "a"}}},
		{"no bound: never aborted", 0, []round{
			{at: 0, status: joining, arbiter: "a"},
			{at: time.Hour, status: joining, arbiter: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w JoinWatch
			start := time.Unix(1000, 0)
			for _, r := range tt.rounds {
				gen := max(r.gen, 1)
				v := view{Up: map[string]bool{"a": true, "j": r.up}, Members: []cluster.Node{
					{ID: "a", Status: cluster.StatusNormal}, {ID: "j", Status: r.status, Generation: gen}}}
				claims := map[string]JoinClaim{"j": {Arbiter: r.arbiter, Streamed: r.streamed}}
				promise, abort := w.Arbitrate(v, "a", claims, start.Add(r.at), tt.after)
				if got := len(promise) == 1 && promise[0].ID == "j"; got != r.promise || len(promise) > 1 {
					t.Errorf("at %v: promised %v, want j: %v", r.at, promise, r.promise)
				}
				if got := len(abort) == 1 && abort[0].ID == "j"; got != r.abort || len(abort) > 1 {
					t.Errorf("at %v: aborted %v, want j: %v", r.at, abort, r.abort)
				}
				if got := w.Promised(cluster.Node{ID: "j", Generation: gen}); got != r.promisedAfterall {
					t.Errorf("at %v: j@%d promised %v, want %v", r.at, gen, got, r.promisedAfterall)
				}
			}
		})
	}
}

// TestJoinAborted: a joiner that has streamed waits for its arbiter's promise, and once
// it learns that its join was aborted (it is removed), returns ErrJoinAborted, which the
// server exits on, and never turns normal.
func TestJoinAborted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := cluster.NewDirectory(cluster.Node{ID: "j", DC: "dc1", Status: cluster.StatusBooting})
		if _, err := dir.Upsert(cluster.Node{ID: "a", DC: "dc1", Status: cluster.StatusNormal, Tokens: []uint64{1}}); err != nil {
			t.Fatal(err)
		}
		p := &parts{} // a never promises
		c, err := New(Config{ID: "j", Fresh: true, Seeded: true, GossipInterval: time.Second}, Parts{Directory: dir, Gossip: p, Peers: p, Streamer: p, Moves: p, Promises: p})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Join(t.Context()) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		if st := dir.Self().Status; st != cluster.StatusJoining {
			t.Fatalf("status %s after streaming with no promise, want joining", st)
		}
		c.RemovedSelf("a")
		err = <-done
		if !errors.Is(err, ErrJoinAborted) || !strings.Contains(err.Error(), "wipe its data dir") {
			t.Errorf("Join = %v, want ErrJoinAborted saying to wipe the data dir", err)
		}
		if st := dir.Self().Status; st != cluster.StatusRemoved {
			t.Errorf("status %s, want removed", st)
		}
	})
}

// TestJoinWatchRestored: an arbiter restarted with the marks it saved keeps its
// promises: it never aborts a promised joiner that is dead, nor promises it twice, and
// drops a mark only once it is spent (the joiner normal in that generation, departed,
// or known under a newer generation), never for a joiner it does not know or knows only
// under an older generation.
func TestJoinWatchRestored(t *testing.T) {
	const after = 5 * time.Minute
	joining := cluster.StatusJoining
	tests := []struct {
		name   string
		marks  map[string]uint64 // saved before the restart
		j      cluster.Node      // j in the restarted arbiter's view; zero: unknown
		up     bool              // gossip holds j alive
		abort  bool              // aborted after the bound
		kept   bool              // j@1 still promised after the rounds
		remark string            // the marks left, as FormatMarks writes them
	}{
		{"a dead promised joiner is never aborted", map[string]uint64{"j": 1},
			cluster.Node{ID: "j", Status: joining, Generation: 1}, false, false, true, "j@1"},
		{"an alive promised joiner is not promised twice", map[string]uint64{"j": 1},
			cluster.Node{ID: "j", Status: joining, Generation: 1}, true, false, true, "j@1"},
		{"nothing saved: a dead joiner is aborted", nil,
			cluster.Node{ID: "j", Status: joining, Generation: 1}, false, true, false, ""},
		{"a promise of another generation does not cover this one", map[string]uint64{"j": 0},
			cluster.Node{ID: "j", Status: joining, Generation: 1}, false, true, false, ""},
		{"normal in that generation: spent", map[string]uint64{"j": 1},
			cluster.Node{ID: "j", Status: cluster.StatusNormal, Generation: 1}, true, false, false, ""},
		{"removed: spent", map[string]uint64{"j": 1},
			cluster.Node{ID: "j", Status: cluster.StatusRemoved, Generation: 1}, false, false, false, ""},
		{"left: spent", map[string]uint64{"j": 1},
			cluster.Node{ID: "j", Status: cluster.StatusLeft, Generation: 1}, false, false, false, ""},
		{"known under an older generation: kept", map[string]uint64{"j": 2},
			cluster.Node{ID: "j", Status: joining, Generation: 1}, false, true, false, "j@2"},
		{"unknown to the view: kept", map[string]uint64{"j": 1},
			cluster.Node{}, false, false, true, "j@1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewJoinWatch(tt.marks)
			members := []cluster.Node{{ID: "a", Status: cluster.StatusNormal}}
			if tt.j.ID != "" {
				members = append(members, tt.j)
			}
			v := view{Up: map[string]bool{"a": true, "j": tt.up}, Members: members}
			claims := map[string]JoinClaim{"j": {Arbiter: "a", Streamed: true}}
			start := time.Unix(1000, 0)
			var promised, aborted []cluster.Node
			for _, at := range []time.Duration{0, after, 2 * after} {
				promise, abort := w.Arbitrate(v, "a", claims, start.Add(at), after)
				promised, aborted = append(promised, promise...), append(aborted, abort...)
			}
			if len(promised) != 0 && !tt.up {
				t.Errorf("promised %v, a dead joiner", promised)
			}
			if len(promised) != 0 && tt.marks["j"] == 1 && tt.j.Status == joining {
				t.Errorf("promised %v again", promised)
			}
			if got := len(aborted) > 0; got != tt.abort {
				t.Errorf("aborted %v, want j aborted: %v", aborted, tt.abort)
			}
			if got := w.Promised(cluster.Node{ID: "j", Generation: 1}); got != tt.kept {
				t.Errorf("j@1 promised %v, want %v", got, tt.kept)
			}
			if got := FormatMarks(w.Marks()); got != tt.remark {
				t.Errorf("marks %q, want %q", got, tt.remark)
			}
		})
	}
}

// TestArbitrateJoinsKeepsPromisesOverARestart: a changer started over the promises its
// last life saved gossips them again and never aborts their dead joiner; a new promise
// is saved before it is gossiped, and one that cannot be saved is not gossiped.
func TestArbitrateJoinsKeepsPromisesOverARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "x", Status: cluster.StatusNormal})
		for _, n := range []cluster.Node{
			{ID: "j", DC: "x", Status: cluster.StatusJoining, Generation: 1},
			{ID: "k", DC: "x", Status: cluster.StatusJoining, Generation: 1},
		} {
			if _, err := dir.Upsert(n); err != nil {
				t.Fatal(err)
			}
		}
		dir.SetState("j", cluster.StateDown)
		p := &parts{saved: map[string]uint64{"j": 1}, arbiters: map[string]string{"j": "a", "k": "a"}}
		c, err := New(Config{ID: "a", GossipInterval: time.Second}, Parts{Directory: dir, Gossip: p, Peers: p, Streamer: p, Moves: p, Promises: p})
		if err != nil {
			t.Fatal(err)
		}
		c.ArbitrateJoins(t.Context())
		time.Sleep(DefaultAbortJoinAfter + time.Minute)
		c.ArbitrateJoins(t.Context())
		if want := []string{"gossip j@1"}; !slices.Equal(p.log, want) || len(p.removed) != 0 {
			t.Fatalf("restarted: %q, removed %q; want %q, nothing removed", p.log, p.removed, want)
		}

		p.saveErr = errors.New("disk full")
		p.streamed = map[string]string{"k": "1"}
		c.ArbitrateJoins(t.Context())
		if len(p.log) != 1 || c.JoinsPromised()["k"] != 0 {
			t.Fatalf("k promised with its save failing: %q, gossiped %v; want nothing gossiped", p.log, c.JoinsPromised())
		}
		p.saveErr = nil
		c.ArbitrateJoins(t.Context())
		if want := []string{"gossip j@1", "save j@1,k@1", "gossip j@1,k@1"}; !slices.Equal(p.log, want) {
			t.Errorf("k promised: %q, want %q", p.log, want)
		}
	})
}
