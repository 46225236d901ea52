package ringchange

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/cluster/clustertest"
	"github.com/kuradb/kura/internal/core/ring"
)

// view is a directory in a table: its members, and which are up.
type view = clustertest.View

// ringOf builds a view from "id:status" entries, each with ">replaced" or "@dc" after
// it if it says so; the ids in up are reachable.
func ringOf(up []string, entries ...string) view {
	v := view{Up: map[string]bool{}}
	for _, id := range up {
		v.Up[id] = true
	}
	for _, e := range entries {
		e, dc, _ := strings.Cut(e, "@")
		id, status, _ := strings.Cut(e, ":")
		status, replaces, _ := strings.Cut(status, ">")
		st, err := cluster.ParseStatus(status)
		if err != nil {
			panic(err)
		}
		v.Members = append(v.Members, cluster.Node{ID: id, DC: dc, Status: st, Replaces: replaces})
	}
	return v
}

func TestNoMoves(t *testing.T) {
	tests := []struct {
		name   string
		v      view
		except []string
		want   string // the error's text, "" for none
	}{
		{"all normal", ringOf([]string{"a", "b"}, "a:normal", "b:normal"), nil, ""},
		{"a joiner up: wait", ringOf([]string{"a", "b"}, "a:normal", "b:joining"), nil,
			"invalid ring change: node b is joining; wait until it completes"},
		{"a dead leaver: the way out", ringOf([]string{"a"}, "a:normal", "b:leaving"), nil,
			"invalid ring change: node b is leaving and down, so its move cannot complete: start it again, or end the move with kura node remove b"},
		{"the node's own move does not count", ringOf([]string{"a", "b"}, "a:joining", "b:normal"), []string{"a"}, ""},
		{"rebuilding and booting are no moves", ringOf([]string{"a", "b"}, "a:rebuilding", "b:booting"), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NoMoves(tt.v, tt.except...)
			if got := errText(err); got != tt.want {
				t.Errorf("NoMoves = %q, want %q", got, tt.want)
			}
			if err != nil && !errors.Is(err, ErrBadMove) {
				t.Errorf("%v is not ErrBadMove", err)
			}
		})
	}
}

func TestNoKeyspaceMoves(t *testing.T) {
	tests := []struct {
		name   string
		moving []string
		want   string // the error's text, "" for none
	}{
		{"none moves", nil, ""},
		{"one moves: wait, or settle it", []string{"app"},
			"invalid ring change: keyspace app is moving (a rebalance or kura keyspace alter; a ring change streams under the current placement only): wait until it completes, or, if none runs any more, end it with kura keyspace alter app --settle"},
		{"two move: both named", []string{"app", "logs"},
			"invalid ring change: keyspaces app, logs are moving (a rebalance or kura keyspace alter; a ring change streams under the current placement only): wait until it completes, or, if none runs any more, end it with kura keyspace alter app --settle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NoKeyspaceMoves(tt.moving)
			if got := errText(err); got != tt.want {
				t.Errorf("NoKeyspaceMoves = %q, want %q", got, tt.want)
			}
			if err != nil && !errors.Is(err, ErrBadMove) {
				t.Errorf("%v is not ErrBadMove", err)
			}
		})
	}
}

func TestOverlap(t *testing.T) {
	v := ringOf([]string{"n1", "n5", "n6"}, "n1:normal", "n5:joining", "n6:joining")
	tests := []struct {
		name, mover, self, want string
	}{
		{"the smaller id goes on", "n5", "n5", ""},
		{"the larger id yields", "n6", "n6", "overlapping ring change: node n5 is joining too, and goes first"},
		{"a removal run by n1 of n7 yields to both", "n7", "n1", "overlapping ring change: node n5 is joining too, and goes first"},
		{"a removal run by n1 of n2 goes first", "n2", "n1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(Overlap(v, tt.mover, tt.self)); got != tt.want {
				t.Errorf("Overlap(%s, %s) = %q, want %q", tt.mover, tt.self, got, tt.want)
			}
		})
	}
}

