package membership_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/membership/ferry"
	"github.com/kuradb/kura/internal/tools/membership/experiment"
	"github.com/kuradb/kura/internal/tools/membership/simcluster"
	"github.com/kuradb/kura/internal/tools/sim"
)

// TestScenarios runs the scripts in testdata/<protocol>/ on the simulator.
// Regenerate the expected output with: go test ./internal/core/membership -run Scenarios -rewrite
//
// Commands:
//
//	cluster protocol=P seed=S dcs=(a,b) seeds=(a1,b1) [loss=L] [remove-after=D]
//	start a=N b=M      start N new nodes in DC a (a1, a2, ...) and M in b
//	start a=N b=M converged  the same, as a cluster already converged: each
//	                   node starts knowing all of them (simcluster.StartConverged)
//	start id=X         restart crashed node X with a new generation
//	crash id=X | leave id=X | shutdown id=X | set id=X key=K value=V
//	crash dc=A         crash every running node of DC A at once
//	partition a b | heal a b
//	cut X Y | mend X Y  break (repair) the link between two nodes only
//	run for=D
//	converge timeout=D  run until every live view matches the truth
//	events [kinds=(k,...)] [id=X]  events since the last "events", by kind and subject
//	view id=X          what X knows: alive and down members
//	gateways dc=A      the gateways Ferry elects among A's live nodes
//	ring dc=A          A's live nodes in Ferry's ring order (gateways first)
//	traffic            bytes per DC pair and kind since the last "traffic"
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.do(t, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			if h.cluster != nil && h.cluster.Err() != nil {
				t.Fatalf("%s: %v", filepath.Base(path), h.cluster.Err())
			}
			return out
		})
	})
}

// logged is one event as the harness saw it.
type logged struct {
	at       time.Duration
	observer string
	event    membership.Event
}

// harness holds one script's cluster.
type harness struct {
	cluster *simcluster.Cluster
	events  []logged
	counted sim.Counters
	next    map[string]int
}

