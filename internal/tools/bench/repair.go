package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/antientropy"
)

func init() {
	Register(Bench{
		Name:    "repair",
		Summary: "anti-entropy repair: bytes a repair of agreeing replicas costs against the data, and the time and bytes to rebuild a wiped node",
		Setup:   setupRepair,
	})
}

func setupRepair(fs *flag.FlagSet) Runner {
	topologyName := fs.String("topology", "three-dc", "topology example or file of the cluster")
	replication := fs.String("replication", "simple=3", "the keyspace's replication")
	// 20 MB of data: with much less, a repair's fixed price per range (a tree request per
	// range and replica) is most of what it sends, which says little of what it costs.
	keys := fs.Int("keys", 20000, "keys written before the repairs")
	valueBytes := fs.Int("value-bytes", 1024, "size of each value")
	emulate := fs.Bool("emulate-wan", true, "shape traffic between DCs by the topology's latency and bandwidth")
	return func(ctx context.Context, env Env) (*Report, error) {
		if *keys < 1 || *valueBytes < 1 {
			return nil, errors.New("--keys and --value-bytes must be positive")
		}
		topo, err := loadRoutingTopology(*topologyName)
		if err != nil {
			return nil, err
		}
		c, err := embedded.Start(topo, embedded.Options{EmulateWAN: *emulate, Node: node.Config{GossipInterval: 200 * time.Millisecond}})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		wiped := c.Nodes[len(c.Nodes)-1].ID()
		f, err := MeasureRepair(ctx, env, c, schema.Keyspace{Name: "repair", Replication: *replication}, *keys, *valueBytes, wiped)
		if err != nil {
			return nil, err
		}
		return f.Report(topo.Name, *emulate), nil
	}
}

// RepairCost is what one repair took: wall time, the repair's own counts, and the bytes
// the transport carried meanwhile in the kinds a repair sends (tree_digest, scan,
// mutate), frames and requests included.
type RepairCost struct {
	Seconds            float64 `json:"seconds"`
	Ranges             int     `json:"ranges"`
	DifferingSubranges int     `json:"differing_subranges"`
	RecordsSent        int     `json:"records_sent"`
	TreeBytes          int64   `json:"tree_bytes"`
	RecordBytes        int64   `json:"record_bytes"`
	TransportBytes     int64   `json:"transport_bytes"`
	InterDCBytes       int64   `json:"interdc_bytes"`
}

// RepairFigures are MeasureRepair's results.
type RepairFigures struct {
	Keys        int
	DataBytes   int64 // key and value bytes written, counted once
	StoredBytes int64 // key and value bytes stored, over every replica
	// InSync is a repair from every node in turn, while every replica agrees.
	InSync RepairCost
	// Rebuild is the repair from the wiped node, which restarted with no data.
	Rebuild RepairCost
	Wiped   string
	// WipedRecords is what the wiped node stored before it lost its data, and
	// RebuiltRecords what it stores after its repair.
	WipedRecords, RebuiltRecords int
}

// MeasureRepair writes keys values of valueBytes to the replicated keyspace ks of c (at
// ALL, so every replica agrees), then measures (a) a repair from every node in turn,
// whose bytes against the data size are the price of checking agreeing replicas, and (b)
// the repair that rebuilds node wiped after it loses its data: it is stopped and
// restarted empty, so c must keep its nodes in memory (embedded.Options.DataDir empty).
func MeasureRepair(ctx context.Context, env Env, c *embedded.Cluster, ks schema.Keyspace, keys, valueBytes int, wiped string) (RepairFigures, error) {
	f := RepairFigures{Keys: keys, Wiped: wiped}
	if err := c.CreateKeyspace(ctx, ks); err != nil {
		return f, err
	}
	// The work: the writes, a repair from each node, the rebuild's repair.
	progress := env.StartProgress("repair", float64(len(c.Nodes)+2))
	defer progress.Done()
	progress.Add(0, "writing %d keys of %d bytes at ALL", keys, valueBytes)
	var err error
	if f.DataBytes, err = loadRepairKeys(ctx, c, ks.Name, keys, valueBytes); err != nil {
		return f, err
	}
	for _, n := range c.Nodes {
		_, stored, err := n.StoredBytes(ks.Name)
		if err != nil {
			return f, err
		}
		f.StoredBytes += stored
		if n.ID() == wiped {
			if f.WipedRecords, _, err = n.StoredBytes(ks.Name); err != nil {
				return f, err
			}
		}
	}

	progress.Add(1, "repairing from each of the %d nodes, every replica agreeing", len(c.Nodes))
	if f.InSync, err = measureRepairs(ctx, c, c.Nodes, ks.Name, progress); err != nil {
		return f, err
	}

	progress.Add(0, "wiping %s and repairing it", wiped)
	if err := c.Stop(wiped); err != nil {
		return f, err
	}
	if err := c.Restart(wiped); err != nil {
		return f, err
	}
	if err := c.WaitConverged(ctx); err != nil {
		return f, err
	}
	n := c.Node(wiped)
	if err := waitForKeyspace(ctx, n, ks.Name); err != nil {
		return f, err
	}
	if f.Rebuild, err = measureRepairs(ctx, c, []*node.Node{n}, ks.Name, progress); err != nil {
		return f, err
	}
	f.RebuiltRecords, _, err = n.StoredBytes(ks.Name)
	return f, err
}

