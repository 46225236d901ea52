package chord

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs the scripts in testdata/: protocol stories told message by message.
// Regenerate the expected output with: go test ./internal/core/routing/chord -run TestScenarios -rewrite
//
// Commands:
//
//	init protocol=P [bits=N] [r=N]  start an empty network
//	stable                          add the nodes listed in the input ("name id dc" lines)
//	                                with fully stabilised tables
//	add name=X id=N dc=D [via=Y,Z]  start node X and join through Y (then Z); prints messages
//	run for=DUR [print]             tick every node every 100 ms for DUR; prints message
//	                                counts by type, or every message with print
//	tables [X ...]                  print the tables of the named (default: all live) nodes
//	converged                       compare every live node's tables with a stabilised ring
//	lookup from=X key=N             run a lookup; prints its messages and result
//	crash X                         stop X without a word
//	leave X                         X leaves gracefully; prints its messages
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &scenario{t: t}
		datadriven.RunTest(t, path, s.run)
	})
}

type scenario struct {
	t   *testing.T
	cfg Config
	net *testNet
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "init":
		var protocol string
		d.ScanArgs(t, "protocol", &protocol)
		p, err := ParseProtocol(protocol)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.cfg = Config{Protocol: p, TraceLookups: true}
		d.MaybeScanArgs(t, "bits", &s.cfg.IDBits)
		d.MaybeScanArgs(t, "r", &s.cfg.SuccessorListLen)
		s.net = newTestNet(t)
		s.net.verbose = true
		return ""
	case "stable":
		layout, err := NewLayout(parsePeers(t, d))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		for _, p := range layout.Peers() {
			n, err := layout.StableNode(s.config(p))
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			s.net.nodes[p.Name] = n
		}
		return s.tables(nil)
	case "add":
		var name, dc, via string
		var id uint64
		d.ScanArgs(t, "name", &name)
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "dc", &dc)
		d.MaybeScanArgs(t, "via", &via)
		n, err := New(s.config(Peer{ID: ID(id), Name: name, DC: dc}))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.net.nodes[name] = n
		var known []Peer
		for _, v := range strings.Split(via, ",") {
			if v != "" {
				known = append(known, s.node(d, v).Self())
			}
		}
		return s.deliver(n.Join(s.net.now, known...))
	case "run":
		var forString string
		d.ScanArgs(t, "for", &forString)
		duration, err := time.ParseDuration(forString)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.net.log = nil
		for end := s.net.now + duration; s.net.now < end; {
			s.net.tickAll(100 * time.Millisecond)
		}
		if d.HasArg("print") {
			return logString(s.net.log, nil)
		}
		return countByType(s.net.log)
	case "tables":
		return s.tables(d.CmdArgs)
	case "converged":
		return s.converged(d)
	case "lookup":
		var from string
		var key uint64
		d.ScanArgs(t, "from", &from)
		d.ScanArgs(t, "key", &key)
		s.net.log = nil
		res := s.net.lookup(from, ID(key))
		// Only the lookup's own messages: maintenance runs on while it waits for timeouts.
		ownMessages := func(m Message) bool {
			return m.Origin.Name == from && m.Purpose == PurposeClient && m.Seq == res.Seq
		}
		return logString(s.net.log, ownMessages) + resultString(res) + "\n"
	case "crash":
		for _, arg := range d.CmdArgs {
			s.node(d, arg.Key)
			s.net.down[arg.Key] = true
		}
		return ""
	case "leave":
		name := d.CmdArgs[0].Key
		out := s.node(d, name).Leave(s.net.now)
		s.net.down[name] = true
		return s.deliver(out)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (s *scenario) config(p Peer) Config {
	c := s.cfg
	c.Self = p
	c.Rand = rand.New(rand.NewPCG(uint64(p.ID), 1))
	return c
}

func (s *scenario) node(d *datadriven.TestData, name string) *Node {
	n, ok := s.net.nodes[name]
	if !ok {
		d.Fatalf(s.t, "no node %q", name)
	}
	return n
}

// deliver sends an Output's messages and prints every message delivered.
func (s *scenario) deliver(out Output) string {
	s.net.log = nil
	s.net.take(out)
	s.net.deliverAll()
	return logString(s.net.log, nil)
}

