package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/base/version"
	"github.com/kuradb/kura/internal/core/cluster"
)

// opsTimeout is how long status, ring and info wait for the node: they only read its state.
const opsTimeout = 10 * time.Second

// runStatus is `kura status`: the members of the cluster (nodes on the ring, or moving
// onto or off it), as the named node sees them; --all adds the nodes that left or were
// removed.
func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	nf := addNodeFlags(fs, oneNode, opsTimeout)
	all := fs.Bool("all", false, "also list the nodes that left the cluster or were removed from it")
	st, err := askNode(fs, nf, args, "status takes no arguments, only flags", stdout,
		func(ctx context.Context, admin kurav1.AdminClient) (*kurav1.ClusterStatusResponse, error) {
			return admin.ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
		})
	if st == nil || err != nil {
		return err
	}
	if err := printStatus(stdout, st, *nf.addr, *all, time.Now()); err != nil {
		return err
	}
	printProtocols(stdout, st)
	printMembership(stdout, st.GetSelf(), st.GetMembership())
	printClock(stdout, st.GetSelf(), st.GetClock())
	if p := st.GetStreaming(); p.GetRangesTotal() > 0 {
		fmt.Fprintf(stdout, "streaming on %s: %d of %d ranges, %s records, %s (%s across DCs)\n", st.GetSelf(),
			p.GetRangesDone(), p.GetRangesTotal(), formatCount(p.GetRecords()), formatBytes(p.GetBytes()), formatBytes(p.GetCrossDcBytes()))
	}
	return nil
}