func (h *harness) do(t *testing.T, d *datadriven.TestData) (string, error) {
	if d.Cmd != "cluster" && h.cluster == nil {
		return "", fmt.Errorf("no cluster yet")
	}
	switch d.Cmd {
	case "cluster":
		return h.newCluster(t, d)
	case "start":
		if d.HasArg("id") {
			id := argString(t, d, "id")
			return "", h.cluster.Start(id, h.cluster.DC(id))
		}
		converged := d.HasArg("converged")
		var started, dcs []string
		for _, arg := range d.CmdArgs {
			if arg.Key == "converged" {
				continue
			}
			var n int
			d.ScanArgs(t, arg.Key, &n)
			for range n {
				h.next[arg.Key]++
				id := fmt.Sprintf("%s%d", arg.Key, h.next[arg.Key])
				started, dcs = append(started, id), append(dcs, arg.Key)
				if converged {
					continue
				}
				if err := h.cluster.Start(id, arg.Key); err != nil {
					return "", err
				}
			}
		}
		if converged {
			if err := h.cluster.StartConverged(started, dcs); err != nil {
				return "", err
			}
		}
		return "started " + strings.Join(started, " ") + "\n", nil
	case "crash":
		if d.HasArg("dc") {
			dc := argString(t, d, "dc")
			var crashed []string
			for _, id := range h.cluster.Live() {
				if h.cluster.DC(id) == dc {
					if err := h.cluster.Crash(id); err != nil {
						return "", err
					}
					crashed = append(crashed, id)
				}
			}
			return "crashed " + strings.Join(crashed, " ") + "\n", nil
		}
		return "", h.cluster.Crash(argString(t, d, "id"))
	case "leave":
		return "", h.cluster.Leave(argString(t, d, "id"))
	case "shutdown":
		return "", h.cluster.Shutdown(argString(t, d, "id"))
	case "set":
		return "", h.cluster.SetAppState(argString(t, d, "id"), argString(t, d, "key"), argString(t, d, "value"))
	case "partition", "heal":
		if len(d.CmdArgs) != 2 {
			return "", fmt.Errorf("%s needs two DCs", d.Cmd)
		}
		net := h.cluster.Sim().Network()
		if d.Cmd == "partition" {
			return "", net.Partition(d.CmdArgs[0].Key, d.CmdArgs[1].Key)
		}
		return "", net.Heal(d.CmdArgs[0].Key, d.CmdArgs[1].Key)
	case "cut", "mend":
		if len(d.CmdArgs) != 2 {
			return "", fmt.Errorf("%s needs two nodes", d.Cmd)
		}
		if d.Cmd == "cut" {
			return "", h.cluster.Cut(d.CmdArgs[0].Key, d.CmdArgs[1].Key)
		}
		return "", h.cluster.Mend(d.CmdArgs[0].Key, d.CmdArgs[1].Key)
	case "isolate":
		return "", h.cluster.Sim().Isolate(argString(t, d, "id"))
	case "reconnect":
		return "", h.cluster.Sim().Reconnect(argString(t, d, "id"))
	case "run":
		var span time.Duration
		scanDuration(t, d, "for", &span)
		h.cluster.Sim().RunFor(span)
		return fmt.Sprintf("t=%s\n", seconds(h.cluster.Sim().Now())), nil
	case "converge":
		var timeout time.Duration
		scanDuration(t, d, "timeout", &timeout)
		took, ok := h.cluster.RunUntilConverged(timeout)
		if !ok {
			return fmt.Sprintf("not converged after %s: %s\n", seconds(took), h.cluster.Disagreement()), nil
		}
		return fmt.Sprintf("converged after %s (t=%s)\n", seconds(took), seconds(h.cluster.Sim().Now())), nil
	case "events":
		return h.printEvents(t, d), nil
	case "view":
		return h.printView(argString(t, d, "id"))
	case "gateways", "ring":
		dc := argString(t, d, "dc")
		var live []string
		for _, id := range h.cluster.Live() {
			if h.cluster.DC(id) == dc {
				live = append(live, id)
			}
		}
		k := ferry.DefaultOptions.Gateways
		if d.Cmd == "ring" {
			k = len(live)
		}
		return strings.Join(ferry.Gateways(live, k), " ") + "\n", nil
	case "traffic":
		return h.printTraffic(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func (h *harness) newCluster(t *testing.T, d *datadriven.TestData) (string, error) {
	var name string
	var seed uint64
	var dcs, seeds []string
	var loss float64
	var removeAfter time.Duration
	d.ScanArgs(t, "protocol", &name)
	d.ScanArgs(t, "seed", &seed)
	d.ScanArgs(t, "dcs", &dcs)
	d.ScanArgs(t, "seeds", &seeds)
	if d.HasArg("loss") {
		d.ScanArgs(t, "loss", &loss)
	}
	if d.HasArg("remove-after") {
		scanDuration(t, d, "remove-after", &removeAfter)
	}
	var p membership.Protocol
	for _, candidate := range experiment.Protocols {
		if candidate.Name == name {
			p = candidate
		}
	}
	if p.New == nil {
		return "", fmt.Errorf("%w: %q", membership.ErrUnknownProtocol, name)
	}
	c, err := simcluster.New(simcluster.Config{
		Protocol: p, Seed: seed, DCs: dcs, Seeds: seeds, RemoveAfter: removeAfter, CheckEncoding: true,
		Links: sim.UniformLinks{
			Local:  sim.LinkSpec{Latency: 100 * time.Microsecond, Loss: loss},
			Remote: sim.LinkSpec{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: loss},
		},
		Wire: sim.TCPIPv4,
		OnEvent: func(now time.Duration, observer string, e membership.Event) {
			h.events = append(h.events, logged{at: now, observer: observer, event: e})
		},
	})
	if err != nil {
		return "", err
	}
	h.cluster, h.next, h.events, h.counted = c, map[string]int{}, nil, nil
	return "ok\n", nil
}

// printEvents groups the events since the last call by kind and subject.
func (h *harness) printEvents(t *testing.T, d *datadriven.TestData) string {
	var kinds []string
	if d.HasArg("kinds") {
		d.ScanArgs(t, "kinds", &kinds)
	}
	var subject string
	if d.HasArg("id") {
		d.ScanArgs(t, "id", &subject)
	}
	type group struct {
		observers   map[string]bool
		first, last time.Duration
		about       string
	}
	groups := map[string]*group{}
	for _, l := range h.events {
		kind := l.event.Kind.String()
		if (len(kinds) > 0 && !slices.Contains(kinds, kind)) || (subject != "" && l.event.ID != subject) {
			continue
		}
		about := l.event.ID
		if l.event.Kind == membership.EventStateChanged {
			about += " " + l.event.Key + "=" + l.event.Value
		}
		key := kind + " " + about
		g := groups[key]
		if g == nil {
			g = &group{observers: map[string]bool{}, first: l.at, about: about}
			groups[key] = g
		}
		g.observers[l.observer] = true
		g.last = l.at
	}
	h.events = nil
	if len(groups) == 0 {
		return "none\n"
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		g := groups[k]
		fmt.Fprintf(&b, "%s: %d observers, %s-%s\n", k, len(g.observers), seconds(g.first), seconds(g.last))
	}
	return b.String()
}

// printView lists what one node knows.
func (h *harness) printView(id string) (string, error) {
	core, err := h.cluster.Core(id)
	if err != nil {
		return "", err
	}
	var alive, down []string
	for _, m := range core.Members() {
		label := fmt.Sprintf("%s@%d", m.ID, m.Generation-simcluster.GenerationBase)
		if m.Status != membership.StatusNormal {
			label += "(" + string(m.Status) + ")"
		}
		if m.Alive {
			alive = append(alive, label)
		} else {
			down = append(down, label)
		}
	}
	return fmt.Sprintf("alive: %s\ndown: %s\n", strings.Join(alive, " "), strings.Join(down, " ")), nil
}

// printTraffic shows bytes per DC pair and kind since the last call.
func (h *harness) printTraffic() string {
	now := h.cluster.Sim().Network().Counters()
	window := now.Sub(h.counted)
	h.counted = now
	var b strings.Builder
	for _, k := range window.Keys() {
		c := window[k]
		fmt.Fprintf(&b, "%s->%s %s: %d msgs, %d bytes\n", k.FromDC, k.ToDC, k.Kind, c.Messages, c.Bytes)
	}
	return b.String()
}

func argString(t *testing.T, d *datadriven.TestData, key string) string {
	var v string
	d.ScanArgs(t, key, &v)
	return v
}

func scanDuration(t *testing.T, d *datadriven.TestData, key string, dst *time.Duration) {
	v, err := time.ParseDuration(argString(t, d, key))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	*dst = v
}

// seconds prints a virtual time to the tenth of a second.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func TestMarshalAndEventNames(t *testing.T) {
	m := &ferry.Heartbeat{Generation: 7, MaxVersion: 300}
	if got := membership.Marshal(m); len(got) != m.WireSize() || got[0] == 0 {
		t.Fatalf("Marshal = %x (WireSize %d)", got, m.WireSize())
	}
	names := map[membership.EventKind]string{
		membership.EventJoined: "joined", membership.EventRestarted: "restarted", membership.EventAlive: "alive",
		membership.EventSuspect: "suspect", membership.EventDead: "dead", membership.EventLeft: "left",
		membership.EventRemoved: "removed", membership.EventStateChanged: "state-changed",
		membership.EventSynced: "synced",
	}
	for k, want := range names {
		if k.String() != want {
			t.Fatalf("%d.String() = %q, want %q", k, k.String(), want)
		}
	}
	if got := (&membership.Config{}).RemoveAfterOrDefault(); got != membership.DefaultRemoveAfter {
		t.Fatalf("default RemoveAfter = %v", got)
	}
}