// logString prints the logged messages that keep accepts (all, for nil keep), one a line.
func logString(log []loggedMsg, keep func(Message) bool) string {
	var sb strings.Builder
	for _, l := range log {
		if keep == nil || keep(l.env.Msg) {
			sb.WriteString(l.String() + "\n")
		}
	}
	return sb.String()
}

// live returns the names of the nodes that are up, in identifier order.
func (s *scenario) live() []string {
	var names []string
	for name := range s.net.nodes {
		if !s.net.down[name] {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Compare(s.net.nodes[a].Self().ID, s.net.nodes[b].Self().ID)
	})
	return names
}

func (s *scenario) tables(args []datadriven.CmdArg) string {
	names := s.live()
	if len(args) > 0 {
		names = nil
		for _, a := range args {
			names = append(names, a.Key)
		}
	}
	var sb strings.Builder
	for _, name := range names {
		n := s.net.nodes[name]
		fmt.Fprintf(&sb, "%s %s\n", name, n.Self())
		for _, l := range n.layers() {
			fmt.Fprintf(&sb, "  %-6s pred=%s succ=%s fingers=%s\n", l, n.Predecessor(l), peerList(n.Successors(l)), peerList(n.Fingers(l)))
		}
	}
	return sb.String()
}

// converged reports every live node whose tables differ from those of a stabilised ring
// of the live nodes.
func (s *scenario) converged(d *datadriven.TestData) string {
	var peers []Peer
	for _, name := range s.live() {
		peers = append(peers, s.net.nodes[name].Self())
	}
	layout, err := NewLayout(peers)
	if err != nil {
		d.Fatalf(s.t, "%v", err)
	}
	var diffs []string
	for _, name := range s.live() {
		n := s.net.nodes[name]
		want, err := layout.StableNode(s.config(n.Self()))
		if err != nil {
			d.Fatalf(s.t, "%v", err)
		}
		for _, l := range n.layers() {
			got, exp := n.rings[l], want.rings[l]
			if got.pred != exp.pred || !slices.Equal(got.succs, exp.succs) || !slices.Equal(got.fingers, exp.fingers) {
				diffs = append(diffs, fmt.Sprintf("%s %s: pred=%s succ=%s fingers=%s, want pred=%s succ=%s fingers=%s",
					name, l, got.pred, peerList(got.succs), peerList(got.fingers), exp.pred, peerList(exp.succs), peerList(exp.fingers)))
			}
		}
	}
	if len(diffs) == 0 {
		return "converged\n"
	}
	return strings.Join(diffs, "\n") + "\n"
}

func parsePeers(t *testing.T, d *datadriven.TestData) []Peer {
	var peers []Peer
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		var p Peer
		var id uint64
		if _, err := fmt.Sscanf(line, "%s %d %s", &p.Name, &id, &p.DC); err != nil {
			d.Fatalf(t, "peer line %q: %v", line, err)
		}
		p.ID = ID(id)
		peers = append(peers, p)
	}
	return peers
}

// countByType summarises a message log as "GetNeighbors global: 12" lines.
func countByType(log []loggedMsg) string {
	counts := make(map[string]int)
	for _, l := range log {
		counts[l.env.Msg.Type.String()+" "+l.env.Msg.Layer.String()]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s: %d\n", k, counts[k])
	}
	return sb.String()
}

func resultString(res LookupResult) string {
	if res.Err != nil {
		return fmt.Sprintf("lookup %s: %v", res.Key, res.Err)
	}
	return fmt.Sprintf("lookup %s: owner %s, path %s, %d hops, %d inter-DC", res.Key, res.Owner, pathString(res.Path), res.Hops, res.InterDCHops)
}

