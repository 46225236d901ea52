package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/kuradb/kura/api/kurav1"
)

// runRepair asks nodes, one after the other, to repair their ranges against the other
// replicas, and prints what each did. It speaks to the node named, not through the
// client's routing: a repair is run from the node whose data it checks.
func runRepair(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("repair", stderr)
	nf := addNodeFlags(fs, eachNode, time.Hour)
	keyspace := fs.String("keyspace", "", "keyspace to repair (empty: every keyspace)")
	dc := fs.String("dc", "", "compare only with the replicas in this datacenter (empty: all)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: repair takes no arguments, only flags", errUsage)
	}
	var done []*kurav1.RepairResponse
	err = nf.eachAdmin(func(ctx context.Context, _ string, admin kurav1.AdminClient) error {
		resp, err := admin.Repair(ctx, &kurav1.RepairRequest{Keyspace: *keyspace, Dc: *dc})
		if err != nil {
			return err
		}
		done = append(done, resp)
		return nil
	})
	printRepairs(stdout, done)
	return err
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
			r.GetTreeBytes(), r.GetRecordBytes()+r.GetListingBytes(), r.GetChunksRebuilt(), r.GetFailed(), r.GetSeconds())
	}
	tw.Flush()
}