// printStatus prints kura status's header and node table from the answer of the node at
// addr. A node's directory keeps every node that ever left or was removed, for good (a
// removed node must stay removed until it comes back with a newer generation), so those
// are neither counted nor listed unless all is set, and then without an uptime.
func printStatus(w io.Writer, st *kurav1.ClusterStatusResponse, addr string, all bool, now time.Time) error {
	var members, up, gone int
	listed := map[string]bool{} // the members, by id: whom a "(replacing ...)" may name
	var selfGone *kurav1.NodeStatus
	for _, n := range st.GetNodes() {
		if departed(n) {
			gone++
			if n.GetId() == st.GetSelf() {
				selfGone = n
			}
			continue
		}
		members++
		listed[n.GetId()] = true
		if n.GetAlive() {
			up++
		}
	}
	fmt.Fprintf(w, "as seen by %s (at %s): %s, %d up", st.GetSelf(), addr, plural(members, "node"), up)
	switch {
	case !all || gone == 0:
	case gone == 1:
		fmt.Fprint(w, "; also 1 node that left or was removed")
	default:
		fmt.Fprintf(w, "; also %d nodes that left or were removed", gone)
	}
	fmt.Fprintln(w)
	if selfGone != nil {
		// Asked of a node that is no member any more, the table does not list the node
		// that answers: say why, rather than leave the operator looking for it.
		fmt.Fprintf(w, "WARNING: %s itself is %s: it is no longer a member of the cluster and refuses client requests; ask a member.\n",
			selfGone.GetId(), selfGone.GetStatus())
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tDC\tSTATUS\tSTATE\tLOAD\tKEYS\tOWNS\tUPTIME\tCLOCK\tCLIENT")
	for _, n := range st.GetNodes() {
		gone := departed(n)
		if gone && !all {
			continue
		}
		status := n.GetStatus()
		// A replacement names the node it replaces for good (its gossip and the ring keep
		// it); the marker says a replacement is under way, so it lasts only while the
		// replaced node is still a member, which it stops being once it is removed.
		if r := n.GetReplaces(); r != "" && listed[r] {
			status += " (replacing " + r + ")"
		}
		state := n.GetState()
		if p := n.GetPower(); p != "" && p != "active" && state != p {
			state += "/" + p
		}
		load, keys := "-", "-"
		if n.GetLoadKnown() {
			load, keys = formatBytes(n.GetLoadBytes()), formatCount(n.GetLoadKeys())
		}
		clock := "-"
		if n.GetClockMeasured() {
			clock = fmt.Sprintf("%+dms", n.GetClockOffsetMs())
		}
		// The server sends no start time for a departed node; an older one did, from
		// gossip that outlives the process.
		uptime := "-"
		if !gone {
			uptime = formatUptime(n.GetStartedAtUnixMs(), now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%s\t%s\t%s\n", n.GetId(), n.GetDc(), status, state, load, keys,
			100*n.GetOwnership(), uptime, clock, n.GetClientAddr())
	}
	return tw.Flush()
}

// printProtocols prints how many members announce each internode protocol version, and
// the oldest, which features that every node must understand wait for: during a rolling
// upgrade, "protocol versions: 3 (2 nodes), 4 (1 node); cluster protocol 3". Nothing
// from a node older than the report (protocol 3), which sends no versions.
func printProtocols(w io.Writer, st *kurav1.ClusterStatusResponse) {
	if st.GetProtocolVersion() == 0 {
		return
	}
	counts := map[int32]int{}
	for _, n := range st.GetNodes() {
		if v := n.GetProtocolVersion(); v != 0 && !departed(n) {
			counts[v]++
		}
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d (%s)", v, plural(counts[v], "node")))
	}
	fmt.Fprintf(w, "protocol versions: %s; cluster protocol %d\n", strings.Join(parts, ", "), st.GetProtocolVersion())
}

// departed reports whether a node left the cluster (decommissioned) or was removed from
// it: it is off the ring and no member any more, unlike a booting, joining or leaving
// node, which is moving onto or off it. A status this binary cannot read (a newer
// server's) is no reason to hide a node.
func departed(n *kurav1.NodeStatus) bool {
	s, err := cluster.ParseStatus(n.GetStatus())
	return err == nil && (s == cluster.StatusLeft || s == cluster.StatusRemoved)
}

// runRing is `kura ring`: every node's tokens and share of the ring, and of a keyspace.
func runRing(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ring", stderr)
	nf := addNodeFlags(fs, oneNode, opsTimeout)
	keyspace := fs.String("keyspace", "", "also show the share of this keyspace each node holds replicas of")
	tokens := fs.Bool("tokens", false, "list every token, in ring order, instead of a line per node")
	r, err := askNode(fs, nf, args, "ring takes no arguments, only flags (ring [--keyspace KS] [--tokens])", stdout,
		func(ctx context.Context, admin kurav1.AdminClient) (*kurav1.RingResponse, error) {
			return admin.Ring(ctx, &kurav1.RingRequest{Keyspace: *keyspace})
		})
	if r == nil || err != nil {
		return err
	}
	if *tokens {
		type position struct {
			token uint64
			node  *kurav1.RingNode
		}
		var ring []position
		for _, n := range r.GetNodes() {
			for _, t := range n.GetTokens() {
				ring = append(ring, position{t, n})
			}
		}
		slices.SortFunc(ring, func(a, b position) int {
			return cmp.Compare(a.token, b.token)
		})
		tw := newTable(stdout)
		fmt.Fprintln(tw, "TOKEN\tNODE\tDC\tSTATE")
		for _, p := range ring {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.token, p.node.GetId(), p.node.GetDc(), p.node.GetState())
		}
		return tw.Flush()
	}
	fmt.Fprintf(stdout, "ring as seen by %s: %s", r.GetSelf(), plural(len(r.GetNodes()), "node"))
	if r.GetKeyspace() != "" {
		fmt.Fprintf(stdout, "; keyspace %s, replication %s", r.GetKeyspace(), r.GetReplication())
	}
	fmt.Fprintln(stdout)
	tw := newTable(stdout)
	header := "NODE\tDC\tSTATE\tTOKENS\tOWNS"
	if r.GetKeyspace() != "" {
		header += "\tREPLICA OF"
	}
	fmt.Fprintln(tw, header)
	for _, n := range r.GetNodes() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f%%", n.GetId(), n.GetDc(), n.GetState(), len(n.GetTokens()), 100*n.GetOwnership())
		if r.GetKeyspace() != "" {
			fmt.Fprintf(tw, "\t%.1f%%", 100*n.GetEffective())
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "OWNS: the share of the token space whose first replica the node is.")
	if r.GetKeyspace() != "" {
		fmt.Fprintln(stdout, "REPLICA OF: the share of the keyspace's token space it holds a replica or chunk of; the column adds up to the replicas per key.")
	}
	return nil
}

// runInfo is `kura info`: one node's own account of itself.
func runInfo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("info", stderr)
	nf := addNodeFlags(fs, oneNode, opsTimeout)
	info, err := askNode(fs, nf, args, "info takes no arguments, only flags", stdout,
		func(ctx context.Context, admin kurav1.AdminClient) (*kurav1.NodeInfo, error) {
			return admin.Info(ctx, &kurav1.InfoRequest{})
		})
	if info == nil || err != nil {
		return err
	}
	dataDir := info.GetDataDir()
	if dataDir == "" {
		dataDir = "(in memory)"
	}
	tw := newTable(stdout)
	for _, row := range [][2]string{
		{"node", info.GetId() + " in " + info.GetDc()},
		{"version", info.GetVersion()},
		{"uptime", formatUptime(info.GetStartedAtUnixMs(), time.Now()) + " (started " + time.UnixMilli(info.GetStartedAtUnixMs()).UTC().Format(time.RFC3339) + ")"},
		{"ring", info.GetRingStatus() + fmt.Sprintf(", owns %.1f%% of the token space", 100*info.GetOwnership())},
		{"power", info.GetPower()},
		{"addresses", fmt.Sprintf("internode %s, client %s, redis %s, http %s",
			orDash(info.GetAddr()), orDash(info.GetClientAddr()), orDash(info.GetRespAddr()), orDash(info.GetHttpAddr()))},
		{"storage", fmt.Sprintf("%s on disk, %s records in %d keyspaces, %s", formatBytes(info.GetStorageDiskBytes()),
			formatCount(info.GetStorageKeys()), info.GetKeyspaces(), dataDir)},
		{"hints pending", formatCount(info.GetHintsPending())},
		{"read policy", info.GetReadPolicy()},
		{"gossip", fmt.Sprintf("%s, %d nodes known, %d up", info.GetMembership().GetProtocol(), info.GetMembership().GetMembers(), info.GetMembership().GetMembersUp())},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printMembership(stdout, info.GetId(), info.GetMembership())
	printClock(stdout, info.GetId(), info.GetClock())
	return nil
}

// runVersion is `kura version`: this binary's build.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("%w: version takes no arguments (kura info --addr ADDR shows a node's)", errUsage)
	}
	fmt.Fprintln(stdout, version.Get())
	return nil
}

