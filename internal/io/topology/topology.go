// Package topology describes where a kura cluster's nodes sit: its datacenters (DCs), the
// nodes of each DC, and the latency, bandwidth, jitter and loss of the path inside each DC
// and between each pair of DCs. The transport and the simulator read it to emulate a WAN;
// the in-process cluster reads it to place nodes.
package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrInvalid marks every error Parse and Validate return, so callers can tell a bad
// topology from an I/O failure.
var ErrInvalid = errors.New("topology: invalid")

// ErrUnknownDC is returned by Link when a datacenter name is not in the topology.
var ErrUnknownDC = errors.New("topology: unknown datacenter")

// Topology is a parsed topology file.
type Topology struct {
	// Name identifies the topology, e.g. "tokyo-saopaulo".
	Name string `yaml:"name"`
	// Description says where the figures come from, for people reading bench output.
	Description string `yaml:"description,omitempty"`
	// Datacenters lists the DCs with the figures of the path between two nodes of the same DC.
	Datacenters []Datacenter `yaml:"datacenters"`
	// Links gives the path between each pair of distinct DCs; the path is symmetric.
	Links []Link `yaml:"links,omitempty"`
}

// Datacenter is one DC: its nodes and the path between two of them.
type Datacenter struct {
	// Name identifies the DC; node placement and accounting use it.
	Name string `yaml:"name"`
	// LatencyMs is the one-way latency between two nodes of this DC.
	LatencyMs float64 `yaml:"latency_ms"`
	// BandwidthMbps is the bandwidth between two nodes of this DC; 0 means unlimited.
	BandwidthMbps float64 `yaml:"bandwidth_mbps"`
	// JitterMs adds a uniform random delay in [0, JitterMs) to each message.
	JitterMs float64 `yaml:"jitter_ms,omitempty"`
	// Loss is the fraction of messages dropped, in [0, 1).
	Loss float64 `yaml:"loss,omitempty"`
	// Nodes lists the DC's nodes; it may be empty when a driver (e.g. the simulator)
	// generates nodes itself.
	Nodes []Node `yaml:"nodes"`
}

// Node is one node of a DC.
type Node struct {
	// ID names the node uniquely in the whole topology.
	ID string `yaml:"id"`
	// Addr is the node-to-node listen address; empty lets the in-process cluster choose.
	Addr string `yaml:"addr,omitempty"`
	// ClientAddr is the gRPC client API address; empty lets the in-process cluster choose.
	ClientAddr string `yaml:"client_addr,omitempty"`
}

// Link is the path between two distinct DCs, the same in both directions.
type Link struct {
	// Between names the two DCs the link joins.
	Between [2]string `yaml:"between"`
	// LatencyMs is the one-way latency.
	LatencyMs float64 `yaml:"latency_ms"`
	// BandwidthMbps is the bandwidth in each direction; 0 means unlimited.
	BandwidthMbps float64 `yaml:"bandwidth_mbps"`
	// JitterMs adds a uniform random delay in [0, JitterMs) to each message.
	JitterMs float64 `yaml:"jitter_ms,omitempty"`
	// Loss is the fraction of messages dropped, in [0, 1).
	Loss float64 `yaml:"loss,omitempty"`
}

// LinkSpec is the resolved model of the path from one DC to another (or inside one DC),
// in the units the transport and the simulator work in.
type LinkSpec struct {
	// Latency is the one-way delay of every message.
	Latency time.Duration
	// BandwidthBps is in bits per second; 0 means unlimited.
	BandwidthBps float64
	// Jitter adds a uniform random delay in [0, Jitter) to each message.
	Jitter time.Duration
	// Loss is the probability that a message is dropped.
	Loss float64
}

// NodeInDC is a node together with the DC it belongs to.
type NodeInDC struct {
	ID         string
	DC         string
	Addr       string
	ClientAddr string
}

