package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/backup"
)

const snapshotUsage = "snapshot create NAME [--keyspace KS,...] | snapshot list | snapshot delete NAME; each on the nodes --addr names (comma-separated), or with --all on every member"

// target is a node a command acts on, and its connection.
type target struct {
	id    string // empty until the node answered (addresses given by --addr)
	addr  string
	admin kurav1.AdminClient
	conn  *grpc.ClientConn
}

// dial connects to the nodes the flags choose, the first --addr first. With --all, every
// member of the ring the first node knows (neither left nor removed) must be up and
// serve a client address:
// a snapshot or restore that silently skipped a node would miss the copies only it
// holds.
func (f nodeFlags) dial(ctx context.Context) ([]*target, func(), error) {
	addrs, err := f.addrs()
	if err != nil {
		return nil, nil, err
	}
	opts, err := f.security.options()
	if err != nil {
		return nil, nil, err
	}
	var targets []*target
	closeAll := func() {
		for _, t := range targets {
			t.conn.Close()
		}
	}
	connect := func(id, addr string) error {
		conn, err := client.DialNode(addr, opts)
		if err != nil {
			return err
		}
		targets = append(targets, &target{id: id, addr: addr, admin: kurav1.NewAdminClient(conn), conn: conn})
		return nil
	}
	if !*f.all {
		for _, a := range addrs {
			if err := connect("", a); err != nil {
				closeAll()
				return nil, nil, err
			}
		}
		return targets, closeAll, nil
	}
	if err := connect("", addrs[0]); err != nil {
		return nil, nil, err
	}
	st, err := targets[0].admin.ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
	if err != nil {
		closeAll()
		return nil, nil, client.ExplainAt(addrs[0], err)
	}
	first := targets[0]
	targets = targets[:0]
	defer first.conn.Close()
	var missing []string
	for _, n := range st.GetNodes() {
		if n.GetStatus() == "left" || n.GetStatus() == "removed" {
			continue
		}
		if !n.GetAlive() || n.GetClientAddr() == "" {
			missing = append(missing, fmt.Sprintf("%s (%s)", n.GetId(), n.GetState()))
			continue
		}
		if err := connect(n.GetId(), n.GetClientAddr()); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	// The node --addr names first: a restore writes through the first target.
	if i := slices.IndexFunc(targets, func(t *target) bool { return t.id == st.GetSelf() }); i > 0 {
		targets[0], targets[i] = targets[i], targets[0]
	}
	if len(missing) > 0 {
		closeAll()
		return nil, nil, fmt.Errorf("--all needs every member, and %s cannot be reached: start them, or name the nodes with --addr", strings.Join(missing, ", "))
	}
	return targets, closeAll, nil
}

// runSnapshot is `kura snapshot create|list|delete`.
func runSnapshot(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, snapshotUsage)
	}
	if isHelp(args[0]) {
		return subcommandHelp(stderr, snapshotUsage, "snapshot")
	}
	sub := args[0]
	fs := newFlagSet("snapshot "+sub, stderr)
	nf := addNodeFlags(fs, nodesOrAll, 10*time.Minute)
	keyspaces := fs.String("keyspace", "", "create: the keyspaces to keep, comma-separated (empty: all)")
	hold := fs.Duration("hold", 30*time.Second, "create --all: the longest the nodes hold their writes for the snapshot's cut; a snapshot not done by then is deleted")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case sub == "create" && len(pos) == 1, sub == "delete" && len(pos) == 1:
		if err := backup.ValidateName(pos[0]); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	case sub == "list" && len(pos) == 0:
	default:
		return fmt.Errorf("%w: %s", errUsage, snapshotUsage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *nf.timeout)
	defer cancel()
	targets, closeAll, err := nf.dial(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	switch sub {
	case "create":
		var taken []*kurav1.Snapshot
		var names []string
		if *keyspaces != "" {
			names = strings.Split(*keyspaces, ",")
		}
		if *nf.all {
			taken, err := clusterSnapshot(ctx, targets, pos[0], names, *hold)
			if err != nil {
				return err
			}
			printSnapshots(stdout, taken)
			return nil
		}
		for _, t := range targets {
			snap, err := t.admin.CreateSnapshot(ctx, &kurav1.CreateSnapshotRequest{Name: pos[0], Keyspaces: names})
			if err != nil {
				printSnapshots(stdout, taken)
				return fmt.Errorf("snapshot at %s: %w", t.addr, client.Explain(err))
			}
			taken = append(taken, snap)
		}
		printSnapshots(stdout, taken)
	case "list":
		var all []*kurav1.Snapshot
		for _, t := range targets {
			resp, err := t.admin.ListSnapshots(ctx, &kurav1.ListSnapshotsRequest{})
			if err != nil {
				return fmt.Errorf("list snapshots at %s: %w", t.addr, client.Explain(err))
			}
			all = append(all, resp.GetSnapshots()...)
			for _, name := range resp.GetIncomplete() {
				fmt.Fprintf(stderr, "%s: snapshot directory %s has no manifest (cut short): kura snapshot delete %s --addr %s removes it\n", resp.GetNode(), name, name, t.addr)
			}
		}
		printSnapshots(stdout, all)
	case "delete":
		for _, t := range targets {
			resp, err := t.admin.DeleteSnapshot(ctx, &kurav1.DeleteSnapshotRequest{Name: pos[0]})
			if err != nil {
				return fmt.Errorf("delete snapshot at %s: %w", t.addr, client.Explain(err))
			}
			fmt.Fprintf(stdout, "deleted snapshot %s on %s\n", pos[0], resp.GetNode())
		}
	}
	return nil
}

