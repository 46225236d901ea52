package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
)

func TestMeasureRepair(t *testing.T) {
	topo, err := topology.Example("lan-3")
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{Node: node.Config{GossipInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wiped := c.Nodes[2].ID()
	f, err := MeasureRepair(ctx, Env{}, c, schema.Keyspace{Name: "repair", Replication: "simple=2"}, 200, 100, wiped)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case f.DataBytes != int64(200*(len(repairKey(0))+100)) || f.StoredBytes != 2*f.DataBytes:
		t.Errorf("data %d bytes, stored %d: want every key twice", f.DataBytes, f.StoredBytes)
	case f.InSync.Ranges == 0 || f.InSync.RecordsSent != 0 || f.InSync.RecordBytes != 0 || f.InSync.TreeBytes == 0:
		t.Errorf("the in-sync repair moved more than trees: %+v", f.InSync)
	case f.WipedRecords == 0 || f.RebuiltRecords != f.WipedRecords || f.Rebuild.RecordsSent != f.WipedRecords:
		t.Errorf("the wiped node had %d records, has %d after a repair that sent %d", f.WipedRecords, f.RebuiltRecords, f.Rebuild.RecordsSent)
	}
	var table bytes.Buffer
	if err := f.Report(topo.Name, false).WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "rebuild wiped "+wiped) || !strings.Contains(table.String(), "transport_bytes_per_data_byte") {
		t.Errorf("the table lacks its rows:\n%s", table.String())
	}
}
