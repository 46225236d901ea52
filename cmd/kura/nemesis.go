package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/tools/nemesis"
)

// errViolations makes main exit 1 after the report said what failed.
var errViolations = errors.New("the checks found violations")

// runNemesis runs a workload against a cluster under faults and checks the history
// (package nemesis); `kura nemesis check FILE` checks a saved history again.
func runNemesis(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "check" {
		return runNemesisCheck(args[1:], stdout, stderr)
	}
	fs := newFlagSet("nemesis", stderr)
	nodes := fs.Int("nodes", 5, "kura server processes to start")
	dcs := fs.Int("dcs", 2, "datacenters to spread them over (5 nodes in 2 DCs: 3+2)")
	duration := fs.Duration("duration", 30*time.Second, "how long the workload runs; faults happen within it")
	faults := fs.String("faults", "all", "all, none, or some of "+strings.Join(kindNames(), ","))
	seed := fs.Int64("seed", 0, "seed of the fault schedule and the workload (0: from the clock; printed)")
	level := fs.String("consistency", "QUORUM", "level of every read and write")
	replication := fs.String("replication", "", "the keyspace's replication (default: 2 replicas in the first DC, 1 in each other)")
	clients := fs.Int("clients", 8, "concurrent clients; odd ones speak the Redis protocol, even ones gRPC")
	rate := fs.Float64("rate", 50, "operations per second per client")
	keys := fs.Int("keys", 200, "cold keys")
	hotKeys := fs.Int("hot-keys", 8, "hot keys, which get half of all operations")
	opTimeout := fs.Duration("op-timeout", time.Second, "timeout of each operation (then indeterminate)")
	history := fs.String("history", "", "file to keep the history in, as JSON lines (default: history.jsonl in --dir)")
	attach := fs.String("attach", "", "comma-separated client addresses of every node of a running cluster to use instead (API faults only: no kill, pause or wipe)")
	bin := fs.String("bin", "", "kura binary to run the nodes with (default: this one)")
	dirFlag := fs.String("dir", "", "directory for the nodes' data dirs and logs, and the history (default: a new temporary dir)")
	keep := fs.Bool("keep", false, "keep the nodes' data dirs (their logs are kept anyway)")
	gossip := fs.Duration("gossip-interval", 200*time.Millisecond, "the nodes' gossip round")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: nemesis takes flags only (or: nemesis check FILE)", errUsage)
	}
	kinds, err := nemesis.ParseKinds(*faults)
	if err != nil {
		return fmt.Errorf("%w: --faults: %v", errUsage, err)
	}
	if *attach != "" && *faults == "all" {
		// All that an attached cluster allows.
		kinds = slices.DeleteFunc(kinds, nemesis.Kind.Process)
	}
	cl, err := consistency.Parse(*level)
	if err != nil {
		return fmt.Errorf("%w: --consistency: %v", errUsage, err)
	}
	if *clients < 1 || *rate <= 0 || *keys < 1 || *hotKeys < 0 || *duration <= 0 || *opTimeout <= 0 {
		return fmt.Errorf("%w: --clients, --rate, --keys, --duration and --op-timeout must be positive, --hot-keys not negative", errUsage)
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano()
	}
	cfg := nemesis.Config{
		Nodes: *nodes, DCs: *dcs, GossipInterval: *gossip, Replication: *replication,
		Duration: *duration, Faults: kinds, Seed: *seed, Out: stdout,
		Workload: nemesis.Workload{Level: cl, Clients: *clients, RatePerSecond: *rate, Keys: *keys, HotKeys: *hotKeys,
			OpTimeout: *opTimeout, Seed: *seed},
	}
	if *attach != "" {
		cfg.Attach = strings.Split(*attach, ",")
	} else if cfg.Bin = *bin; cfg.Bin == "" {
		if cfg.Bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find the kura binary (give --bin): %w", err)
		}
	}
	dir := *dirFlag
	if dir == "" {
		dir, err = os.MkdirTemp("", "kura-nemesis-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	cfg.Dir = dir
	if *history == "" {
		*history = filepath.Join(dir, "history.jsonl")
	}
	file, err := os.Create(*history)
	if err != nil {
		return err
	}
	defer file.Close()
	fmt.Fprintf(stdout, "seed %d (rerun with --seed %d); history in %s\n", *seed, *seed, *history)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rec := nemesis.NewRecorder(file)
	report, runErr := nemesis.Run(ctx, cfg, rec)
	if err := rec.Flush(); err != nil {
		return fmt.Errorf("write the history: %w", err)
	}
	if !*keep && *attach == "" {
		removeDataDirs(dir, *nodes)
	}
	if *attach == "" {
		fmt.Fprintf(stdout, "node logs in %s\n", dir)
	}
	if runErr != nil {
		if len(report.Verdicts) > 0 {
			report.Print(stdout) // the run finished, but something else went wrong
		}
		return runErr
	}
	return printReport(stdout, report, *history)
}

// removeDataDirs deletes the nodes' data dirs, leaving their logs and the history.
func removeDataDirs(dir string, nodes int) {
	for i := range nodes {
		os.RemoveAll(filepath.Join(dir, fmt.Sprintf("n%d", i+1)))
	}
}

// runNemesisCheck checks a saved history again.
func runNemesisCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("nemesis check", stderr)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: nemesis check HISTORY_FILE", errUsage)
	}
	events, err := nemesis.Load(pos[0])
	if err != nil {
		return err
	}
	return printReport(stdout, nemesis.Check(events), pos[0])
}

// printReport prints the verdicts and fails on any violation.
func printReport(w io.Writer, report nemesis.Report, history string) error {
	report.Print(w)
	if !report.OK() {
		fmt.Fprintf(w, "history: %s\n", history)
		return errViolations
	}
	return nil
}

func kindNames() []string {
	names := make([]string, len(nemesis.Kinds))
	for i, k := range nemesis.Kinds {
		names[i] = string(k)
	}
	return names
}
