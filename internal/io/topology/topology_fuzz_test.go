package topology

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzParse parses arbitrary bytes as a topology file. Parsing must not panic and must
// fail with ErrInvalid. A topology that parses must validate, give every pair of its
// DCs a link whose figures the transport and the simulator can use (no negative delay, no
// infinite bandwidth, loss below 1), place every node in its DC, and survive being written
// out as YAML and parsed again.
func FuzzParse(f *testing.F) {
	f.Add([]byte(twoDC))
	for _, name := range ExampleNames() {
		data, err := examples.ReadFile("examples/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"datacenters: [",
		"datacenters: [{name: a, latency_ms: .nan, bandwidth_mbps: 0, nodes: []}]",
		"datacenters: [{name: a, latency_ms: 1, bandwidth_mbps: 0, nodes: [{id: x}, {id: x}]}]",
		"datacenters: &d [{name: a, latency_ms: 1, bandwidth_mbps: 0, nodes: *d}]",
		"name: t\n---\nname: u\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse: %v, want ErrInvalid", err)
			}
			return
		}
		if err := topo.Validate(); err != nil {
			t.Fatalf("parsed, then Validate: %v", err)
		}
		for _, from := range topo.Datacenters {
			for _, to := range topo.Datacenters {
				checkLink(t, topo, from.Name, to.Name)
			}
		}
		for _, node := range topo.Nodes() {
			if dc, ok := topo.DCOf(node.ID); !ok || dc != node.DC {
				t.Fatalf("node %q listed in DC %q, DCOf says %q, %v", node.ID, node.DC, dc, ok)
			}
		}
		out, err := yaml.Marshal(topo)
		if err != nil {
			t.Fatalf("writing the topology out: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("the topology written out does not parse: %v\n%s", err, out)
		}
		if out2, err := yaml.Marshal(again); err != nil || !bytes.Equal(out2, out) {
			t.Fatalf("written out, parsed and written again, the topology changed:\n%s\nthen\n%s", out, out2)
		}
	})
}

// checkLink checks that the path from one DC to another has usable figures.
func checkLink(t *testing.T, topo *Topology, from, to string) {
	t.Helper()
	spec, err := topo.Link(from, to)
	switch {
	case err != nil:
		t.Fatalf("Link(%q, %q): %v", from, to, err)
	case spec.Latency < 0, spec.Jitter < 0:
		t.Fatalf("Link(%q, %q) = %+v: a negative delay", from, to, spec)
	case !(spec.BandwidthBps >= 0) || math.IsInf(spec.BandwidthBps, 0):
		t.Fatalf("Link(%q, %q) = %+v: bandwidth not a finite, non-negative number", from, to, spec)
	case !(spec.Loss >= 0 && spec.Loss < 1):
		t.Fatalf("Link(%q, %q) = %+v: loss outside [0, 1)", from, to, spec)
	}
}
