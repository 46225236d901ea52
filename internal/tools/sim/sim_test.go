package sim

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// twoDCs is a network with DCs a and b: 1 ms inside, 50 ms between.
func twoDCs(t *testing.T, remote LinkSpec, trace func(Trace)) *Simulator {
	t.Helper()
	s, err := New(Config{
		Seed:  7,
		DCs:   []string{"a", "b"},
		Links: UniformLinks{Local: LinkSpec{Latency: time.Millisecond}, Remote: remote},
		Wire:  TCPIPv4,
		Trace: trace,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// addRecorders adds one recorder per id (id "a1" goes to DC "a").
func addRecorders(t *testing.T, s *Simulator, interval time.Duration, ids ...string) map[string]*recorder {
	t.Helper()
	out := make(map[string]*recorder)
	for _, id := range ids {
		r := &recorder{id: id}
		if err := s.AddNode(NodeSpec{ID: id, DC: id[:1], TickInterval: interval}, r); err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	return out
}

// ping makes from send a ping of n bytes to to now.
func ping(t *testing.T, s *Simulator, from, to string, n int) {
	t.Helper()
	if err := s.Do(from, func(time.Duration) []Envelope {
		return []Envelope{{From: from, To: to, Kind: "ping", Msg: size(n)}}
	}); err != nil {
		t.Fatal(err)
	}
}

func TestLatencyAndBandwidth(t *testing.T) {
	tests := []struct {
		name       string
		remote     LinkSpec
		pings      int
		wantArrive []time.Duration // at b1
	}{
		{"latency only", LinkSpec{Latency: 50 * time.Millisecond}, 2,
			[]time.Duration{50 * time.Millisecond, 50 * time.Millisecond}},
		// 948 payload + 52 header = 1000 bytes = 8000 bits at 1 Mbps: 8 ms each,
		// serialised one after the other on the a->b link.
		{"bandwidth serialises", LinkSpec{Latency: 50 * time.Millisecond, BandwidthBps: 1e6}, 3,
			[]time.Duration{58 * time.Millisecond, 66 * time.Millisecond, 74 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := twoDCs(t, tt.remote, nil)
			nodes := addRecorders(t, s, 0, "a1", "b1")
			for range tt.pings {
				ping(t, s, "a1", "b1", 948)
			}
			s.RunFor(time.Second)
			var got []time.Duration
			for _, a := range nodes["b1"].arrivals {
				got = append(got, a.at)
			}
			if !reflect.DeepEqual(got, tt.wantArrive) {
				t.Fatalf("arrivals at b1 = %v, want %v", got, tt.wantArrive)
			}
			if n := len(nodes["a1"].arrivals); n != tt.pings {
				t.Fatalf("a1 got %d pongs, want %d", n, tt.pings)
			}
		})
	}
}

func TestCountersPerDCPairAndKind(t *testing.T) {
	s := twoDCs(t, LinkSpec{Latency: 10 * time.Millisecond}, nil)
	addRecorders(t, s, 0, "a1", "a2", "b1")
	ping(t, s, "a1", "a2", 100)
	ping(t, s, "a1", "b1", 3000) // three segments
	s.RunFor(time.Second)
	want := Counters{
		{"a", "a", "ping"}: {Messages: 1, Bytes: 152, PayloadBytes: 100},
		{"a", "a", "pong"}: {Messages: 1, Bytes: 62, PayloadBytes: 10},
		{"a", "b", "ping"}: {Messages: 1, Bytes: 3000 + 3*52, PayloadBytes: 3000},
		{"b", "a", "pong"}: {Messages: 1, Bytes: 62, PayloadBytes: 10},
	}
	if got := s.Network().Counters(); !reflect.DeepEqual(got, want) {
		t.Fatalf("counters = %v, want %v", got, want)
	}
	s.Network().ResetCounters()
	if got := s.Network().Counters().Total(); got != (Counter{}) {
		t.Fatalf("after reset total = %+v", got)
	}
}

func TestPartitionAndHeal(t *testing.T) {
	s := twoDCs(t, LinkSpec{Latency: 10 * time.Millisecond}, nil)
	nodes := addRecorders(t, s, 0, "a1", "b1")
	if err := s.Network().Partition("a", "b"); err != nil {
		t.Fatal(err)
	}
	ping(t, s, "a1", "b1", 10)
	s.RunFor(time.Second)
	if n := len(nodes["b1"].arrivals); n != 0 {
		t.Fatalf("b1 got %d messages across a partition", n)
	}
	if got := s.Network().Counters().InterDC().DroppedMessages; got != 1 {
		t.Fatalf("dropped = %d, want 1", got)
	}
	if err := s.Network().Heal("b", "a"); err != nil {
		t.Fatal(err)
	}
	ping(t, s, "a1", "b1", 10)
	s.RunFor(time.Second)
	if n := len(nodes["b1"].arrivals); n != 1 {
		t.Fatalf("b1 got %d messages after heal, want 1", n)
	}
	if err := s.Network().Partition("a", "z"); !errors.Is(err, ErrUnknownDC) {
		t.Fatalf("partition with unknown DC: err = %v, want ErrUnknownDC", err)
	}
}

func TestLossRate(t *testing.T) {
	s := twoDCs(t, LinkSpec{Latency: time.Millisecond, Loss: 0.1}, nil)
	nodes := addRecorders(t, s, 0, "a1", "b1")
	const sent = 10000
	for range sent {
		if err := s.Do("a1", func(time.Duration) []Envelope {
			return []Envelope{{From: "a1", To: "b1", Kind: "beat", Msg: size(1)}}
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.RunFor(time.Second)
	got := len(nodes["b1"].arrivals)
	if got < 8800 || got > 9200 {
		t.Fatalf("%d of %d arrived at 10%% loss", got, sent)
	}
}

func TestTicksCrashAndRestart(t *testing.T) {
	s := twoDCs(t, LinkSpec{}, nil)
	nodes := addRecorders(t, s, time.Second, "a1")
	s.RunUntil(10 * time.Second)
	if n := len(nodes["a1"].ticks); n != 10 {
		t.Fatalf("%d ticks in 10 s, want 10", n)
	}
	for i := 1; i < len(nodes["a1"].ticks); i++ {
		if d := nodes["a1"].ticks[i] - nodes["a1"].ticks[i-1]; d != time.Second {
			t.Fatalf("tick interval %v, want 1s", d)
		}
	}
	if err := s.Crash("a1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Do("a1", nil); !errors.Is(err, ErrNodeDown) {
		t.Fatalf("Do on crashed node: err = %v, want ErrNodeDown", err)
	}
	s.RunUntil(20 * time.Second)
	if n := len(nodes["a1"].ticks); n != 10 {
		t.Fatalf("crashed node ticked: %d ticks", n)
	}
	fresh := &recorder{id: "a1"}
	if err := s.Restart("a1", fresh); err != nil {
		t.Fatal(err)
	}
	s.RunUntil(30 * time.Second)
	if n := len(fresh.ticks); n != 10 {
		t.Fatalf("restarted node ticked %d times in 10 s, want 10", n)
	}
	if err := s.Restart("a1", fresh); !errors.Is(err, ErrNodeUp) {
		t.Fatalf("restart of running node: err = %v, want ErrNodeUp", err)
	}
}

func TestSameSeedSameRun(t *testing.T) {
	run := func() (Counters, []Trace) {
		var traces []Trace
		s := twoDCs(t, LinkSpec{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.2, BandwidthBps: 1e5},
			func(tr Trace) { traces = append(traces, tr) })
		ids := []string{"a1", "a2", "b1", "b2"}
		nodes := addRecorders(t, s, 100*time.Millisecond, ids...)
		for _, id := range ids {
			for _, peer := range ids {
				if peer != id {
					nodes[id].peers = append(nodes[id].peers, peer)
				}
			}
			nodes[id].beatBytes = 200
		}
		s.RunUntil(5 * time.Second)
		return s.Network().Counters(), traces
	}
	c1, t1 := run()
	c2, t2 := run()
	if !reflect.DeepEqual(c1, c2) {
		t.Fatalf("counters differ between runs of one seed:\n%v\n%v", c1, c2)
	}
	if !reflect.DeepEqual(t1, t2) {
		t.Fatal("traces differ between runs of one seed")
	}
	if c1.InterDC().DroppedMessages == 0 {
		t.Fatal("expected some loss between DCs")
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"no DCs", Config{Links: UniformLinks{}}, ErrNoDCs},
		{"no links", Config{DCs: []string{"a"}}, ErrNoLinkModel},
		{"duplicate DC", Config{DCs: []string{"a", "a"}, Links: UniformLinks{}}, ErrDuplicateDC},
		{"bad loss", Config{DCs: []string{"a"}, Links: UniformLinks{Local: LinkSpec{Loss: 2}}}, ErrBadLink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	s := twoDCs(t, LinkSpec{}, nil)
	addRecorders(t, s, 0, "a1")
	if err := s.AddNode(NodeSpec{ID: "a1", DC: "a"}, &recorder{}); !errors.Is(err, ErrDuplicateNode) {
		t.Fatalf("duplicate node: err = %v", err)
	}
	if err := s.AddNode(NodeSpec{ID: "x1", DC: "x"}, &recorder{}); !errors.Is(err, ErrUnknownDC) {
		t.Fatalf("unknown DC: err = %v", err)
	}
}
