package feed

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/membership/ferry"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/membership/driver"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// A short gossip round speeds Ferry's clock up, but its probe and suspicion timeouts
// never become shorter in real time than detectionFloor; at a round of a second or more
// they are the defaults.
func TestFerryTimeoutsKeepARealTimeFloor(t *testing.T) {
	def := ferry.DefaultOptions
	for _, tc := range []struct {
		interval             time.Duration
		probe, suspect, wide time.Duration // in core time
	}{
		{0, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{time.Second, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{2 * time.Second, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{500 * time.Millisecond, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{200 * time.Millisecond, 1250 * time.Millisecond, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{50 * time.Millisecond, 5 * time.Second, 10 * time.Second, 10 * time.Second},
	} {
		opts := ferryOptionsAt(tc.interval)
		if opts.ProbeTimeout != tc.probe || opts.SuspectTimeout != tc.suspect || opts.RemoteProbeTimeout != tc.wide {
			t.Errorf("interval %v: probe %v, suspect %v, remote probe %v; want %v, %v, %v", tc.interval,
				opts.ProbeTimeout, opts.SuspectTimeout, opts.RemoteProbeTimeout, tc.probe, tc.suspect, tc.wide)
		}
		if tc.interval > 0 {
			scale := float64(membership.Round) / float64(tc.interval)
			if real := time.Duration(float64(opts.ProbeTimeout) / scale); real < detectionFloor {
				t.Errorf("interval %v: a probe stage lasts %v of real time, under %v", tc.interval, real, detectionFloor)
			}
		}
	}
}

func TestTokensRoundTrip(t *testing.T) {
	for _, tokens := range [][]uint64{nil, {0}, {1, 1 << 63, ^uint64(0)}} {
		got, err := parseTokens(formatTokens(tokens))
		if err != nil || len(got) != len(tokens) {
			t.Fatalf("parseTokens(formatTokens(%v)) = %v, %v", tokens, got, err)
		}
		for i := range tokens {
			if got[i] != tokens[i] {
				t.Fatalf("token %d: %d, want %d", i, got[i], tokens[i])
			}
		}
	}
	if _, err := parseTokens("12,x"); err == nil {
		t.Fatal("a malformed token list was accepted")
	}
}

// fakeDirectory records what the feed writes.
type fakeDirectory struct {
	self    cluster.Node
	nodes   map[string]cluster.Node
	states  map[string]cluster.State
	removed map[string]uint64
}

func (d *fakeDirectory) Self() cluster.Node { return d.self }
func (d *fakeDirectory) Node(id string) (cluster.Node, bool) {
	n, ok := d.nodes[id]
	return n, ok
}
func (d *fakeDirectory) Nodes() []cluster.Node { return slices.Collect(maps.Values(d.nodes)) }
func (d *fakeDirectory) Upsert(n cluster.Node) (bool, error) {
	d.nodes[n.ID] = n
	return true, nil
}
func (d *fakeDirectory) Remove(id string, generation uint64) (bool, error) {
	d.removed[id] = generation
	return true, nil
}
func (d *fakeDirectory) SetBorn(generation uint64) error {
	if d.self.Born == 0 {
		d.self.Born = generation
	}
	return nil
}
func (d *fakeDirectory) SetState(id string, state cluster.State) bool {
	changed := d.states[id] != state
	d.states[id] = state
	return changed
}

type fakeCatalog uint64

func (c fakeCatalog) Digest() uint64 { return uint64(c) }

// fakeObservers records the news passed on.
type fakeObservers struct {
	observed      map[string]bool // member: alive
	removedSelfBy []string
	schemaFrom    []string
}

func (o *fakeObservers) Observe(m membership.Member, alive bool) { o.observed[m.ID] = alive }
func (o *fakeObservers) RemovedSelf(by string)                   { o.removedSelfBy = append(o.removedSelfBy, by) }
func (o *fakeObservers) SchemaDiffers(from cluster.Node) {
	o.schemaFrom = append(o.schemaFrom, from.ID)
}

// fakeEndpoint names this node to the driver, which sends nothing before Start.
type fakeEndpoint struct{ transport.Endpoint }

func (fakeEndpoint) Self() transport.Peer { return transport.Peer{ID: "a", DC: "dc1", Addr: "a:1"} }

func newTestFeed(t *testing.T) (*Feed, *fakeDirectory, *fakeObservers) {
	t.Helper()
	dir := &fakeDirectory{self: cluster.Node{ID: "a", DC: "dc1", Addr: "a:1", Status: cluster.StatusNormal, Tokens: []uint64{1}},
		nodes: map[string]cluster.Node{}, states: map[string]cluster.State{}, removed: map[string]uint64{}}
	obs := &fakeObservers{observed: map[string]bool{}}
	f, err := New(Config{ID: "a", TierKey: "power_tier"}, Parts{Directory: dir, Catalog: fakeCatalog(0xab), Endpoint: fakeEndpoint{}, Observers: obs})
	if err != nil {
		t.Fatal(err)
	}
	return f, dir, obs
}

func member(id string, generation uint64, appState map[string]string) driver.Change {
	return driver.Change{Known: true, Member: membership.Member{ID: id, DC: "dc1", Addr: id + ":1", Generation: generation,
		Status: membership.Status(cluster.StatusNormal.String()), Alive: true, AppState: appState}}
}

// A member's gossiped entry becomes its directory entry and liveness; its news reach the
// observers.
func TestOnChangeMirrorsAMember(t *testing.T) {
	f, dir, obs := newTestFeed(t)
	f.onChange(member("b", 7, map[string]string{membership.KeyTokens: "5,9", KeyClientAddr: "b:2", "power_tier": "1", keySchema: "ab"}))
	got := dir.nodes["b"]
	if got.Status != cluster.StatusNormal || !slices.Equal(got.Tokens, []uint64{5, 9}) || got.ClientAddr != "b:2" || got.Tier != 1 || got.Generation != 7 {
		t.Fatalf("b recorded as %+v", got)
	}
	if dir.states["b"] != cluster.StateUp || !obs.observed["b"] {
		t.Fatalf("b: state %v, observed alive %v; want up, true", dir.states["b"], obs.observed["b"])
	}
	if len(obs.schemaFrom) != 0 {
		t.Fatalf("a schema pull from %v, though b gossips this node's digest", obs.schemaFrom)
	}
	f.onChange(member("c", 3, map[string]string{keySchema: "cd"}))
	if !slices.Equal(obs.schemaFrom, []string{"c"}) {
		t.Fatalf("schema pulls from %v, want c's", obs.schemaFrom)
	}
	// A member gossiping bad tokens is not recorded at all.
	f.onChange(member("d", 1, map[string]string{membership.KeyTokens: "1,x"}))
	_, recorded := dir.nodes["d"]
	_, stated := dir.states["d"]
	if recorded || stated {
		t.Fatalf("d recorded despite bad tokens: %+v, %v", dir.nodes["d"], dir.states["d"])
	}
}

// A member's removal marks: a node it removes is leaving, a node it removed is removed
// from the directory, and this node removed tells the observers.
func TestOnChangeAppliesRemovalMarks(t *testing.T) {
	f, dir, obs := newTestFeed(t)
	f.onChange(member("c", 5, nil))
	f.onChange(member("b", 7, map[string]string{ringchange.KeyRemoving: ringchange.FormatMarks(map[string]uint64{"c": 5})}))
	if st := dir.nodes["c"].Status; st != cluster.StatusLeaving {
		t.Fatalf("c, which b removes, is %v; want leaving", st)
	}
	f.onChange(member("b", 7, map[string]string{ringchange.KeyRemoving: ""}))
	if st := dir.nodes["c"].Status; st != cluster.StatusNormal {
		t.Fatalf("c, which b no longer removes, is %v; want normal", st)
	}
	f.onChange(member("b", 7, map[string]string{ringchange.KeyRemoved: ringchange.FormatMarks(map[string]uint64{"c": 5, "a": 1})}))
	if gen, ok := dir.removed["c"]; !ok || gen != 5 {
		t.Fatalf("c's removal applied as %v, %v; want generation 5", gen, ok)
	}
	if !slices.Equal(obs.removedSelfBy, []string{"b"}) {
		t.Fatalf("this node's removal told as by %v, want b", obs.removedSelfBy)
	}
}

// A member the directory holds removed is recorded removed again, whatever it says,
// while it runs on the data dir the removal covers; one whose data dir was begun since
// (wiped and started again) is a new node, with the status it gossips. A build that
// gossips no born generation is judged by whether it is new (booting, new data).
func TestOnChangeKeepsARemovedDataDirRemoved(t *testing.T) {
	tests := []struct {
		name    string
		born    string // KeyBorn; "" gossips none
		status  cluster.Status
		newData bool
		want    cluster.Status
	}{
		{"restarted on its data dir", "5", cluster.StatusJoining, false, cluster.StatusRemoved},
		{"restarted on its data dir, booting after a yield", "5", cluster.StatusBooting, false, cluster.StatusRemoved},
		{"restarted, born before the removed life", "3", cluster.StatusNormal, false, cluster.StatusRemoved},
		{"wiped and started again", "9", cluster.StatusBooting, true, cluster.StatusBooting},
		{"wiped, a later life of the new data dir", "9", cluster.StatusNormal, false, cluster.StatusNormal},
		{"older build, restarted", "", cluster.StatusJoining, false, cluster.StatusRemoved},
		{"older build, wiped", "", cluster.StatusBooting, true, cluster.StatusBooting},
		{"bad born counts as unknown", "x", cluster.StatusJoining, false, cluster.StatusRemoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir, _ := newTestFeed(t)
			dir.nodes["c"] = cluster.Node{ID: "c", Status: cluster.StatusRemoved, Generation: 5, Born: 5}
			app := map[string]string{}
			if tt.born != "" {
				app[ringchange.KeyBorn] = tt.born
			}
			if tt.newData {
				app[ringchange.KeyNewData] = "1"
			}
			ch := member("c", 10, app)
			ch.Member.Status = membership.Status(tt.status.String())
			f.onChange(ch)
			if got := dir.nodes["c"].Status; got != tt.want {
				t.Errorf("c recorded %v, want %v", got, tt.want)
			}
		})
	}
}

// A removal mark naming this node concerns it only if it covers its data dir: one of a
// life before this data dir was begun is another node's, which had this id.
func TestOnChangeRemovedSelfByDataDir(t *testing.T) {
	tests := []struct {
		name      string
		born, gen uint64
		removed   bool
	}{
		{"this data dir's life", 5, 5, true},
		{"a later life of this data dir", 5, 8, true},
		{"born unknown", 0, 1, true},
		{"a data dir wiped since", 9, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir, obs := newTestFeed(t)
			dir.self.Born = tt.born
			f.onChange(member("b", 7, map[string]string{ringchange.KeyRemoved: ringchange.FormatMarks(map[string]uint64{"a": tt.gen})}))
			if got := len(obs.removedSelfBy) > 0; got != tt.removed {
				t.Errorf("removed self: %v, want %v", got, tt.removed)
			}
		})
	}
}

// A node started on an empty data dir records its data dir's birth, its
// generation in this life; a node restarted keeps the one it recorded.
func TestNewRecordsTheBornGeneration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fresh  bool
		stored uint64
	}{{"fresh", true, 0}, {"restarted", false, 42}, {"restarted, from a build that kept none", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := &fakeDirectory{self: cluster.Node{ID: "a", DC: "dc1", Born: tc.stored}, nodes: map[string]cluster.Node{}, states: map[string]cluster.State{}}
			f, err := New(Config{ID: "a", TierKey: "power_tier", Fresh: tc.fresh}, Parts{Directory: dir, Catalog: fakeCatalog(1), Endpoint: fakeEndpoint{}, Observers: &fakeObservers{}})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.stored
			if tc.fresh {
				want = f.Generation()
			}
			if dir.self.Born != want {
				t.Errorf("born %d, want %d", dir.self.Born, want)
			}
		})
	}
}