// clusterSnapshot takes snapshot name on every target at one cut (docs/backup.md): every
// node holds the writes it coordinates and answers once those in flight are answered,
// with its clock; the cut is the latest of those clocks; every node moves its clock past
// the cut and checkpoints; then every node releases its writes. A write acknowledged
// before the command began is stamped below its coordinator's clock, so below the cut,
// and is in a checkpoint; no write is stamped above the cut before every checkpoint is
// taken. A node whose hold ended by itself before its release (--hold too short) makes
// the snapshot void: it is deleted everywhere.
func clusterSnapshot(ctx context.Context, targets []*target, name string, keyspaces []string, hold time.Duration) ([]*kurav1.Snapshot, error) {
	id := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	clocks := make([]uint64, len(targets))
	err := eachTarget(targets, func(i int, t *target) error {
		resp, err := t.admin.HoldWrites(ctx, &kurav1.HoldWritesRequest{Hold: id, HoldMs: hold.Milliseconds()})
		if err != nil {
			return fmt.Errorf("hold writes at %s: %w", t.addr, client.Explain(err))
		}
		clocks[i] = resp.GetClock()
		return nil
	})
	snaps := make([]*kurav1.Snapshot, len(targets))
	if err == nil {
		cut := slices.Max(clocks)
		err = eachTarget(targets, func(i int, t *target) error {
			snap, err := t.admin.CreateSnapshot(ctx, &kurav1.CreateSnapshotRequest{Name: name, Keyspaces: keyspaces, Cut: cut, Hold: id})
			if err != nil {
				return fmt.Errorf("snapshot at %s: %w", t.addr, client.Explain(err))
			}
			snaps[i] = snap
			return nil
		})
	}
	// Released whatever happened, even past the command's deadline: every node's writes
	// wait until then, or until the hold ends by itself.
	cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	releaseErr := eachTarget(targets, func(_ int, t *target) error {
		resp, err := t.admin.ReleaseWrites(cleanupCtx, &kurav1.ReleaseWritesRequest{Hold: id})
		if err != nil {
			return fmt.Errorf("release writes at %s (its hold ends by itself after --hold): %w", t.addr, client.Explain(err))
		}
		if !resp.GetHeld() {
			return fmt.Errorf("%s's hold of writes ended by itself before every node's checkpoint was taken: run again with a longer --hold than %v", resp.GetNode(), hold)
		}
		return nil
	})
	if err = errors.Join(err, releaseErr); err == nil {
		return snaps, nil
	}
	deleteErr := eachTarget(targets, func(i int, t *target) error {
		if snaps[i] == nil {
			return nil
		}
		_, err := t.admin.DeleteSnapshot(cleanupCtx, &kurav1.DeleteSnapshotRequest{Name: name})
		return err
	})
	if deleteErr != nil {
		return nil, fmt.Errorf("cluster snapshot %s failed, and deleting its parts failed too (kura snapshot delete %s --all): %w", name, name, errors.Join(err, deleteErr))
	}
	return nil, fmt.Errorf("cluster snapshot %s failed; its parts were deleted: %w", name, err)
}

// cleanupTimeout bounds the release of a cluster snapshot's holds and the deletion of a
// failed one's parts.
const cleanupTimeout = 10 * time.Second