func TestContend(t *testing.T) {
	tests := []struct {
		name        string
		v           view
		mover, self string
		wait        bool
		want        string // the error's text, "" for none
	}{
		{"alone: go on", ringOf([]string{"n1", "n3"}, "n1:normal", "n3:leaving"), "n3", "n3", false, ""},
		{"two leaving: the smaller id waits for the other to give way", ringOf([]string{"n3", "n4"}, "n3:leaving", "n4:leaving"), "n3", "n3", true, ""},
		{"two leaving: the larger id gives way", ringOf([]string{"n3", "n4"}, "n3:leaving", "n4:leaving"), "n4", "n4", false,
			"overlapping ring change: node n3 is leaving too, and goes first; run it again once that one completes"},
		{"a joiner of a larger id gives way", ringOf([]string{"n3", "n9"}, "n3:leaving", "n9:joining"), "n3", "n3", true, ""},
		{"a removal of n2 run by n1 waits for n3", ringOf([]string{"n1", "n3"}, "n1:normal", "n2:leaving", "n3:leaving"), "n2", "n1", true, ""},
		{"a removal of n7 run by n1 gives way to n3", ringOf([]string{"n1", "n3"}, "n1:normal", "n3:leaving", "n7:leaving"), "n7", "n1", false,
			"overlapping ring change: node n3 is leaving too, and goes first; run it again once that one completes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, err := Contend(tt.v, tt.mover, tt.self)
			if got := errText(err); wait != tt.wait || got != tt.want {
				t.Errorf("Contend(%s, %s) = %v, %q; want %v, %q", tt.mover, tt.self, wait, got, tt.wait, tt.want)
			}
			if err != nil && !errors.Is(err, ErrOverlap) {
				t.Errorf("%v is not ErrOverlap", err)
			}
		})
	}
}

func TestAhead(t *testing.T) {
	v := ringOf([]string{"n2", "n3", "n5"}, "n1:normal", "n2:booting", "n3:booting", "n4:booting", "n5:booting")
	// n4 is booting but down: nobody waits for it.
	for self, want := range map[string]int{"n2": 0, "n3": 1, "n5": 2} {
		if got := Ahead(v, self); got != want {
			t.Errorf("Ahead(%s) = %d, want %d", self, got, want)
		}
	}
}

func TestYieldTo(t *testing.T) {
	tests := []struct {
		name       string
		v          view
		waitingFor []string
		want       string // the error's text, "" for none
	}{
		{"a replacement of the dead holder waits: yield",
			ringOf([]string{"n2", "n6", "n7"}, "n1:normal", "n2:normal", "n6:joining", "n7:booting>n1"), []string{"n1"},
			"the join gives way to a replacement: node n7 waits to replace n1, which is down and holds ranges this join streams"},
		{"waiting for nobody: go on",
			ringOf([]string{"n2", "n6", "n7"}, "n1:normal", "n2:normal", "n6:joining", "n7:booting>n1"), nil, ""},
		{"a replacement of another node: go on",
			ringOf([]string{"n6", "n7"}, "n1:normal", "n2:normal", "n6:joining", "n7:booting>n2"), []string{"n1"}, ""},
		{"the replacer is down: go on",
			ringOf([]string{"n2", "n6"}, "n1:normal", "n2:normal", "n6:joining", "n7:booting>n1"), []string{"n1"}, ""},
		{"the replaced node is up again: go on",
			ringOf([]string{"n1", "n2", "n6", "n7"}, "n1:normal", "n2:normal", "n6:joining", "n7:booting>n1"), []string{"n1"}, ""},
		{"the replacement already joins: go on, Overlap decides",
			ringOf([]string{"n2", "n6", "n7"}, "n1:normal", "n2:normal", "n6:joining", "n7:joining>n1"), []string{"n1"}, ""},
		{"the replaced node is off the ring: go on",
			ringOf([]string{"n2", "n6", "n7"}, "n1:removed", "n2:normal", "n6:joining", "n7:booting>n1"), []string{"n1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(YieldTo(tt.v, tt.waitingFor)); got != tt.want {
				t.Errorf("YieldTo(%v) = %q, want %q", tt.waitingFor, got, tt.want)
			}
		})
	}
}