// loadRepairKeys writes the keys from a few writers at once (a WAN round trip each) and
// returns the bytes written.
func loadRepairKeys(ctx context.Context, c *embedded.Cluster, keyspace string, keys, valueBytes int) (int64, error) {
	const writers = 32
	value := make([]byte, valueBytes)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			co := c.Nodes[w%len(c.Nodes)].Coordinator()
			for i := w; i < keys && errs[w] == nil; i += writers {
				_, errs[w] = co.Put(ctx, keyspace, repairKey(i), value, 0, consistency.All)
			}
		})
	}
	wg.Wait()
	var data int64
	for i := range keys {
		data += int64(len(repairKey(i)) + valueBytes)
	}
	return data, errors.Join(errs...)
}

func repairKey(i int) []byte { return fmt.Appendf(nil, "key-%07d", i) }

// waitForKeyspace waits until a restarted node has learned keyspace from the others.
func waitForKeyspace(ctx context.Context, n *node.Node, keyspace string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := n.Keyspace(keyspace); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s never learned keyspace %s: %w", n.ID(), keyspace, ctx.Err())
		case <-tick.C:
		}
	}
}

// repairKinds are the message kinds a repair of a replicated keyspace sends.
var repairKinds = map[string]bool{"tree_digest": true, "scan": true, "mutate": true}

// measureRepairs repairs keyspace from each of nodes in turn and adds up what it cost.
func measureRepairs(ctx context.Context, c *embedded.Cluster, nodes []*node.Node, keyspace string, progress *Progress) (RepairCost, error) {
	before := c.Stats.Snapshot()
	start := time.Now()
	var st antientropy.Stats
	for _, n := range nodes {
		s, err := n.Repair(ctx, antientropy.Request{Keyspace: keyspace})
		if err != nil {
			return RepairCost{}, fmt.Errorf("repair from %s: %w", n.ID(), err)
		}
		if s.Failed > 0 {
			return RepairCost{}, fmt.Errorf("repair from %s left %d ranges unfinished", n.ID(), s.Failed)
		}
		st.Ranges += s.Ranges
		st.DifferingSubranges += s.DifferingSubranges
		st.RecordsSent += s.RecordsSent
		st.TreeBytes += s.TreeBytes
		st.RecordBytes += s.RecordBytes
		progress.Add(1, "repaired from %s", n.ID())
	}
	cost := RepairCost{
		Seconds:            time.Since(start).Seconds(),
		Ranges:             st.Ranges,
		DifferingSubranges: st.DifferingSubranges,
		RecordsSent:        st.RecordsSent,
		TreeBytes:          st.TreeBytes,
		RecordBytes:        st.RecordBytes,
	}
	for flow, counter := range c.Stats.Snapshot() {
		if !repairKinds[flow.Kind.String()] {
			continue // gossip goes on meanwhile
		}
		d := int64(counter.Bytes - before[flow].Bytes)
		cost.TransportBytes += d
		if flow.FromDC != flow.ToDC {
			cost.InterDCBytes += d
		}
	}
	return cost, nil
}

// RepairRow is one measured repair of the bench's table.
type RepairRow struct {
	Case       string `json:"case"`
	RepairCost `table:"seconds,differing_subranges,records_sent,tree_bytes,record_bytes,transport_bytes,interdc_bytes"`
	// TransportBytesPerDataByte is the repair's traffic over the data written once.
	TransportBytesPerDataByte float64 `json:"transport_bytes_per_data_byte"`
	RecordsRebuilt            int     `json:"records_rebuilt"`
}

// Report lays the figures out as the bench's report.
func (f RepairFigures) Report(topology string, emulated bool) *Report {
	perData := func(c RepairCost) float64 { return float64(c.TransportBytes) / float64(f.DataBytes) }
	wan := "emulated"
	if !emulated {
		wan = "not emulated"
	}
	return &Report{
		Bench: "repair",
		Scale: fmt.Sprintf("%d keys, %d bytes of data (%d stored over all replicas), topology %s with its WAN %s, in one process",
			f.Keys, f.DataBytes, f.StoredBytes, topology, wan),
		Rows: []RepairRow{
			{Case: "in-sync, every node", RepairCost: f.InSync, TransportBytesPerDataByte: perData(f.InSync)},
			{Case: "rebuild wiped " + f.Wiped, RepairCost: f.Rebuild, TransportBytesPerDataByte: perData(f.Rebuild), RecordsRebuilt: f.RebuiltRecords},
		},
		Summary: map[string]any{
			"insync_transport_bytes_per_data_byte": perData(f.InSync),
			"rebuild_seconds":                      f.Rebuild.Seconds,
			"rebuild_transport_bytes":              f.Rebuild.TransportBytes,
			"wiped_records_before":                 f.WipedRecords,
			"wiped_records_after":                  f.RebuiltRecords,
		},
		Notes: []string{
			"tree_bytes and record_bytes are the payloads the repairs counted; transport_bytes is every tree_digest, scan and mutate frame the transport sent meanwhile, requests included.",
			"A rebuild reads each range from every other replica, so its transport bytes exceed the wiped node's data by about the replication factor less one.",
		},
	}
}
