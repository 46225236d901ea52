package membership

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func testConfig() Config {
	return Config{ID: "n1", DC: "a", Addr: "10.0.0.1:7000", Generation: 100, Rand: rand.New(rand.NewPCG(1, 2)),
		AppState: map[string]string{KeyTokens: "42"}}
}

func TestLocalStateVersions(t *testing.T) {
	l := NewLocalState(testConfig())
	// addr, dc, status, tokens in key order take versions 1-4, the heartbeat 5.
	want := []AppValue{{KeyAddr, "10.0.0.1:7000", 1}, {KeyDC, "a", 2}, {KeyStatus, "normal", 3}, {KeyTokens, "42", 4}}
	if !reflect.DeepEqual(l.App, want) || l.Heartbeat != 5 {
		t.Fatalf("state = %+v", l.EndpointState)
	}
	old := l.App
	l.Set(KeyStatus, string(StatusLeaving))
	if old[2].Value != "normal" {
		t.Fatal("Set changed a shared slice in place")
	}
	if v, _ := l.Value(KeyStatus); v != "leaving" || l.MaxVersion() != 6 {
		t.Fatalf("status %q max %d", v, l.MaxVersion())
	}
	l.BeatPast(40)
	if l.Heartbeat != 41 {
		t.Fatalf("heartbeat %d after BeatPast(40), want 41", l.Heartbeat)
	}
}

func TestMerge(t *testing.T) {
	base := EndpointState{ID: "n1", Generation: 5, Heartbeat: 3, App: []AppValue{{"a", "x", 1}, {"b", "y", 2}}}
	tests := []struct {
		name   string
		remote EndpointState
		want   EndpointState
		merged Merged
	}{
		{"older generation ignored",
			EndpointState{ID: "n1", Generation: 4, Heartbeat: 99},
			base, Merged{}},
		{"newer generation replaces",
			EndpointState{ID: "n1", Generation: 6, Heartbeat: 1, App: []AppValue{{"c", "z", 1}}},
			EndpointState{ID: "n1", Generation: 6, Heartbeat: 1, App: []AppValue{{"c", "z", 1}}},
			Merged{Restarted: true, Heartbeat: true, Changed: []AppValue{{"c", "z", 1}}}},
		{"heartbeat only",
			EndpointState{ID: "n1", Generation: 5, Heartbeat: 7},
			EndpointState{ID: "n1", Generation: 5, Heartbeat: 7, App: base.App},
			Merged{Heartbeat: true}},
		{"newer and new values, stale one ignored",
			EndpointState{ID: "n1", Generation: 5, Heartbeat: 3, App: []AppValue{{"a", "old", 1}, {"b", "y2", 4}, {"c", "new", 5}}},
			EndpointState{ID: "n1", Generation: 5, Heartbeat: 3, App: []AppValue{{"a", "x", 1}, {"b", "y2", 4}, {"c", "new", 5}}},
			Merged{Changed: []AppValue{{"b", "y2", 4}, {"c", "new", 5}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			m := s.Merge(tt.remote)
			if !reflect.DeepEqual(s, tt.want) {
				t.Fatalf("state = %+v, want %+v", s, tt.want)
			}
			if !reflect.DeepEqual(m, tt.merged) {
				t.Fatalf("merged = %+v, want %+v", m, tt.merged)
			}
			if base.App[1].Value != "y" {
				t.Fatal("merge changed the shared slice in place")
			}
		})
	}
}

func TestSinceAndEncoding(t *testing.T) {
	s := EndpointState{ID: "n1", Generation: 1700000000, Heartbeat: 300, App: []AppValue{{"a", "x", 1}, {"b", "y", 250}}}
	delta := s.Since(100)
	if !reflect.DeepEqual(delta.App, []AppValue{{"b", "y", 250}}) || delta.Heartbeat != 300 {
		t.Fatalf("Since(100) = %+v", delta)
	}
	for _, st := range []EndpointState{s, delta, {ID: "x", Generation: 1}} {
		b := st.AppendTo(nil)
		if len(b) != st.WireSize() {
			t.Fatalf("WireSize %d, encoded %d", st.WireSize(), len(b))
		}
		d := NewDecoder(b)
		got := DecodeEndpointState(d)
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("round trip %+v, want %+v", got, st)
		}
	}
}

func TestMemberView(t *testing.T) {
	l := NewLocalState(testConfig())
	m := l.Member(true)
	if m.ID != "n1" || m.DC != "a" || m.Addr != "10.0.0.1:7000" || m.Status != StatusNormal || !m.Alive || m.AppState[KeyTokens] != "42" {
		t.Fatalf("member = %+v", m)
	}
	l.Set(KeyStatus, string(StatusLeft))
	if l.Member(true).Alive {
		t.Fatal("a member that left is not alive")
	}
	l.Set(KeyStatus, string(StatusShutdown))
	if m := l.Member(true); m.Alive || m.Status != StatusShutdown {
		t.Fatalf("a member that shut down is down, with its status: %+v", m)
	}
}

func TestQuarantine(t *testing.T) {
	var q Quarantine
	q.Add("n1", 5, 10*time.Second)
	tests := []struct {
		gen  uint64
		now  time.Duration
		want bool
	}{
		{5, time.Second, true},
		{4, time.Second, true},
		{6, time.Second, false},
		{5, 10 * time.Second, false},
		{5, time.Second, false}, // expired entries are gone for good
	}
	for i, tt := range tests {
		if got := q.Blocks("n1", tt.gen, tt.now); got != tt.want {
			t.Fatalf("case %d: Blocks(gen %d, %v) = %v", i, tt.gen, tt.now, got)
		}
	}
	if q.Blocks("n2", 1, 0) {
		t.Fatal("unknown member blocked")
	}
}

func TestConfigValidate(t *testing.T) {
	good := testConfig()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mutate := range []func(*Config){
		func(c *Config) { c.ID = "" },
		func(c *Config) { c.DC = "" },
		func(c *Config) { c.Rand = nil },
		func(c *Config) { c.Generation = 0 },
	} {
		c := testConfig()
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}