func TestOtherReplacement(t *testing.T) {
	tests := []struct {
		name string
		v    view
		want string // the error's text, "" for none
	}{
		{"the only replacement", ringOf([]string{"a", "c"}, "a:normal", "b:normal", "c:booting>b"), ""},
		{"a dead one joining", ringOf([]string{"a", "c"}, "a:normal", "b:normal", "d:joining>b", "c:booting>b"),
			"replacement refused: node d replaces b already (it is joining and down): start d again and let it finish, or end its move with kura node remove d, then start this node again"},
		{"a booting one of a smaller id, up", ringOf([]string{"a", "a1", "c"}, "a:normal", "a1:booting>b", "b:normal", "c:booting>b"),
			"replacement refused: node a1 replaces b already (it is booting and up): start a1 again and let it finish, or end its move with kura node remove a1, then start this node again"},
		{"a booting one of a larger id goes after", ringOf([]string{"a", "c", "d"}, "a:normal", "b:normal", "c:booting>b", "e:booting>b"), ""},
		{"one that announced itself goes before", ringOf([]string{"a", "c", "d"}, "a:normal", "b:normal", "c:booting>b", "e:joining>b"),
			"replacement refused: node e replaces b already (it is joining and down): start e again and let it finish, or end its move with kura node remove e, then start this node again"},
		{"a joining one goes before one booting", ringOf([]string{"a", "c", "d"}, "a:normal", "b:normal", "c:joining>b", "a2:booting>b"), ""},
		{"a removed one is gone", ringOf([]string{"a", "c"}, "a:normal", "b:normal", "c:booting>b", "d:removed>b"), ""},
		{"one of another node", ringOf([]string{"a", "c", "d"}, "a:normal", "b:normal", "e:normal", "c:booting>b", "d:joining>e"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := OtherReplacement(tt.v, "c", "b")
			if got := errText(err); got != tt.want {
				t.Errorf("OtherReplacement = %q, want %q", got, tt.want)
			}
			if err != nil && !errors.Is(err, ErrReplaceRefused) {
				t.Errorf("%v is not ErrReplaceRefused", err)
			}
		})
	}
}

func TestRemoval(t *testing.T) {
	tests := []struct {
		name     string
		v        view
		self, id string
		want     Kind
		wantErr  string
	}{
		{"a dead normal node streams", ringOf([]string{"a"}, "a:normal", "b:normal"), "a", "b", Stream, ""},
		{"a dead leaver streams", ringOf([]string{"a"}, "a:normal", "b:leaving"), "a", "b", Stream, ""},
		{"a dead joiner is aborted, whatever else moves", ringOf([]string{"a", "c"}, "a:normal", "b:joining", "c:joining"), "a", "b", Abort, ""},
		{"a live joiner is refused", ringOf([]string{"a", "b"}, "a:normal", "b:joining"), "a", "b", 0,
			"invalid ring change: node b is up and joining; let it finish, or stop it and run node remove again to abort its join"},
		{"a live node is refused", ringOf([]string{"a", "b"}, "a:normal", "b:normal"), "a", "b", 0,
			"invalid ring change: node b is up; decommission it instead"},
		{"itself", ringOf([]string{"a"}, "a:normal"), "a", "a", 0, "invalid ring change: a node cannot remove itself; decommission it"},
		{"unknown", ringOf([]string{"a"}, "a:normal"), "a", "z", 0, "invalid ring change: node z is not in the cluster"},
		{"already removed", ringOf([]string{"a"}, "a:normal", "b:removed"), "a", "b", 0, "invalid ring change: node b is removed, not on the ring"},
		{"a dead node while another joins: wait", ringOf([]string{"a", "c"}, "a:normal", "b:normal", "c:joining"), "a", "b", 0,
			"invalid ring change: node c is joining; wait until it completes; if that join waits for b (its log says waiting_for), replace b instead (kura server --replace b): a join gives way to a replacement"},
		{"a dead node while another leaves: wait", ringOf([]string{"a", "c"}, "a:normal", "b:normal", "c:leaving"), "a", "b", 0,
			"invalid ring change: node c is leaving; wait until it completes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Removal(tt.v, tt.self, tt.id)
			if got != tt.want || errText(err) != tt.wantErr {
				t.Errorf("Removal = %v, %q; want %v, %q", got, errText(err), tt.want, tt.wantErr)
			}
		})
	}
}