// Parse reads a topology from YAML and validates it. Unknown fields are an error so that a
// misspelt figure (say `latency: 4`) cannot silently become 0.
func Parse(data []byte) (*Topology, error) {
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	decoder.KnownFields(true)
	var t Topology
	if err := decoder.Decode(&t); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty document", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Load reads and parses the topology file at path.
func Load(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("topology: load: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

// Validate checks what Parse checks; callers that build a Topology in code (e.g. the
// simulator's generated layouts) call it themselves. Rules: at least one DC; DC names and
// node ids present and unique; node addresses unique; every link joins two distinct known
// DCs; every pair of distinct DCs has exactly one link; figures finite, non-negative and
// small enough for a LinkSpec (delays within a time.Duration, bandwidth up to 1e15 Mbps);
// loss below 1.
func (t *Topology) Validate() error {
	if len(t.Datacenters) == 0 {
		return fmt.Errorf("%w: no datacenters", ErrInvalid)
	}
	if err := t.validateDatacenters(); err != nil {
		return err
	}
	return t.validateLinks()
}

func (t *Topology) validateDatacenters() error {
	dcNames := make(map[string]bool)
	nodeIDs := make(map[string]bool)
	addrs := make(map[string]string) // address -> node id using it
	for i, dc := range t.Datacenters {
		if dc.Name == "" {
			return fmt.Errorf("%w: datacenter %d has no name", ErrInvalid, i)
		}
		if dcNames[dc.Name] {
			return fmt.Errorf("%w: duplicate datacenter %q", ErrInvalid, dc.Name)
		}
		dcNames[dc.Name] = true
		where := fmt.Sprintf("datacenter %q", dc.Name)
		if err := validateFigures(where, dc.LatencyMs, dc.BandwidthMbps, dc.JitterMs, dc.Loss); err != nil {
			return err
		}
		for j, node := range dc.Nodes {
			if node.ID == "" {
				return fmt.Errorf("%w: %s: node %d has no id", ErrInvalid, where, j)
			}
			if nodeIDs[node.ID] {
				return fmt.Errorf("%w: duplicate node id %q", ErrInvalid, node.ID)
			}
			nodeIDs[node.ID] = true
			for _, addr := range []string{node.Addr, node.ClientAddr} {
				if addr == "" {
					continue
				}
				if other, used := addrs[addr]; used {
					return fmt.Errorf("%w: address %s used by both %q and %q", ErrInvalid, addr, other, node.ID)
				}
				addrs[addr] = node.ID
			}
		}
	}
	return nil
}

func (t *Topology) validateLinks() error {
	seen := make(map[[2]string]bool)
	for i, link := range t.Links {
		a, b := link.Between[0], link.Between[1]
		where := fmt.Sprintf("link %d between %q and %q", i, a, b)
		for _, name := range link.Between {
			if t.datacenter(name) == nil {
				return fmt.Errorf("%w: %s: no datacenter named %q", ErrInvalid, where, name)
			}
		}
		if a == b {
			return fmt.Errorf("%w: %s: a datacenter's own figures go on the datacenter, not on a link", ErrInvalid, where)
		}
		key := pairKey(a, b)
		if seen[key] {
			return fmt.Errorf("%w: more than one link between %q and %q", ErrInvalid, a, b)
		}
		seen[key] = true
		if err := validateFigures(where, link.LatencyMs, link.BandwidthMbps, link.JitterMs, link.Loss); err != nil {
			return err
		}
	}
	for i, from := range t.Datacenters {
		for _, to := range t.Datacenters[i+1:] {
			if !seen[pairKey(from.Name, to.Name)] {
				return fmt.Errorf("%w: no link between %q and %q", ErrInvalid, from.Name, to.Name)
			}
		}
	}
	return nil
}

// maxDelayMs is the longest latency or jitter a time.Duration holds, about 292 years: a
// longer one would wrap around to a negative delay in the LinkSpec.
const maxDelayMs = float64(math.MaxInt64 / int64(time.Millisecond))

// maxBandwidthMbps, a zettabit per second, is beyond any link, and keeps the LinkSpec's
// bits per second finite: near float64's limit they would overflow to infinity.
const maxBandwidthMbps = 1e15

// validateFigures checks the four path figures shared by datacenters and links.
func validateFigures(where string, latencyMs, bandwidthMbps, jitterMs, loss float64) error {
	for _, figure := range []struct {
		name  string
		value float64
		max   float64
	}{
		{"latency_ms", latencyMs, maxDelayMs},
		{"bandwidth_mbps", bandwidthMbps, maxBandwidthMbps},
		{"jitter_ms", jitterMs, maxDelayMs},
		{"loss", loss, 1},
	} {
		// The negated comparison also rejects NaN.
		if !(figure.value >= 0) || math.IsInf(figure.value, 0) {
			return fmt.Errorf("%w: %s: %s %v must be a finite, non-negative number", ErrInvalid, where, figure.name, figure.value)
		}
		if figure.value > figure.max {
			return fmt.Errorf("%w: %s: %s %v exceeds the largest usable value, %v", ErrInvalid, where, figure.name, figure.value, figure.max)
		}
	}
	if loss >= 1 {
		return fmt.Errorf("%w: %s: loss %v must be below 1", ErrInvalid, where, loss)
	}
	return nil
}

// pairKey orders two DC names so that a link is found from either end.
func pairKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Link returns the path from fromDC to toDC; for fromDC == toDC it is the DC's own path.
// It scans the lists, which is cheap for a handful of DCs; hot paths (the transport)
// resolve each DC pair once and keep the result.
func (t *Topology) Link(fromDC, toDC string) (LinkSpec, error) {
	for _, name := range []string{fromDC, toDC} {
		if t.datacenter(name) == nil {
			return LinkSpec{}, fmt.Errorf("%w %q", ErrUnknownDC, name)
		}
	}
	if fromDC == toDC {
		dc := t.datacenter(fromDC)
		return linkSpec(dc.LatencyMs, dc.BandwidthMbps, dc.JitterMs, dc.Loss), nil
	}
	want := pairKey(fromDC, toDC)
	for _, link := range t.Links {
		if pairKey(link.Between[0], link.Between[1]) == want {
			return linkSpec(link.LatencyMs, link.BandwidthMbps, link.JitterMs, link.Loss), nil
		}
	}
	return LinkSpec{}, fmt.Errorf("%w: no link between %q and %q", ErrInvalid, fromDC, toDC)
}

// linkSpec converts the file's human units into the LinkSpec's.
func linkSpec(latencyMs, bandwidthMbps, jitterMs, loss float64) LinkSpec {
	return LinkSpec{
		Latency:      millis(latencyMs),
		BandwidthBps: bandwidthMbps * 1e6,
		Jitter:       millis(jitterMs),
		Loss:         loss,
	}
}

func millis(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// DCOf returns the DC of the node with the given id.
func (t *Topology) DCOf(nodeID string) (string, bool) {
	for _, dc := range t.Datacenters {
		for _, node := range dc.Nodes {
			if node.ID == nodeID {
				return dc.Name, true
			}
		}
	}
	return "", false
}

// Nodes lists every node with its DC, in file order.
func (t *Topology) Nodes() []NodeInDC {
	var nodes []NodeInDC
	for _, dc := range t.Datacenters {
		for _, node := range dc.Nodes {
			nodes = append(nodes, NodeInDC{ID: node.ID, DC: dc.Name, Addr: node.Addr, ClientAddr: node.ClientAddr})
		}
	}
	return nodes
}

func (t *Topology) datacenter(name string) *Datacenter {
	for i := range t.Datacenters {
		if t.Datacenters[i].Name == name {
			return &t.Datacenters[i]
		}
	}
	return nil
}
