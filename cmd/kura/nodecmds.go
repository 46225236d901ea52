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

// nodeScope is which nodes a command's --addr may name, and what --timeout bounds.
type nodeScope int

const (
	// oneNode: --addr is one node's address.
	oneNode nodeScope = iota
	// eachNode: --addr is a comma-separated list of nodes the command acts on in turn;
	// --timeout bounds each.
	eachNode
	// nodesOrAll: --addr is a comma-separated list of nodes the command acts on together,
	// or with --all one node, whose members it acts on; --timeout bounds the whole.
	nodesOrAll
)

// nodeFlags are the flags of every command that speaks to the admin API of nodes the
// operator names: --addr, --all where the scope takes it, --timeout and the security
// flags. One set, so that the commands spell, explain and check them alike.
type nodeFlags struct {
	scope    nodeScope
	addr     *string
	all      *bool // nil unless the scope is nodesOrAll
	timeout  *time.Duration
	security securityFlags
}

// addNodeFlags adds them to fs for a command of the given scope, with timeout the
// default of --timeout.
func addNodeFlags(fs *flag.FlagSet, scope nodeScope, timeout time.Duration) nodeFlags {
	addrUsage, timeoutUsage := "client API address of the node to act on", "how long to wait for the operation to complete"
	switch scope {
	case eachNode:
		addrUsage, timeoutUsage = addrUsage+" (comma-separated: each in turn)", "how long to wait for each node"
	case nodesOrAll:
		addrUsage, timeoutUsage = addrUsage+" (comma-separated: each of them)", "how long to wait for the whole operation"
	}
	f := nodeFlags{
		scope:    scope,
		addr:     fs.String("addr", defaultClientAddr, addrUsage),
		timeout:  fs.Duration("timeout", timeout, timeoutUsage),
		security: addSecurityFlags(fs),
	}
	if scope == nodesOrAll {
		f.all = fs.Bool("all", false, "act on every member of the cluster that the node at --addr knows")
	}
	return f
}

// addrs returns the addresses --addr names, in order, spaces around them trimmed. It
// refuses an empty one, one named twice (a command would act on that node twice), a
// list where the command acts on one node, and a list with --all, which asks one node
// for the members.
func (f nodeFlags) addrs() ([]string, error) {
	addrs := strings.Split(*f.addr, ",")
	seen := map[string]bool{}
	for i, a := range addrs {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
			return nil, fmt.Errorf("%w: --addr %q: an empty address", errUsage, *f.addr)
		case seen[a]:
			return nil, fmt.Errorf("%w: --addr %q names %s twice", errUsage, *f.addr, a)
		}
		seen[a], addrs[i] = true, a
	}
	switch {
	case len(addrs) > 1 && f.scope == oneNode:
		return nil, fmt.Errorf("%w: --addr %q: this command acts on one node; give one address", errUsage, *f.addr)
	case len(addrs) > 1 && f.all != nil && *f.all:
		return nil, fmt.Errorf("%w: --all asks the node at --addr for the members: give one address, not %q", errUsage, *f.addr)
	}
	return addrs, nil
}

// withAdmin dials the one node the flags name, runs fn, and closes the connection.
func (f nodeFlags) withAdmin(fn func(ctx context.Context, admin kurav1.AdminClient) error) error {
	addrs, err := f.addrs()
	if err != nil {
		return err
	}
	return f.adminAt(addrs[0], fn)
}

// eachAdmin runs fn on each node the flags name, in turn, each within --timeout; it
// stops at the first error, which names the node.
func (f nodeFlags) eachAdmin(fn func(ctx context.Context, addr string, admin kurav1.AdminClient) error) error {
	addrs, err := f.addrs()
	if err != nil {
		return err
	}
	for _, addr := range addrs {
		err := f.adminAt(addr, func(ctx context.Context, admin kurav1.AdminClient) error {
			return fn(ctx, addr, admin)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
	}
	return nil
}

// adminAt dials the node at addr, runs fn within --timeout, and closes the connection.
func (f nodeFlags) adminAt(addr string, fn func(ctx context.Context, admin kurav1.AdminClient) error) error {
	opts, err := f.security.options()
	if err != nil {
		return err
	}
	conn, err := client.DialNode(addr, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *f.timeout)
	defer cancel()
	return client.ExplainAt(addr, fn(ctx, kurav1.NewAdminClient(conn)))
}

// runNode is `kura node decommission` and `kura node remove ID`.
func runNode(args []string, stdout, stderr io.Writer) error {
	const usage = "node decommission [--force] | node remove ID [--force]"
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	if isHelp(args[0]) {
		return subcommandHelp(stderr, usage, "node")
	}
	sub := args[0]
	fs := newFlagSet("node "+sub, stderr)
	nf := addNodeFlags(fs, oneNode, time.Hour)
	force := fs.Bool("force", false, "decommission or remove the node even when that leaves its DC with fewer nodes than a keyspace's replication factor there (refused otherwise: its ranges keep fewer copies there until a node joins that DC); node remove: also abort the join of a dead joiner whose arbiter is down too")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	var resp *kurav1.MoveResponse
	switch {
	case sub == "decommission" && len(pos) == 0:
		err = nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) (err error) {
			fmt.Fprintf(stdout, "decommissioning the node at %s: streaming its ranges to their new owners...\n", *nf.addr)
			resp, err = admin.Decommission(ctx, &kurav1.DecommissionRequest{Force: *force})
			return err
		})
	case sub == "remove" && len(pos) == 1:
		err = nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) (err error) {
			fmt.Fprintf(stdout, "removing node %s: streaming its ranges from the surviving replicas...\n", pos[0])
			resp, err = admin.RemoveNode(ctx, &kurav1.RemoveNodeRequest{Id: pos[0], Force: *force})
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
	nf := addNodeFlags(fs, eachNode, time.Hour)
	keyspace := fs.String("keyspace", "", "keyspace to clean up (empty: every keyspace)")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("%w: cleanup takes no arguments, only flags", errUsage)
	}
	several := strings.Contains(*nf.addr, ",")
	return nf.eachAdmin(func(ctx context.Context, addr string, admin kurav1.AdminClient) error {
		resp, err := admin.Cleanup(ctx, &kurav1.CleanupRequest{Keyspace: *keyspace})
		if err != nil {
			return err
		}
		if several {
			fmt.Fprintf(stdout, "%s: ", addr)
		}
		fmt.Fprintf(stdout, "removed %d records (%s) this node no longer owns\n", resp.GetRecordsRemoved(), formatBytes(resp.GetRemovedBytes()))
		return nil
	})
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