func TestShortOfReplicas(t *testing.T) {
	twoDCs := ringOf([]string{"a", "c", "d"}, "a:normal@dc1", "b:normal@dc1", "c:normal@dc2", "d:normal@dc2", "e:normal@dc2")
	tests := []struct {
		name        string
		v           view
		id          string
		replication []string // keyspace=setting
		want        string   // the error's text, "" for none
	}{
		{"enough nodes left in the DC", twoDCs, "e", []string{"app=dc1=2,dc2=2"}, ""},
		{"the DC falls under its factor", twoDCs, "b", []string{"app=dc1=2,dc2=2"},
			"invalid ring change: removing b would leave dc1 with 1 node for keyspace app (dc1=2,dc2=2), which places 2 copies there: its ranges would keep 1 copy there until a node joins dc1. Replace b instead (start a new node with kura server --replace b), or run node remove --force to remove it anyway"},
		{"a keyspace that does not replicate to the DC", twoDCs, "b", []string{"other=dc2=3"}, ""},
		{"the first keyspace short is named", twoDCs, "b", []string{"fine=dc2=1", "short=dc1=2"},
			"invalid ring change: removing b would leave dc1 with 1 node for keyspace short (dc1=2), which places 2 copies there: its ranges would keep 1 copy there until a node joins dc1. Replace b instead (start a new node with kura server --replace b), or run node remove --force to remove it anyway"},
		{"each counts per DC", twoDCs, "b", []string{"default=each=2"},
			"invalid ring change: removing b would leave dc1 with 1 node for keyspace default (each=2), which places 2 copies there: its ranges would keep 1 copy there until a node joins dc1. Replace b instead (start a new node with kura server --replace b), or run node remove --force to remove it anyway"},
		{"simple counts the whole ring", twoDCs, "b", []string{"s=simple=4"}, ""},
		{"simple short", twoDCs, "b", []string{"s=simple=5"},
			"invalid ring change: removing b would leave the cluster with 4 nodes for keyspace s (simple=5), which places 5 copies there: its ranges would keep 4 copies there until a node joins the cluster. Replace b instead (start a new node with kura server --replace b), or run node remove --force to remove it anyway"},
		{"a DC already short loses one more: refused", ringOf([]string{"a"}, "a:normal@dc1", "b:normal@dc2"), "b", []string{"app=dc2=2"},
			"invalid ring change: removing b would leave dc2 with 0 nodes for keyspace app (dc2=2), which places 2 copies there: its ranges would keep 0 copies there until a node joins dc2. Replace b instead (start a new node with kura server --replace b), or run node remove --force to remove it anyway"},
		{"a joiner counts, a node gone does not", ringOf([]string{"a", "c"}, "a:normal@dc1", "b:normal@dc1", "c:joining@dc1", "d:left@dc1", "e:removed@dc1", "f:booting@dc1"), "b", []string{"app=dc1=2"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ShortOfReplicas(tt.v, tt.id, replications(t, tt.replication...))
			if got := errText(err); got != tt.want {
				t.Errorf("ShortOfReplicas = %q, want %q", got, tt.want)
			}
			if err != nil && !errors.Is(err, ErrBadMove) {
				t.Errorf("%v is not ErrBadMove", err)
			}
		})
	}
}

