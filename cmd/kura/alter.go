package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kuradb/kura/api/kurav1"
)

// runKeyspaceAlter changes a keyspace's replication (kura keyspace alter NAME
// --replication ...), or ends a move cut short (--settle): the node it speaks to runs
// the move, streaming each step, which is printed as it arrives; then the rows per node
// before and after.
func runKeyspaceAlter(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keyspace alter", stderr)
	nf := addNodeFlags(fs, oneNode, time.Hour)
	fs.Lookup("addr").Usage = "client API address of the node that runs the change"
	replication := fs.String("replication", "", `the new replicas per DC ("dc1=3,dc2=1"; a DC given 0, or left out, loses its copies) or in all ("simple=3")`)
	settle := fs.Bool("settle", false, "end a move that was cut short (a rebalance's or an alter's) on its current placement; only when none runs any more")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (*replication == "") == !*settle {
		return fmt.Errorf("%w: keyspace alter NAME (--replication dc1=3,dc2=1 | --settle)", errUsage)
	}
	return nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) error {
		stream, err := admin.AlterKeyspace(ctx, &kurav1.AlterKeyspaceRequest{Keyspace: pos[0], Replication: *replication, Settle: *settle})
		if err != nil {
			return err
		}
		return printMove(stream, stdout)
	})
}
