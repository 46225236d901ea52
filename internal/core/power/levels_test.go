package power

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/ring"
)

// set builds a replica set from ids, each "id@dc" or "id" (in dc1).
func set(pairs ...string) []ring.Member {
	var out []ring.Member
	for _, p := range pairs {
		id, dc, ok := strings.Cut(p, "@")
		if !ok {
			dc = "dc1"
		}
		out = append(out, ring.Member{ID: id, DC: dc})
	}
	return out
}

func TestShortOfAwake(t *testing.T) {
	const (
		one, two, quorum, all = consistency.One, consistency.Two, consistency.Quorum, consistency.All
		localOne, localQuorum = consistency.LocalOne, consistency.LocalQuorum
		eachQuorum, serial    = consistency.EachQuorum, consistency.Serial
		localSerial, anyLevel = consistency.LocalSerial, consistency.Any
	)
	oneDC := [][]ring.Member{set("a", "b", "c")}
	twoDCs := [][]ring.Member{set("a@dc1", "b@dc1", "c@dc2")}
	tests := []struct {
		name      string
		sets      [][]ring.Member
		levels    []consistency.Level
		candidate string
		asleep    []string    // the other nodes not awake
		want      []Shortfall // every range the sleep leaves short
	}{
		{"QUORUM keeps two of three", oneDC, []consistency.Level{quorum}, "a", nil, nil},
		{"QUORUM refuses the second sleeper", oneDC, []consistency.Level{quorum}, "a", []string{"b"},
			[]Shortfall{{Level: quorum, Awake: 1, Needed: 2, Replicas: 3}}},
		{"SERIAL needs what QUORUM does", oneDC, []consistency.Level{serial}, "a", []string{"c"},
			[]Shortfall{{Level: serial, Awake: 1, Needed: 2, Replicas: 3}}},
		{"ONE lets the second sleep", oneDC, []consistency.Level{one}, "a", []string{"b"}, nil},
		{"ONE refuses the last awake replica", oneDC, []consistency.Level{one}, "a", []string{"b", "c"},
			[]Shortfall{{Level: one, Awake: 0, Needed: 1, Replicas: 3}}},
		{"ANY still needs an awake replica for its reads elsewhere", oneDC, []consistency.Level{anyLevel}, "a", []string{"b", "c"},
			[]Shortfall{{Level: anyLevel, Awake: 0, Needed: 1, Replicas: 3}}},
		{"TWO as QUORUM on three", oneDC, []consistency.Level{two}, "c", []string{"a"},
			[]Shortfall{{Level: two, Awake: 1, Needed: 2, Replicas: 3}}},
		{"ALL refuses any replica", oneDC, []consistency.Level{one, all}, "b", nil,
			[]Shortfall{{Level: all, DC: "dc1", Awake: 2, Needed: 3, Replicas: 3}}},
		{"a range the candidate does not hold is not its concern", oneDC, []consistency.Level{all}, "z", []string{"a", "b", "c"}, nil},
		{"TWO on one replica is never served: not the sleep's doing", [][]ring.Member{set("a")}, []consistency.Level{two}, "a", nil, nil},
		{"ONE on one replica", [][]ring.Member{set("a")}, []consistency.Level{one}, "a", nil,
			[]Shortfall{{Level: one, Awake: 0, Needed: 1, Replicas: 1}}},
		{"QUORUM over two DCs counts them together", twoDCs, []consistency.Level{quorum}, "a", nil, nil},
		{"LOCAL_QUORUM in dc1 needs both of its replicas", twoDCs, []consistency.Level{localQuorum}, "a", nil,
			[]Shortfall{{Level: localQuorum, DC: "dc1", Awake: 1, Needed: 2, Replicas: 2}}},
		{"LOCAL_SERIAL as LOCAL_QUORUM", twoDCs, []consistency.Level{localSerial}, "b", nil,
			[]Shortfall{{Level: localSerial, DC: "dc1", Awake: 1, Needed: 2, Replicas: 2}}},
		{"LOCAL_ONE keeps one in dc1", twoDCs, []consistency.Level{localOne}, "a", nil, nil},
		{"LOCAL_ONE from dc2, whose only replica would sleep", twoDCs, []consistency.Level{localOne}, "c", nil,
			[]Shortfall{{Level: localOne, DC: "dc2", Awake: 0, Needed: 1, Replicas: 1}}},
		{"EACH_QUORUM names the DC short", twoDCs, []consistency.Level{eachQuorum}, "c", nil,
			[]Shortfall{{Level: eachQuorum, DC: "dc2", Awake: 0, Needed: 1, Replicas: 1}}},
		{"the first level short is reported", oneDC, []consistency.Level{one, quorum}, "a", []string{"b"},
			[]Shortfall{{Level: quorum, Awake: 1, Needed: 2, Replicas: 3}}},
		{"the index of the range short", [][]ring.Member{set("a", "b", "c"), set("d", "e", "f"), set("d", "a", "g")}, []consistency.Level{quorum}, "d", []string{"e"},
			[]Shortfall{{Index: 1, Level: quorum, Awake: 1, Needed: 2, Replicas: 3}}},
		{"every range short is reported, each with its first level short", [][]ring.Member{set("a", "b", "c"), set("d", "e", "f"), set("d", "e", "g"), set("d", "h", "i")}, []consistency.Level{one, quorum}, "d", []string{"e", "f"},
			[]Shortfall{{Index: 1, Level: one, Awake: 0, Needed: 1, Replicas: 3}, {Index: 2, Level: quorum, Awake: 1, Needed: 2, Replicas: 3}}},
		{"the candidate asleep already counts once", oneDC, []consistency.Level{quorum}, "a", []string{"a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ShortOfAwake(tt.sets, tt.levels, tt.candidate, func(id string) bool { return !slices.Contains(tt.asleep, id) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("short %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestShort(t *testing.T) {
	quorum, one, eachQuorum, two := consistency.Quorum, consistency.One, consistency.EachQuorum, consistency.Two
	sets := [][]ring.Member{set("a", "b", "c"), set("b", "c", "d"), set("c", "d", "a")}
	tests := []struct {
		name   string
		sets   [][]ring.Member
		levels []consistency.Level
		asleep []string // the nodes not awake
		want   []Shortfall
	}{
		{"every replica awake", sets, []consistency.Level{quorum}, nil, nil},
		{"one sleeper keeps QUORUM", sets, []consistency.Level{quorum}, []string{"c"}, nil},
		{"a replica down beside a sleeper: the ranges both hold", sets, []consistency.Level{quorum}, []string{"c", "d"}, []Shortfall{
			{Index: 1, Level: quorum, Awake: 1, Needed: 2, Replicas: 3},
			{Index: 2, Level: quorum, Awake: 1, Needed: 2, Replicas: 3},
		}},
		{"the same at ONE is not short", sets, []consistency.Level{one}, []string{"c", "d"}, nil},
		{"EACH_QUORUM names the DC", [][]ring.Member{set("a@dc1", "b@dc1", "c@dc2")}, []consistency.Level{eachQuorum}, []string{"c"}, []Shortfall{
			{Level: eachQuorum, DC: "dc2", Awake: 0, Needed: 1, Replicas: 1},
		}},
		{"TWO on one replica is never served: not short", [][]ring.Member{set("a")}, []consistency.Level{two}, []string{"a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Short(tt.sets, tt.levels, func(id string) bool { return !slices.Contains(tt.asleep, id) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("Short = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestToWake(t *testing.T) {
	quorum, one, all := []consistency.Level{consistency.Quorum}, []consistency.Level{consistency.One}, []consistency.Level{consistency.All}
	ring3 := [][]ring.Member{set("a", "b", "c"), set("b", "c", "d"), set("c", "d", "a")}
	twoDCs := [][]ring.Member{set("a@dc1", "b@dc1", "f@dc1", "c@dc2", "d@dc2", "e@dc2")}
	tests := []struct {
		name     string
		demands  []Demand
		down     []string // not awake and not asleep: cannot be woken
		sleepers []string
		want     []string
	}{
		{"nothing short: nobody woken", []Demand{{ring3, quorum}}, nil, []string{"c"}, nil},
		{"a replica down beside a sleeper: the sleeper wakes", []Demand{{ring3, quorum}}, []string{"d"}, []string{"c"}, []string{"c"}},
		{"a stricter level: one of two sleepers is enough", []Demand{{ring3, quorum}}, nil, []string{"a", "d"}, []string{"a"}},
		{"the sleeper that closes the most, not the lowest id", []Demand{{[][]ring.Member{set("a", "b", "x"), set("b", "c", "y"), set("b", "d", "z")}, quorum}}, []string{"y", "z"}, []string{"a", "b"}, []string{"b"}},
		{"ALL wakes every sleeper of the range, in id order", []Demand{{ring3, all}}, nil, []string{"d", "a"}, []string{"a", "d"}},
		{"a DC short wakes its own sleeper, not the other DC's", []Demand{{twoDCs, []consistency.Level{consistency.EachQuorum}}}, nil, []string{"a", "c", "d"}, []string{"c"}},
		{"short of what no sleeper holds: nobody woken", []Demand{{ring3, one}}, []string{"a", "b", "c"}, []string{"e"}, nil},
		{"every keyspace counts: one sleeper covers both", []Demand{{[][]ring.Member{set("a", "b", "c")}, quorum}, {[][]ring.Member{set("c", "d", "e")}, quorum}},
			[]string{"e"}, []string{"b", "c"}, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			awake := func(id string) bool { return !slices.Contains(tt.down, id) && !slices.Contains(tt.sleepers, id) }
			got := ToWake(tt.demands, awake, tt.sleepers)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ToWake = %v, want %v", got, tt.want)
			}
			// What is woken leaves no range short that the sleepers could have helped.
			woken := func(id string) bool { return awake(id) || slices.Contains(got, id) }
			everyone := func(id string) bool { return !slices.Contains(tt.down, id) }
			for _, d := range tt.demands {
				if left, could := Short(d.Sets, d.Levels, woken), Short(d.Sets, d.Levels, everyone); len(left) > len(could) {
					t.Errorf("after waking %v, %+v short; with every sleeper awake, %+v", got, left, could)
				}
			}
		})
	}
}

func TestShortfallString(t *testing.T) {
	s := Shortfall{Keyspace: "app", Range: ring.Range{Start: 10, End: 20}, Level: consistency.LocalQuorum, DC: "dc1", Awake: 1, Needed: 2, Replicas: 2}
	want := "keyspace app, range (10, 20]: 1 of its 2 replicas in dc1 would be awake, LOCAL_QUORUM needs 2"
	if got := s.String(); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	err := error(&SleepRefused{Node: "n7", Shortfall: s, ShortRanges: 7, Ranges: 256})
	wantErr := "node n7 may not sleep: keyspace app, 7 of its 256 ranges would be short of awake replicas, the first range (10, 20]: 1 of its 2 replicas in dc1 would be awake, LOCAL_QUORUM needs 2"
	if got := err.Error(); got != wantErr {
		t.Errorf("Error = %q, want %q", got, wantErr)
	}
}

func TestParseLevels(t *testing.T) {
	tests := []struct {
		in      string
		want    string // String of the result
		wantErr bool
	}{
		{"", "", false},
		{"*=quorum", "*=QUORUM", false},
		{" app = LOCAL_QUORUM , app=QUORUM,app=quorum, *=ONE", "*=ONE,app=QUORUM,app=LOCAL_QUORUM", false},
		{"app", "", true},
		{"=ONE", "", true},
		{"app=MOST", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLevels(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidLevels) {
					t.Errorf("err = %v, want ErrInvalidLevels", err)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Errorf("ParseLevels = %q, %v; want %q", got.String(), err, tt.want)
			}
			again, err := ParseLevels(got.String())
			if err != nil || again.String() != got.String() {
				t.Errorf("round trip %q -> %q, %v", got.String(), again.String(), err)
			}
		})
	}
}

func TestLevelsFor(t *testing.T) {
	weak := Levels{"app": {consistency.One}, AllKeyspaces: {consistency.LocalQuorum}}
	strong := Levels{"app": {consistency.Quorum}}
	tests := []struct {
		name     string
		decls    []Levels
		keyspace string
		want     []consistency.Level
	}{
		{"nothing declared", nil, "app", []consistency.Level{DefaultLevel}},
		{"a declaration of nothing", []Levels{nil}, "app", []consistency.Level{DefaultLevel}},
		{"its own entry", []Levels{weak}, "app", []consistency.Level{consistency.One}},
		{"the star for the others", []Levels{weak}, "logs", []consistency.Level{consistency.LocalQuorum}},
		{"every declaration counts", []Levels{weak, strong}, "app", []consistency.Level{consistency.One, consistency.Quorum}},
		{"one that names nothing takes the default", []Levels{strong, weak}, "logs", []consistency.Level{consistency.LocalQuorum, DefaultLevel}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LevelsFor(tt.decls, tt.keyspace); !slices.Equal(got, tt.want) {
				t.Errorf("LevelsFor = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSixteenNodesAtQuorum pins docs/power.md's count of how many of the 16-node ring's
// tier-1 nodes may sleep at once when its keyspace is read at QUORUM: a greedy choice in
// id order, each node joining when the rule allows it with those chosen before.
func TestSixteenNodesAtQuorum(t *testing.T) {
	tests := []struct {
		alwaysOn int // nodes n00.. of tier 0
		level    consistency.Level
		chosen   int
	}{
		{5, consistency.One, 11},
		{5, consistency.Quorum, 2},
		{6, consistency.Quorum, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("tier-0=%d %v", tt.alwaysOn, tt.level), func(t *testing.T) {
			ids, r := sixteenNodeRing(t, tt.alwaysOn)
			asleep := greedySleepers(r.Placement(ring.Simple(3)).Sets(), []consistency.Level{tt.level}, ids[tt.alwaysOn:])
			if len(asleep) != tt.chosen {
				t.Errorf("%d may sleep (%v), want %d", len(asleep), asleep, tt.chosen)
			}
		})
	}
}