// replications parses keyspace=setting pairs, as "app=dc1=2,dc2=2".
func replications(t *testing.T, pairs ...string) []Replication {
	t.Helper()
	var keyspaces []Replication
	for _, r := range pairs {
		name, setting, _ := strings.Cut(r, "=")
		strategy, err := ring.ParseReplication(setting)
		if err != nil {
			t.Fatal(err)
		}
		keyspaces = append(keyspaces, Replication{Keyspace: name, Strategy: strategy})
	}
	return keyspaces
}

func TestDecommissionShortOfReplicas(t *testing.T) {
	// Explorer seed 6505: dc2's only node leaving dropped every range to one copy.
	seed6505 := ringOf([]string{"n1", "n2", "n3"}, "n1:normal@dc1", "n2:normal@dc1", "n3:normal@dc2")
	twoDCs := ringOf([]string{"a", "b", "c", "d"}, "a:normal@dc1", "b:normal@dc1", "c:normal@dc2", "d:normal@dc2")
	tests := []struct {
		name        string
		v           view
		id          string
		replication []string // keyspace=setting
		want        string   // the error's text, "" for none
	}{
		{"the DC's only node (seed 6505)", seed6505, "n3", []string{"app=dc1=1,dc2=1"},
			"invalid ring change: decommissioning n3 would leave dc2 with 0 nodes for keyspace app (dc1=1,dc2=1), which places 1 copy there: its ranges would keep 0 copies there until a node joins dc2. Add a node to dc2 first, or run kura node decommission --force to decommission it anyway"},
		{"a DC that keeps enough", seed6505, "n2", []string{"app=dc1=1,dc2=1"}, ""},
		{"a second node in the DC keeps it", twoDCs, "d", []string{"app=dc1=1,dc2=1"}, ""},
		{"the DC falls under its factor", twoDCs, "d", []string{"app=dc1=2,dc2=2"},
			"invalid ring change: decommissioning d would leave dc2 with 1 node for keyspace app (dc1=2,dc2=2), which places 2 copies there: its ranges would keep 1 copy there until a node joins dc2. Add a node to dc2 first, or run kura node decommission --force to decommission it anyway"},
		{"a keyspace that does not replicate to the DC", twoDCs, "d", []string{"app=dc1=2"}, ""},
		{"each counts per DC", ringOf([]string{"a", "b", "c"}, "a:normal@dc1", "b:normal@dc1", "c:normal@dc1"), "c", []string{"default=each=3"},
			"invalid ring change: decommissioning c would leave dc1 with 2 nodes for keyspace default (each=3), which places 3 copies there: its ranges would keep 2 copies there until a node joins dc1. Add a node to dc1 first, or run kura node decommission --force to decommission it anyway"},
		{"each with a fourth node", ringOf([]string{"a", "b", "c", "d"}, "a:normal@dc1", "b:normal@dc1", "c:normal@dc1", "d:normal@dc1"), "d", []string{"default=each=3"}, ""},
		{"simple counts the whole ring", twoDCs, "d", []string{"s=simple=3"}, ""},
		{"simple short", twoDCs, "d", []string{"s=simple=4"},
			"invalid ring change: decommissioning d would leave the cluster with 3 nodes for keyspace s (simple=4), which places 4 copies there: its ranges would keep 3 copies there until a node joins the cluster. Add a node to the cluster first, or run kura node decommission --force to decommission it anyway"},
		{"a down node still holds its copy", ringOf([]string{"a", "b", "c"}, "a:normal@dc1", "b:normal@dc1", "c:normal@dc2", "d:normal@dc2"), "c", []string{"app=dc1=1,dc2=2"},
			"invalid ring change: decommissioning c would leave dc2 with 1 node for keyspace app (dc1=1,dc2=2), which places 2 copies there: its ranges would keep 1 copy there until a node joins dc2. Add a node to dc2 first, or run kura node decommission --force to decommission it anyway"},
		{"a joiner counts, a node gone does not", ringOf([]string{"a", "b", "c"}, "a:normal@dc1", "b:normal@dc2", "c:joining@dc2", "d:left@dc2", "e:removed@dc2"), "b", []string{"app=dc2=1"}, ""},
		{"no replicated keyspace (erasure-coded ones are not counted)", seed6505, "n3", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DecommissionShortOfReplicas(tt.v, tt.id, replications(t, tt.replication...))
			if got := errText(err); got != tt.want {
				t.Errorf("DecommissionShortOfReplicas = %q, want %q", got, tt.want)
			}
			if err != nil && !errors.Is(err, ErrBadMove) {
				t.Errorf("%v is not ErrBadMove", err)
			}
		})
	}
}

