package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/schema"
)

// runRebalance balances an ordered keyspace over the nodes: the node it speaks to
// samples the keyspace's keys, computes split keys and moves the data, streaming each
// step, which is printed as it arrives; then the rows per node before and after.
func runRebalance(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rebalance", stderr)
	nf := addNodeFlags(fs, oneNode, time.Hour)
	fs.Lookup("addr").Usage = "client API address of the node that runs the rebalance"
	keyspace := fs.String("keyspace", "", "the ordered keyspace to balance")
	splits := fs.Int("splits", defaultSplits, "how many split keys to compute from the sample")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return fmt.Errorf("%w: rebalance takes no arguments, only flags", errUsage)
	case *keyspace == "":
		return fmt.Errorf("%w: rebalance --keyspace KS [--splits N]", errUsage)
	case *splits < 1 || *splits > schema.MaxSplits:
		return fmt.Errorf("%w: --splits %d: want 1 to %d", errUsage, *splits, schema.MaxSplits)
	}
	return nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) error {
		stream, err := admin.Rebalance(ctx, &kurav1.RebalanceRequest{Keyspace: *keyspace, Splits: uint32(*splits)})
		if err != nil {
			return err
		}
		return printMove(stream, stdout)
	})
}

// printMove prints each step of a move (a rebalance or an alter) as it arrives, then
// the rows per node before and after.
func printMove(stream interface {
	Recv() (*kurav1.RebalanceProgress, error)
}, stdout io.Writer) error {
	var last *kurav1.RebalanceProgress
	start := time.Now()
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "[%5.1fs] %s\n", time.Since(start).Seconds(), p.GetStep())
		last = p
	}
	if last != nil && len(last.GetBefore()) > 0 {
		printRowSpread(stdout, last.GetBefore(), last.GetAfter())
	}
	return nil
}

// printRowSpread prints each node's rows before and after, and the spread of both.
func printRowSpread(w io.Writer, before, after []*kurav1.NodeRows) {
	afterRows := map[string]int64{}
	for _, r := range after {
		afterRows[r.GetNode()] = r.GetRows()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODE\tROWS BEFORE\tROWS AFTER\t")
	for _, r := range before {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", r.GetNode(), r.GetRows(), afterRows[r.GetNode()])
	}
	tw.Flush()
	fmt.Fprintf(w, "rows per node before: %s\n", spreadLine(before))
	fmt.Fprintf(w, "rows per node after:  %s\n", spreadLine(after))
}

// spreadLine is min, mean and max of the rows per node, and max over mean (1: even).
func spreadLine(rows []*kurav1.NodeRows) string {
	if len(rows) == 0 {
		return "none"
	}
	least, most, total := rows[0].GetRows(), rows[0].GetRows(), int64(0)
	for _, r := range rows {
		least, most = min(least, r.GetRows()), max(most, r.GetRows())
		total += r.GetRows()
	}
	mean := float64(total) / float64(len(rows))
	ratio := 0.0
	if mean > 0 {
		ratio = float64(most) / mean
	}
	return fmt.Sprintf("min %d, mean %.0f, max %d, max/mean %.2f", least, mean, most, ratio)
}