func TestParseProtocol(t *testing.T) {
	for _, p := range []Protocol{ProtocolChord, ProtocolMLChordPaper, ProtocolMLChord} {
		got, err := ParseProtocol(p.String())
		if err != nil || got != p {
			t.Errorf("ParseProtocol(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParseProtocol("kademlia"); !errors.Is(err, ErrUnknownProtocol) {
		t.Errorf("ParseProtocol(kademlia) error = %v, want ErrUnknownProtocol", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	self := Peer{ID: 3, Name: "a", DC: "A"}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no name", Config{Protocol: ProtocolChord, Rand: rng}},
		{"no rand", Config{Self: self, Protocol: ProtocolChord}},
		{"no protocol", Config{Self: self, Rand: rng}},
		{"id too wide", Config{Self: Peer{ID: 16, Name: "a"}, Protocol: ProtocolChord, IDBits: 4, Rand: rng}},
		{"gap list shorter than r", Config{Self: self, Protocol: ProtocolMLChord, SuccessorListLen: 8, GapListMax: 4, Rand: rng}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New error = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
}

// TestLookupBeforeJoin: a node on no ring refuses lookups instead of claiming every key.
func TestLookupBeforeJoin(t *testing.T) {
	n, err := New(Config{Self: Peer{ID: 3, Name: "a", DC: "A"}, Protocol: ProtocolChord, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	_, out := n.Lookup(0, 5)
	if len(out.Lookups) != 1 || !errors.Is(out.Lookups[0].Err, ErrNotJoined) {
		t.Fatalf("lookup before join = %+v, want ErrNotJoined", out.Lookups)
	}
}

// TestLookupRoutesAroundDeadHop: a next hop that never acknowledges is taken for failed
// and the lookup goes on without it; here the origin is then alone and owns the key.
func TestLookupRoutesAroundDeadHop(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {1, 8}})
	tn := stableNet(t, layout, Config{Protocol: ProtocolChord, IDBits: 4})
	tn.down["n8"] = true
	_, out := tn.nodes["n1"].Lookup(0, 5)
	tn.take(out)
	tn.deliverAll()
	for range 20 {
		tn.tickAll(100 * time.Millisecond)
	}
	if len(tn.results) != 1 {
		t.Fatalf("got %d results, want 1", len(tn.results))
	}
	if res := tn.results[0]; res.Err != nil || res.Owner.Name != "n1" || res.Hops != 0 {
		t.Errorf("result %+v, want owner n1 with 0 hops counted after n8's failure", res)
	}
}

// TestLookupTimesOut: a lookup whose answers are all lost reports ErrLookupTimeout after
// LookupAttempts attempts of LookupTimeout each.
func TestLookupTimesOut(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {1, 5, 8}})
	tn := stableNet(t, layout, Config{Protocol: ProtocolChord, IDBits: 4, LookupAttempts: 2, LookupTimeout: time.Second})
	tn.drop = func(env Envelope) bool { return env.Msg.Type == MsgFoundSuccessor }
	_, out := tn.nodes["n1"].Lookup(0, 5)
	tn.take(out)
	tn.deliverAll()
	for tick := 1; tick <= 25; tick++ {
		tn.tickAll(100 * time.Millisecond)
		if want := map[bool]int{false: 0, true: 1}[tick >= 20]; len(tn.results) != want {
			t.Fatalf("after %d ms: %d results, want %d", tick*100, len(tn.results), want)
		}
	}
	if res := tn.results[0]; !errors.Is(res.Err, ErrLookupTimeout) {
		t.Errorf("result %+v, want ErrLookupTimeout", res)
	}
}

// TestJoinThroughNodeNotYetOnRing: a node's bootstrap holds its join request until the
// bootstrap founds the ring, then answers at once; joining again meanwhile sends nothing
// new.
func TestJoinThroughNodeNotYetOnRing(t *testing.T) {
	a, b := Peer{ID: 3, Name: "a", DC: "A"}, Peer{ID: 9, Name: "b", DC: "A"}
	tn := newTestNet(t)
	for i, p := range []Peer{a, b} {
		n, err := New(Config{Self: p, Protocol: ProtocolChord, IDBits: 4, Rand: rand.New(rand.NewPCG(uint64(i), 1))})
		if err != nil {
			t.Fatal(err)
		}
		tn.nodes[p.Name] = n
	}
	tn.take(tn.nodes["b"].Join(0, a))
	tn.deliverAll()
	if out := tn.nodes["b"].Join(100*time.Millisecond, a); len(out.Messages) != 0 {
		t.Errorf("joining again while the first join is under way sent %v", out.Messages)
	}
	if tn.nodes["b"].Joined() {
		t.Fatal("b joined through a node on no ring")
	}
	tn.take(tn.nodes["a"].Join(time.Second))
	tn.deliverAll()
	if !tn.nodes["b"].Joined() || !slices.Equal(tn.nodes["b"].Successors(LayerGlobal), []Peer{a}) {
		t.Errorf("b joined=%v successors %s once a founded the ring, want a", tn.nodes["b"].Joined(), peerList(tn.nodes["b"].Successors(LayerGlobal)))
	}
	if got := tn.nodes["a"].Predecessor(LayerGlobal); got != b {
		t.Errorf("a's predecessor %v, want b", got)
	}
}

// TestJoinBootstraps: how a join picks its bootstraps while no ring answers it.
func TestJoinBootstraps(t *testing.T) {
	a, b, c := Peer{ID: 3, Name: "a", DC: "A"}, Peer{ID: 9, Name: "b", DC: "A"}, Peer{ID: 12, Name: "c", DC: "B"}
	newNet := func(protocol Protocol) *testNet {
		tn := newTestNet(t)
		for i, p := range []Peer{a, b, c} {
			n, err := New(Config{Self: p, Protocol: protocol, IDBits: 4, Rand: rand.New(rand.NewPCG(uint64(i), 1))})
			if err != nil {
				t.Fatal(err)
			}
			tn.nodes[p.Name] = n
		}
		tn.verbose = true
		return tn
	}
	findsTo := func(tn *testNet) []string {
		var to []string
		for _, l := range tn.log {
			if l.env.Msg.Type == MsgFindSuccessor && l.env.Msg.From == b {
				to = append(to, l.env.To.Name)
			}
		}
		return to
	}

	t.Run("a silent bootstrap is passed over at once, not suspected", func(t *testing.T) {
		tn := newNet(ProtocolChord)
		tn.down["a"] = true
		tn.take(tn.nodes["b"].Join(0, a, c))
		tn.deliverAll()
		for range 11 {
			tn.tickAll(100 * time.Millisecond)
		}
		if got := findsTo(tn); !slices.Equal(got, []string{"a", "c"}) {
			t.Errorf("join requests went to %v, want a then c after a's HopAck timeout (1 s)", got)
		}
		if tn.nodes["b"].isSuspect(a) {
			t.Error("b suspects a, a bootstrap that did not answer before any ring existed")
		}
	})

	t.Run("a new first bootstrap is asked at once", func(t *testing.T) {
		tn := newNet(ProtocolChord)
		tn.take(tn.nodes["b"].Join(0, c))
		tn.deliverAll()
		tn.take(tn.nodes["b"].Join(100*time.Millisecond, c)) // same bootstraps: nothing new
		tn.take(tn.nodes["b"].Join(200*time.Millisecond, a, c))
		tn.deliverAll()
		if got := findsTo(tn); !slices.Equal(got, []string{"c", "a"}) {
			t.Errorf("join requests went to %v, want c, then a when it came first", got)
		}
		tn.take(tn.nodes["a"].Join(time.Second))
		tn.deliverAll()
		if !tn.nodes["b"].Joined() {
			t.Error("b did not join when a founded the ring")
		}
	})

	t.Run("a node cut off from its ring joins again", func(t *testing.T) {
		tn := newNet(ProtocolChord)
		tn.take(tn.nodes["a"].Join(0))
		tn.take(tn.nodes["b"].Join(0, a))
		tn.deliverAll()
		tn.nodes["b"].markFailed(0, a) // its one neighbour taken for failed: b is alone
		if len(tn.nodes["b"].Successors(LayerGlobal)) != 0 {
			t.Fatal("b still has a successor")
		}
		tn.take(tn.nodes["b"].Join(time.Second, a))
		tn.deliverAll()
		if got := tn.nodes["b"].Successors(LayerGlobal); !slices.Equal(got, []Peer{a}) {
			t.Errorf("b's successors %s after joining again, want a", peerList(got))
		}
	})

	t.Run("the local ring alone does not make a node joined", func(t *testing.T) {
		tn := newNet(ProtocolMLChord)
		tn.take(tn.nodes["a"].Join(0)) // a: on both rings, alone
		tn.deliverAll()
		tn.take(tn.nodes["b"].Join(0, c, a)) // global through c, on no ring yet; local through a
		tn.deliverAll()
		if got := tn.nodes["b"].Successors(LayerLocal); !slices.Equal(got, []Peer{a}) {
			t.Errorf("b's local successors %s, want a", peerList(got))
		}
		if tn.nodes["b"].Joined() {
			t.Error("b counts as joined with no global successor: it would answer every lookup as the owner")
		}
	})
}