// eachTarget runs fn on every target at once and returns their errors joined.
func eachTarget(targets []*target, fn func(i int, t *target) error) error {
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { errs[i] = fn(i, t) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// printSnapshots prints one line per node's snapshot.
func printSnapshots(w io.Writer, snaps []*kurav1.Snapshot) {
	if len(snaps) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDC\tSNAPSHOT\tCREATED\tTIMESTAMP\tCUT\tKEYSPACES")
	for _, s := range snaps {
		cut := "-"
		if s.GetCut() != 0 {
			cut = hlc.Timestamp(s.GetCut()).String()
		}
		var names []string
		for _, k := range s.GetKeyspaces() {
			names = append(names, k.GetKeyspace().GetName())
		}
		if s.GetBeforeRestoreOf() != "" {
			names = []string{"(the data before restoring " + s.GetBeforeRestoreOf() + ")"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.GetNode(), s.GetDc(), s.GetName(),
			time.UnixMilli(s.GetCreatedAtUnixMs()).UTC().Format(time.RFC3339), hlc.Timestamp(s.GetTimestamp()), cut, strings.Join(names, ","))
	}
	tw.Flush()
}

const restoreUsage = "restore --data DIR --snapshot NAME (a stopped node's whole data) | restore keyspace KS --snapshot NAME [--all | --addr a,b] [--consistency QUORUM]"

// runRestore is `kura restore`: a stopped node's data swapped for one of its
// snapshots, or one keyspace written back into a running cluster.
func runRestore(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		return subcommandHelp(stderr, restoreUsage, "restore")
	}
	if len(args) > 0 && args[0] == "keyspace" {
		return runRestoreKeyspace(args[1:], stdout, stderr)
	}
	fs := newFlagSet("restore", stderr)
	data := fs.String("data", "", "the stopped node's data directory (its --data-dir)")
	name := fs.String("snapshot", "", "the snapshot to restore, from that directory's snapshots/")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *data == "" || *name == "" {
		return fmt.Errorf("%w: %s", errUsage, restoreUsage)
	}
	aside, err := backup.RestoreNode(*data, *name, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored snapshot %s into %s; the data it replaced is kept as snapshot %s (kura restore --data %s --snapshot %s undoes this)\n",
		*name, *data, aside, *data, aside)
	return nil
}

// restoreBatchRecords and restoreBatchBytes bound one RestoreRecords call.
const (
	restoreBatchRecords = 256
	restoreBatchBytes   = 4 << 20
)

// runRestoreKeyspace writes a keyspace back from a snapshot taken on several nodes: it
// creates the keyspace again from the snapshot's definition when it does not exist, reads
// every node's records of it (ReadSnapshot), keeps each key's newest version among them,
// and writes the live ones back through the first node (RestoreRecords), which leaves
// alone any key written since the truncation or drop (docs/backup.md).
func runRestoreKeyspace(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("restore keyspace", stderr)
	nf := addNodeFlags(fs, nodesOrAll, time.Hour)
	name := fs.String("snapshot", "", "the snapshot to restore from, taken on every node read")
	level := fs.String("consistency", "QUORUM", "the level of the restore's writes")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *name == "" {
		return fmt.Errorf("%w: %s", errUsage, restoreUsage)
	}
	keyspace := pos[0]
	cl, err := consistency.Parse(*level)
	if err != nil {
		return fmt.Errorf("%w: --consistency: %v", errUsage, err)
	}
	wire, ok := kurav1.Consistency_value[cl.String()]
	if !ok || cl.IsSerial() {
		return fmt.Errorf("%w: --consistency %s: a restore writes at ANY to ALL", errUsage, cl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *nf.timeout)
	defer cancel()
	targets, closeAll, err := nf.dial(ctx)
	if err != nil {
		return err
	}
	defer closeAll()
	def, err := snapshotKeyspace(ctx, targets, *name, keyspace)
	if err != nil {
		return err
	}
	writer := targets[0].admin
	if _, err := writer.DescribeKeyspace(ctx, &kurav1.DescribeKeyspaceRequest{Name: keyspace}); status.Code(err) == codes.NotFound {
		if _, err := writer.CreateKeyspace(ctx, &kurav1.CreateKeyspaceRequest{Keyspace: def.GetKeyspace()}); err != nil {
			return fmt.Errorf("create keyspace %s again from snapshot %s: %w", keyspace, *name, client.Explain(err))
		}
		fmt.Fprintf(stdout, "created keyspace %s again with replication %s, as snapshot %s has it\n", keyspace, def.GetKeyspace().GetReplication(), *name)
	} else if err != nil {
		return client.Explain(err)
	}

	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	sources := make([]backup.Source, len(targets))
	for i, t := range targets {
		stream, err := t.admin.ReadSnapshot(streamCtx, &kurav1.ReadSnapshotRequest{Name: *name, Keyspace: keyspace})
		if err != nil {
			return fmt.Errorf("read snapshot %s at %s: %w", *name, t.addr, client.Explain(err))
		}
		sources[i] = &pageSource{addr: t.addr, stream: stream}
	}
	var tally restoreTally
	var batch []*kurav1.LocalVersion
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		resp, err := writer.RestoreRecords(ctx, &kurav1.RestoreRecordsRequest{Keyspace: keyspace, Records: batch, Consistency: kurav1.Consistency(wire)})
		if err != nil {
			return fmt.Errorf("restore keyspace %s: %w (%s so far; the restore may be run again: it never undoes a later write)", keyspace, client.Explain(err), tally)
		}
		tally.asIs += resp.GetAsIs()
		tally.restamped += resp.GetRestamped()
		tally.keptNewer += resp.GetKeptNewer()
		batch, batchBytes = batch[:0], 0
		return nil
	}
	now := hlc.FromTime(time.Now())
	err = backup.Merge(sources, func(r lww.Record) error {
		tally.keys++
		if !r.Live(now) {
			tally.gone++
			return nil
		}
		batch = append(batch, &kurav1.LocalVersion{Key: r.Key, Value: r.Value, Timestamp: uint64(r.Timestamp), ExpiresAt: uint64(r.ExpiresAt), Type: uint32(r.Type)})
		batchBytes += len(r.Key) + len(r.Value)
		if len(batch) >= restoreBatchRecords || batchBytes >= restoreBatchBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored keyspace %s from snapshot %s of %d node(s): %s\n", keyspace, *name, len(targets), tally)
	return nil
}

// restoreTally counts a keyspace restore's keys.
type restoreTally struct {
	keys, gone                 int64 // keys read; of them, deleted or expired in the snapshot
	asIs, restamped, keptNewer int64 // RestoreRecordsResponse's counts
}

func (t restoreTally) String() string {
	return fmt.Sprintf("%d keys read, %d deleted or expired in the snapshot; %d written back with their own timestamps, %d written anew (hidden by a truncation or drop), %d left to a newer write",
		t.keys, t.gone, t.asIs, t.restamped, t.keptNewer)
}

// snapshotKeyspace returns the definition of keyspace in snapshot name, and checks that
// every target holds that snapshot with the keyspace: a node without it would leave out
// the copies only it holds.
func snapshotKeyspace(ctx context.Context, targets []*target, name, keyspace string) (*kurav1.SnapshotKeyspace, error) {
	var def *kurav1.SnapshotKeyspace
	var lacking []string
	for _, t := range targets {
		resp, err := t.admin.ListSnapshots(ctx, &kurav1.ListSnapshotsRequest{})
		if err != nil {
			return nil, fmt.Errorf("list snapshots at %s: %w", t.addr, client.Explain(err))
		}
		i := slices.IndexFunc(resp.GetSnapshots(), func(s *kurav1.Snapshot) bool { return s.GetName() == name })
		if i < 0 {
			lacking = append(lacking, resp.GetNode()+" has no snapshot "+name)
			continue
		}
		snap := resp.GetSnapshots()[i]
		j := slices.IndexFunc(snap.GetKeyspaces(), func(k *kurav1.SnapshotKeyspace) bool { return k.GetKeyspace().GetName() == keyspace })
		if j < 0 {
			lacking = append(lacking, fmt.Sprintf("%s's snapshot %s does not hold keyspace %s", resp.GetNode(), name, keyspace))
			continue
		}
		if def == nil {
			def = snap.GetKeyspaces()[j]
		}
	}
	if len(lacking) > 0 {
		return nil, fmt.Errorf("%s: a restore from these nodes would miss the records only they hold; name the nodes that have it with --addr", strings.Join(lacking, "; "))
	}
	return def, nil
}

// pageSource is one node's ReadSnapshot stream as a backup.Source.
type pageSource struct {
	addr   string
	stream grpc.ServerStreamingClient[kurav1.SnapshotPage]
	page   []*kurav1.LocalVersion
	done   bool
}

func (s *pageSource) Next() (lww.Record, bool, error) {
	for len(s.page) == 0 {
		if s.done {
			return lww.Record{}, false, nil
		}
		msg, err := s.stream.Recv()
		if errors.Is(err, io.EOF) {
			s.done = true
			continue
		}
		if err != nil {
			return lww.Record{}, false, fmt.Errorf("read snapshot at %s: %w", s.addr, client.Explain(err))
		}
		s.page = msg.GetVersions()
	}
	v := s.page[0]
	s.page = s.page[1:]
	return lww.Record{Key: v.GetKey(), Value: v.GetValue(), Timestamp: hlc.Timestamp(v.GetTimestamp()),
		Tombstone: v.GetDeleted(), ExpiresAt: hlc.Timestamp(v.GetExpiresAt()), Type: replica.TypeFromWire(v.GetType())}, true, nil
}