func TestBootingWatch(t *testing.T) {
	const after = 30 * time.Second
	type step struct {
		at   time.Duration // since the first call
		v    view
		gone string // the ids Gone returns, comma-separated
	}
	deadBooting := ringOf([]string{"a"}, "a:normal", "b:booting")
	tests := []struct {
		name  string
		steps []step
	}{
		{"a dead booting node is forgotten after the bound, not before", []step{
			{0, deadBooting, ""}, {29 * time.Second, deadBooting, ""}, {30 * time.Second, deadBooting, "b"}}},
		{"an alive booting node never is", []step{
			{0, ringOf([]string{"a", "b"}, "a:normal", "b:booting"), ""},
			{time.Hour, ringOf([]string{"a", "b"}, "a:normal", "b:booting"), ""}}},
		{"a dead joiner never is: its tokens are claimed, its streams may be in flight", []step{
			{0, ringOf([]string{"a"}, "a:normal", "b:joining"), ""},
			{time.Hour, ringOf([]string{"a"}, "a:normal", "b:joining"), ""}}},
		{"nor a dead node that owns tokens", []step{
			{0, ringOf([]string{"a"}, "a:normal", "b:normal", "c:leaving", "d:rebuilding"), ""},
			{time.Hour, ringOf([]string{"a"}, "a:normal", "b:normal", "c:leaving", "d:rebuilding"), ""}}},
		{"seen alive meanwhile: the bound starts again", []step{
			{0, deadBooting, ""}, {20 * time.Second, ringOf([]string{"a", "b"}, "a:normal", "b:booting"), ""},
			{25 * time.Second, deadBooting, ""}, {54 * time.Second, deadBooting, ""}, {55 * time.Second, deadBooting, "b"}}},
		{"joining meanwhile, then booting again (it yielded): the bound starts again", []step{
			{0, deadBooting, ""}, {20 * time.Second, ringOf([]string{"a"}, "a:normal", "b:joining"), ""},
			{25 * time.Second, deadBooting, ""}, {54 * time.Second, deadBooting, ""}}},
		{"never self", []step{
			{0, ringOf(nil, "a:booting"), ""}, {time.Hour, ringOf(nil, "a:booting"), ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w BootingWatch
			start := time.Unix(1000, 0)
			for _, s := range tt.steps {
				if got := strings.Join(w.Gone(s.v, "a", start.Add(s.at), after), ","); got != s.gone {
					t.Errorf("at %v: Gone = %q, want %q", s.at, got, s.gone)
				}
			}
		})
	}
}

func TestLostData(t *testing.T) {
	const now = 100
	tests := []struct {
		name  string
		entry cluster.RingEntry
		want  bool
	}{
		{"an earlier life on the ring", entry(cluster.StatusNormal, 50), true},
		{"this life, normal: the first node of a new cluster", entry(cluster.StatusNormal, now), false},
		{"this life, held rebuilding: a member saw it come back empty", entry(cluster.StatusRebuilding, now), true},
		{"never gossiped (a topology file's)", entry(cluster.StatusNormal, 0), false},
		{"an earlier life that left", entry(cluster.StatusLeft, 50), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LostData(tt.entry, now); got != tt.want {
				t.Errorf("LostData = %v, want %v", got, tt.want)
			}
		})
	}
}

func entry(status cluster.Status, generation uint64) cluster.RingEntry {
	return cluster.RingEntry{Node: cluster.Node{ID: "a", Status: status, Generation: generation}}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
