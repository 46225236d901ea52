package topology

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// twoDC is a valid topology that the validation cases below break one field at a time.
const twoDC = `
name: t
datacenters:
  - name: a
    latency_ms: 0.5
    bandwidth_mbps: 100
    jitter_ms: 0.1
    nodes:
      - {id: a-1, addr: "127.0.0.1:7101", client_addr: "127.0.0.1:7201"}
      - {id: a-2}
  - name: b
    latency_ms: 1
    bandwidth_mbps: 0
    nodes: [{id: b-1}]
links:
  - between: [b, a]
    latency_ms: 30
    bandwidth_mbps: 2.5
    jitter_ms: 2
    loss: 0.01
`

func TestParseValid(t *testing.T) {
	topo, err := Parse([]byte(twoDC))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []NodeInDC{
		{ID: "a-1", DC: "a", Addr: "127.0.0.1:7101", ClientAddr: "127.0.0.1:7201"},
		{ID: "a-2", DC: "a"},
		{ID: "b-1", DC: "b"},
	}
	if got := topo.Nodes(); !reflect.DeepEqual(got, want) {
		t.Errorf("Nodes() = %+v, want %+v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // substring of the error
	}{
		{"empty document", "", "empty document"},
		{"not yaml", "datacenters: [", "yaml"},
		{"unknown field", strings.Replace(twoDC, "latency_ms: 30", "latency: 30", 1), "field latency not found"},
		{"no datacenters", "name: t\ndatacenters: []\n", "no datacenters"},
		{"dc without name", "datacenters: [{latency_ms: 0, bandwidth_mbps: 0, nodes: []}]", "datacenter 0 has no name"},
		{"duplicate dc", strings.Replace(twoDC, "name: b", "name: a", 1), `duplicate datacenter "a"`},
		{"node without id", strings.Replace(twoDC, "{id: a-2}", "{addr: x}", 1), "node 1 has no id"},
		{"duplicate node id", strings.Replace(twoDC, "{id: b-1}", "{id: a-1}", 1), `duplicate node id "a-1"`},
		{"duplicate address", strings.Replace(twoDC, "{id: a-2}", `{id: a-2, addr: "127.0.0.1:7201"}`, 1), "address 127.0.0.1:7201 used by both"},
		{"negative dc latency", strings.Replace(twoDC, "latency_ms: 0.5", "latency_ms: -0.5", 1), "latency_ms -0.5"},
		{"negative bandwidth", strings.Replace(twoDC, "bandwidth_mbps: 2.5", "bandwidth_mbps: -1", 1), "bandwidth_mbps -1"},
		{"negative jitter", strings.Replace(twoDC, "jitter_ms: 2", "jitter_ms: -2", 1), "jitter_ms -2"},
		{"NaN latency", strings.Replace(twoDC, "latency_ms: 30", "latency_ms: .nan", 1), "latency_ms NaN"},
		{"infinite latency", strings.Replace(twoDC, "latency_ms: 30", "latency_ms: .inf", 1), "latency_ms +Inf"},
		{"latency beyond a duration", strings.Replace(twoDC, "latency_ms: 30", "latency_ms: 1e300", 1), "latency_ms 1e+300 exceeds the largest usable value"},
		{"jitter beyond a duration", strings.Replace(twoDC, "jitter_ms: 2", "jitter_ms: 9.3e12", 1), "jitter_ms 9.3e+12 exceeds"},
		{"bandwidth beyond a float64 in bps", strings.Replace(twoDC, "bandwidth_mbps: 2.5", "bandwidth_mbps: 1e303", 1), "bandwidth_mbps 1e+303 exceeds"},
		{"negative loss", strings.Replace(twoDC, "loss: 0.01", "loss: -0.01", 1), "loss -0.01"},
		{"loss of 1", strings.Replace(twoDC, "loss: 0.01", "loss: 1", 1), "loss 1 must be below 1"},
		{"link to unknown dc", strings.Replace(twoDC, "[b, a]", "[b, c]", 1), `no datacenter named "c"`},
		{"link with three ends", strings.Replace(twoDC, "[b, a]", "[a, b, c]", 1), "want 2 elements but got 3"},
		{"link to itself", strings.Replace(twoDC, "[b, a]", "[a, a]", 1), "own figures go on the datacenter"},
		{"missing link", strings.Replace(twoDC, "links:", "  - {name: c, latency_ms: 0, bandwidth_mbps: 0, nodes: []}\nlinks:", 1), `no link between "a" and "c"`},
		{"duplicate link", twoDC + "  - {between: [a, b], latency_ms: 1, bandwidth_mbps: 1}\n", `more than one link between "a" and "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestLink(t *testing.T) {
	topo, err := Parse([]byte(twoDC))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	between := LinkSpec{Latency: 30 * time.Millisecond, BandwidthBps: 2.5e6, Jitter: 2 * time.Millisecond, Loss: 0.01}
	tests := []struct {
		from, to string
		want     LinkSpec
		wantErr  error
	}{
		{"a", "a", LinkSpec{Latency: 500 * time.Microsecond, BandwidthBps: 100e6, Jitter: 100 * time.Microsecond}, nil},
		{"b", "b", LinkSpec{Latency: time.Millisecond}, nil},
		{"a", "b", between, nil},
		{"b", "a", between, nil},
		{"a", "c", LinkSpec{}, ErrUnknownDC},
		{"c", "a", LinkSpec{}, ErrUnknownDC},
	}
	for _, tt := range tests {
		got, err := topo.Link(tt.from, tt.to)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Link(%s, %s) error = %v, want %v", tt.from, tt.to, err, tt.wantErr)
		}
		if got != tt.want {
			t.Errorf("Link(%s, %s) = %+v, want %+v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestDCOf(t *testing.T) {
	topo, err := Parse([]byte(twoDC))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		node   string
		wantDC string
		wantOK bool
	}{
		{"a-1", "a", true},
		{"a-2", "a", true},
		{"b-1", "b", true},
		{"c-1", "", false},
	}
	for _, tt := range tests {
		dc, ok := topo.DCOf(tt.node)
		if dc != tt.wantDC || ok != tt.wantOK {
			t.Errorf("DCOf(%s) = %q, %v; want %q, %v", tt.node, dc, ok, tt.wantDC, tt.wantOK)
		}
	}
}

func TestValidateBuiltInCode(t *testing.T) {
	topo := &Topology{Datacenters: []Datacenter{{Name: "a"}, {Name: "b"}}}
	if err := topo.Validate(); err == nil || !strings.Contains(err.Error(), `no link between "a" and "b"`) {
		t.Errorf("Validate() = %v, want the missing link named", err)
	}
	topo.Links = []Link{{Between: [2]string{"a", "b"}, LatencyMs: 4}}
	if err := topo.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(twoDC), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("datacenters: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if topo, err := Load(good); err != nil || topo.Name != "t" {
		t.Errorf("Load(good) = %v, %v", topo, err)
	}
	if _, err := Load(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad) {
		t.Errorf("Load(bad) error = %v, want ErrInvalid naming the file", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want os.ErrNotExist", err)
	}
}
