package coord

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/placement"
)

func candidate(id, dc string) target {
	return target{Member: placement.Member{ID: id, DC: dc}}
}

// TestTallySatisfiesAsRequirement checks that a gathering's per-DC tally judges a level
// as consistency.Requirement.Satisfied does over the same counts in a map.
func TestTallySatisfiesAsRequirement(t *testing.T) {
	rf := map[string]int{"a": 3, "b": 2}
	counts := []map[string]int{{}, {"a": 1}, {"b": 1}, {"a": 2}, {"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 3, "b": 2}, {"b": 2}, {"c": 4}}
	for _, level := range consistency.Levels() {
		required := level.Require(rf, "a")
		for _, acks := range counts {
			var tally dcTally
			for _, dc := range []string{"a", "b", "c"} {
				if n, ok := acks[dc]; ok {
					tally = tally.add(dc, n)
				}
			}
			if got, want := tally.satisfies(required), required.Satisfied(acks); got != want {
				t.Errorf("%v with %v: tally says %v, Requirement.Satisfied %v", level, acks, got, want)
			}
		}
	}
}

// TestGatherLocalOnlyAllocatesNoChannel checks that a gathering whose only request goes
// to this node makes it on the calling goroutine: no channel, no goroutine, only the
// slice of the targets asked.
func TestGatherLocalOnlyAllocatesNoChannel(t *testing.T) {
	ctx := context.Background()
	acked := 0
	allocs := testing.AllocsPerRun(100, func() {
		q := quorum{self: "n1", groups: []*group{newGroup(consistency.Requirement{Total: 1}, []target{candidate("n1", "a")})}}
		out, err := gather(ctx, &q, func(placement.Member, []target) (int, error) {
			return 1, nil
		}, func([]target, int) {})
		if err != nil || !out.met {
			t.Fatalf("gather = %+v, %v", out, err)
		}
		acked += out.acked
	})
	if acked == 0 {
		t.Fatal("the local replica was not asked")
	}
	// The quorum, its slice of groups, the group and its candidates, all made by the
	// test, and gather's slice of the targets asked.
	if allocs > 5 {
		t.Errorf("a local-only gathering made %v allocations, want at most 5", allocs)
	}
}

// TestGatherLocalFailureFailsOver checks that a local replica's failure is counted as
// any replica's: the next candidate, a remote one, is asked, and its answer meets the
// level.
func TestGatherLocalFailureFailsOver(t *testing.T) {
	q := &quorum{self: "n1", groups: []*group{newGroup(consistency.Requirement{Total: 1}, []target{candidate("n1", "a"), candidate("n2", "a"), candidate("n3", "b")})}}
	var mu sync.Mutex
	var asked []string
	failed := errors.New("storage closed")
	var accepted []string
	out, err := gather(context.Background(), q, func(m placement.Member, _ []target) (string, error) {
		mu.Lock()
		asked = append(asked, m.ID)
		mu.Unlock()
		if m.ID == "n1" {
			return "", failed
		}
		return m.ID, nil
	}, func(_ []target, v string) { accepted = append(accepted, v) })
	if err != nil || !out.met || out.acked != 1 || !errors.Is(out.lastErr, failed) {
		t.Fatalf("gather = %+v, %v; want met with one answer after the local failure", out, err)
	}
	if len(asked) != 2 || asked[0] != "n1" || asked[1] != "n2" || len(accepted) != 1 || accepted[0] != "n2" {
		t.Errorf("asked %v, accepted %v; want n1 then n2 asked, n2 accepted", asked, accepted)
	}
}

// TestGatherWriteReachesLocalAndRemote checks that a write to every replica (askAll)
// reaches the local replica and the remote ones, and that a level met by the local
// answer alone returns without waiting for a remote one that never answers.
func TestGatherWriteReachesLocalAndRemote(t *testing.T) {
	q := &quorum{self: "n1", askAll: true, groups: []*group{newGroup(consistency.Requirement{Total: 1}, []target{candidate("n1", "a"), candidate("n2", "a")})}}
	remoteAsked := make(chan struct{})
	block := make(chan struct{})
	defer close(block)
	localAsked := false
	out, err := gather(context.Background(), q, func(m placement.Member, _ []target) (struct{}, error) {
		if m.ID == "n1" {
			localAsked = true
			return struct{}{}, nil
		}
		close(remoteAsked)
		<-block
		return struct{}{}, nil
	}, func([]target, struct{}) {})
	if err != nil || !out.met || out.acked != 1 || !localAsked {
		t.Fatalf("gather = %+v, %v, local asked %v; want met by the local answer", out, err, localAsked)
	}
	<-remoteAsked // the remote replica gets the write too
}

// TestGatherRemoteTimeoutEndsWithCtx checks that a level that needs a remote replica
// still ends with the caller's context when that replica does not answer, after the
// local answer was counted.
func TestGatherRemoteTimeoutEndsWithCtx(t *testing.T) {
	q := &quorum{self: "n1", askAll: true, groups: []*group{newGroup(consistency.Requirement{Total: 2}, []target{candidate("n1", "a"), candidate("n2", "a")})}}
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	out, err := gather(ctx, q, func(m placement.Member, _ []target) (struct{}, error) {
		if m.ID == "n1" {
			cancel() // the client gives up once the local write is done
			return struct{}{}, nil
		}
		<-block
		return struct{}{}, nil
	}, func([]target, struct{}) {})
	if !errors.Is(err, context.Canceled) || out.met || out.acked != 1 {
		t.Fatalf("gather = %+v, %v; want the context's error with the local answer counted", out, err)
	}
}

// TestGatherEachGroupEndsOnItsOwn checks that with eachGroup a group that can no longer
// meet its requirement (its one replica, this node, failed) does not end the gathering
// while another group still waits for its answer, and that the outcome says not every
// group was met.
func TestGatherEachGroupEndsOnItsOwn(t *testing.T) {
	one := consistency.Requirement{Total: 1}
	failing, waiting := newGroup(one, []target{candidate("n1", "a")}), newGroup(one, []target{candidate("n2", "a")})
	waiting.candidates[0].group = 1
	q := &quorum{self: "n1", askAll: true, byNode: true, eachGroup: true, groups: []*group{failing, waiting}}
	failed := errors.New("storage closed")
	out, err := gather(context.Background(), q, func(m placement.Member, _ []target) (struct{}, error) {
		if m.ID == "n1" {
			return struct{}{}, failed // settled before the remote answer is read
		}
		return struct{}{}, nil
	}, func([]target, struct{}) {})
	if err != nil || out.met || !errors.Is(out.lastErr, failed) {
		t.Fatalf("gather = %+v, %v; want unmet, with the local failure", out, err)
	}
	if failing.met() || !waiting.met() {
		t.Errorf("failing group met %v, waiting group met %v; want only the waiting one met", failing.met(), waiting.met())
	}
}

// TestReadDuringMoveHearsPending: a read during a move asks the pending replicas that
// answer, on top of the level, as a write reaches them: a coordinator that has learned
// the move completed writes to the new replicas only, and one that has not reads the old
// ones (explorer seed 5692).
func TestReadDuringMoveHearsPending(t *testing.T) {
	c, _ := stubCoordinator(t, "a=1", "n1", "n2", "n3")
	owner := placement.Member{ID: "n1", DC: "a", State: cluster.StateUp}
	tests := []struct {
		name        string
		members     []placement.Member
		cl          consistency.Level
		wantAsked   []string
		wantRequire string
		wantMet     bool
	}{
		{name: "no move", members: []placement.Member{owner}, cl: consistency.LocalQuorum,
			wantAsked: []string{"n1"}, wantRequire: "1 (a: 1)", wantMet: true},
		{name: "joiner pending", cl: consistency.LocalQuorum,
			members:   []placement.Member{owner, {ID: "n2", DC: "a", State: cluster.StateJoining, Pending: true}},
			wantAsked: []string{"n1", "n2"}, wantRequire: "2 (a: 2)", wantMet: true},
		{name: "gainer of a leaving node pending", cl: consistency.One,
			members:   []placement.Member{{ID: "n1", DC: "a", State: cluster.StateLeaving}, {ID: "n2", DC: "a", State: cluster.StateUp, Pending: true}},
			wantAsked: []string{"n1", "n2"}, wantRequire: "2", wantMet: true},
		{name: "pending down: unavailable, as a write is", cl: consistency.LocalQuorum,
			members:   []placement.Member{owner, {ID: "n2", DC: "a", State: cluster.StateDown, Pending: true}},
			wantAsked: []string{"n1"}, wantRequire: "2 (a: 2)", wantMet: false},
		{name: "owner down: the pending alone does not meet the level", cl: consistency.LocalQuorum,
			members:   []placement.Member{{ID: "n1", DC: "a", State: cluster.StateDown}, {ID: "n2", DC: "a", State: cluster.StateJoining, Pending: true}},
			wantAsked: []string{"n2"}, wantRequire: "2 (a: 2)", wantMet: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			required := levelRequirement(tt.cl, tt.members, "a")
			asked := c.readable(nil, tt.members, 0, false)
			var ids []string
			for _, a := range asked {
				ids = append(ids, a.ID)
			}
			if !slices.Equal(ids, tt.wantAsked) {
				t.Errorf("asked %v, want %v", ids, tt.wantAsked)
			}
			if got := required.String(); got != tt.wantRequire {
				t.Errorf("requirement %s, want %s", got, tt.wantRequire)
			}
			if got := satisfiable(asked, required); got != tt.wantMet {
				t.Errorf("satisfiable %v, want %v", got, tt.wantMet)
			}
		})
	}
}
