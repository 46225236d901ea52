package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
)

// runRepair asks nodes, one after the other, to repair their ranges against the other
// replicas, and prints what each did. It speaks to the node named, not through the
// client's routing: a repair is run from the node whose data it checks.
func runRepair(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("repair", stderr)
	addr := fs.String("addr", defaultClientAddr, "client API address of the node to repair (comma-separated: each in turn)")
	keyspace := fs.String("keyspace", "", "keyspace to repair (empty: every keyspace)")
	dc := fs.String("dc", "", "compare only with the replicas in this datacenter (empty: all)")
	timeout := fs.Duration("timeout", time.Hour, "how long to wait for each node's repair")
	security := addSecurityFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: repair takes no arguments, only flags", errUsage)
	}
	opts, err := security.options()
	if err != nil {
		return err
	}
	var done []*kurav1.RepairResponse
	for _, a := range strings.Split(*addr, ",") {
		resp, err := repairNode(a, &kurav1.RepairRequest{Keyspace: *keyspace, Dc: *dc}, *timeout, opts)
		if err != nil {
			printRepairs(stdout, done)
			return err
		}
		done = append(done, resp)
	}
	printRepairs(stdout, done)
	return nil
}

// repairNode runs one node's repair.
func repairNode(addr string, req *kurav1.RepairRequest, timeout time.Duration, opts client.Options) (*kurav1.RepairResponse, error) {
	conn, err := client.DialNode(addr, opts)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := kurav1.NewAdminClient(conn).Repair(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("repair at %s: %w", addr, client.ExplainAt(addr, err))
	}
	return resp, nil
}

// printRepairs prints one line per node repaired.
func printRepairs(w io.Writer, repairs []*kurav1.RepairResponse) {
	if len(repairs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tRANGES\tDIFFERING\tREAD\tSENT\tSKIPPED\tTREE_BYTES\tRECORD_BYTES\tCHUNKS_REBUILT\tFAILED\tTOOK")
	for _, r := range repairs {
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1fs\n", r.GetNode(), r.GetRanges(),
			r.GetDifferingSubranges(), r.GetSubranges(), r.GetRecordsRead(), r.GetRecordsSent(), r.GetSkipped(),
			r.GetBytesTrees(), r.GetBytesRecords()+r.GetBytesListing(), r.GetChunksRebuilt(), r.GetFailed(), r.GetSeconds())
	}
	tw.Flush()
}
