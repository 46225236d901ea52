package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
)

// nodeFlags are the flags of the commands that act on one node: its client address, and
// a timeout long enough for streaming.
type nodeFlags struct {
	addr     *string
	timeout  *time.Duration
	security securityFlags
}

// addNodeFlags adds them, with timeout the default of --timeout.
func addNodeFlags(fs *flag.FlagSet, timeout time.Duration) nodeFlags {
	return nodeFlags{
		addr:     fs.String("addr", defaultClientAddr, "client API address of the node to act on"),
		timeout:  fs.Duration("timeout", timeout, "how long to wait for the operation to complete"),
		security: addSecurityFlags(fs),
	}
}

// withAdmin dials the one node the flags name, runs fn, and closes the connection.
func (f nodeFlags) withAdmin(fn func(ctx context.Context, admin kurav1.AdminClient) error) error {
	opts, err := f.security.options()
	if err != nil {
		return err
	}
	conn, err := client.DialNode(*f.addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *f.timeout)
	defer cancel()
	return client.ExplainAt(*f.addr, fn(ctx, kurav1.NewAdminClient(conn)))
}

// runNode is `kura node decommission` and `kura node remove ID`.
func runNode(args []string, stdout, stderr io.Writer) error {
	const usage = "node decommission | node remove ID"
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	if isHelp(args[0]) {
		return subcommandHelp(stderr, usage, "node")
	}
	sub := args[0]
	fs := newFlagSet("node "+sub, stderr)
	nf := addNodeFlags(fs, time.Hour)
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	var resp *kurav1.MoveResponse
	switch {
	case sub == "decommission" && len(pos) == 0:
		fmt.Fprintf(stdout, "decommissioning the node at %s: streaming its ranges to their new owners...\n", *nf.addr)
		err = nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) (err error) {
			resp, err = admin.Decommission(ctx, &kurav1.DecommissionRequest{})
			return err
		})
	case sub == "remove" && len(pos) == 1:
		fmt.Fprintf(stdout, "removing node %s: streaming its ranges from the surviving replicas...\n", pos[0])
		err = nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) (err error) {
			resp, err = admin.RemoveNode(ctx, &kurav1.RemoveNodeRequest{Id: pos[0]})
			return err
		})
	default:
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done in %.1f s: %d ranges, %d records, %s streamed (%s across DCs) to %v\n",
		resp.GetSeconds(), resp.GetRanges(), resp.GetRecords(), formatBytes(resp.GetBytes()), formatBytes(resp.GetCrossDcBytes()), resp.GetGainers())
	return nil
}

// runCleanup is `kura cleanup [--keyspace KS]`.
func runCleanup(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cleanup", stderr)
	nf := addNodeFlags(fs, time.Hour)
	fs.Lookup("addr").Usage = "client API address of the node to clean up (comma-separated: each in turn)"
	keyspace := fs.String("keyspace", "", "keyspace to clean up (empty: every keyspace)")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("%w: cleanup takes no arguments, only flags", errUsage)
	}
	addrs := strings.Split(*nf.addr, ",")
	for _, addr := range addrs {
		one := nf
		one.addr = &addr
		err := one.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) error {
			resp, err := admin.Cleanup(ctx, &kurav1.CleanupRequest{Keyspace: *keyspace})
			if err != nil {
				return err
			}
			if len(addrs) > 1 {
				fmt.Fprintf(stdout, "%s: ", addr)
			}
			fmt.Fprintf(stdout, "removed %d records (%s) this node no longer owns\n", resp.GetRecordsRemoved(), formatBytes(resp.GetBytesRemoved()))
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
	}
	return nil
}

// formatBytes prints a byte count with a binary unit.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