// askNode adds --json to fs, parses args (flags only; usage says so), and asks the node
// nf names with call. With --json it prints the answer and returns nil, nil: the caller
// prints an answer only when it gets one.
func askNode[T proto.Message](fs *flag.FlagSet, nf nodeFlags, args []string, usage string, stdout io.Writer,
	call func(context.Context, kurav1.AdminClient) (T, error)) (T, error) {
	var answer, none T
	asJSON := fs.Bool("json", false, "print the node's answer as JSON")
	if pos, err := parseFlags(fs, args); err != nil {
		return none, err
	} else if len(pos) > 0 {
		return none, fmt.Errorf("%w: %s", errUsage, usage)
	}
	err := nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) (err error) {
		answer, err = call(ctx, admin)
		return err
	})
	if err != nil {
		return none, err
	}
	if *asJSON {
		return none, printJSON(stdout, answer)
	}
	return answer, nil
}

// printMembership warns when a node has not joined a cluster, or knows no other node
// although it was given seeds: the sign of a wrong --seeds address.
func printMembership(w io.Writer, self string, m *kurav1.Membership) {
	var failed []string
	for _, s := range m.GetSeeds() {
		if s.GetError() != "" {
			failed = append(failed, fmt.Sprintf("  seed %s: %s", s.GetAddr(), s.GetError()))
		}
	}
	switch {
	case !m.GetJoined():
		fmt.Fprintf(w, "WARNING: %s has not joined a cluster yet: none of its seeds answered as a kura node.\n", self)
	case m.GetMembers() <= 1 && len(failed) > 0:
		fmt.Fprintf(w, "WARNING: %s knows no other node: some of its seeds did not answer.\n", self)
	default:
		return
	}
	for _, line := range failed {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "  --seeds takes other nodes' internode addresses (their --listen), not their client, Redis or HTTP ports.")
}

// printClock says how the answering node's clock stands against its peers', and why it
// refuses writes when it does.
func printClock(w io.Writer, self string, c *kurav1.ClockStatus) {
	fmt.Fprintf(w, "clock of %s: %+dms from its %d measured peers (max offset %dms)", self, c.GetOffsetMs(), c.GetPeers(), c.GetMaxOffsetMs())
	if c.GetOk() {
		fmt.Fprintln(w, ", coordinating writes")
	} else {
		fmt.Fprintf(w, ", REFUSING WRITES: %s\n", c.GetRefusal())
	}
	if ahead := c.GetAheadMaxMs(); ahead > 0 {
		fmt.Fprintf(w, "largest timestamp %s stamped or stored is %dms ahead of the cluster's clock\n", self, ahead)
	}
}

// newTable returns a writer that aligns tab-separated columns, two spaces apart.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// printJSON prints a node's answer as appendMessageJSON writes it, indented.
func printJSON(w io.Writer, m proto.Message) error {
	out, err := appendMessageJSON(nil, m.ProtoReflect())
	if err != nil {
		return err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out, "", "  "); err != nil {
		return err
	}
	indented.WriteByte('\n')
	_, err = indented.WriteTo(w)
	return err
}

// counts prints numbers for people, with thousands separators: 1,234,567.
var counts = message.NewPrinter(language.English)

// formatCount prints a count with thousands separators.
func formatCount(n int64) string { return counts.Sprintf("%d", n) }

// formatUptime prints how long ago a node started, to the second and in its two largest
// units ("3d4h", "2h5m", "4m12s"); "-" when not known.
func formatUptime(startedAtUnixMs int64, now time.Time) string {
	if startedAtUnixMs <= 0 {
		return "-"
	}
	d := max(now.Sub(time.UnixMilli(startedAtUnixMs)), 0).Truncate(time.Second)
	days, hours, minutes, seconds := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh%dm", hours, minutes)
	case minutes > 0:
		return fmt.Sprintf("%dm%ds", minutes, seconds)
	}
	return fmt.Sprintf("%ds", seconds)
}

// plural is "1 node", "2 nodes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orDash is s, or "-" for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
