// Command kura runs a kura node, an in-process cluster or the demo, talks to a cluster as
// a client, and runs the benchmarks.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/kuradb/kura/cmd/internal/cli"
	"github.com/kuradb/kura/internal/io/topology"
)

// command is one `kura` subcommand.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"server":    {"run one node", runServer},
	"cluster":   {"run every node of a topology in this process", runCluster},
	"demo":      {"run a 3-datacenter cluster with a mixed workload and print a summary", runDemo},
	"put":       {"write a key: put KEY [VALUE|-] [--ttl 10s]", runPut},
	"get":       {"read a key: get KEY", runGet},
	"del":       {"delete a key: del KEY", runDel},
	"cas":       {"compare-and-set a key, atomically: cas KEY [VALUE] --if-absent|--if-present|--if-equals OLD [--delete]", runCas},
	"scan":      {"list keys in order: scan [--start K] [--end K] [--limit N] [--values] [--hex]", runScan},
	"keyspace":  {"manage keyspaces: keyspace create|list|describe|alter|truncate|drop", runKeyspace},
	"status":    {"show the cluster's members as one node sees them: state, load, ownership, uptime (--all: departed nodes too)", runStatus},
	"ring":      {"show every node's tokens and ownership, of a keyspace too: ring [--keyspace KS]", runRing},
	"info":      {"show one node: version, uptime, storage, hints, clock, gossip", runInfo},
	"version":   {"print this binary's version", runVersion},
	"node":      {"change the ring: node decommission | node remove ID", runNode},
	"cleanup":   {"drop the data a node no longer owns after the ring changed", runCleanup},
	"rebalance": {"balance an ordered keyspace's rows over the nodes: rebalance --keyspace KS [--splits N]", runRebalance},
	"faults":    {"inject faults into nodes started with --enable-faults: faults set|clear|show", runFaults},
	"power":     {"put a node to sleep or wake it (paper 003): power sleep NODE | power wake NODE | power status", runPower},
	"repair":    {"bring a node's replicas in agreement (Merkle trees): repair [--keyspace KS] [--dc DC]", runRepair},
	"snapshot":  {"take, list and delete named snapshots of nodes: snapshot create NAME | list | delete NAME", runSnapshot},
	"restore":   {"restore a stopped node's data, or one keyspace into a running cluster, from a snapshot", runRestore},
	"certs":     {"make a CA and node certificates for TLS: certs --dir DIR --nodes n1,n2,n3", runCerts},
	"bench":     {"run an experiment that reproduces a paper's figure, with the kura-bench binary: bench <name>", runBench},
	"model":     {"predict the latency a consistency level costs from the ring and the links", runModel},
	"nemesis":   {"run a workload under faults and check the history: nemesis [--faults all] | nemesis check FILE", runNemesis},
	"simulate":  {"explore operator actions and faults on whole clusters in virtual time: simulate --seeds 1-1000 [--json]", runSimulate},
}

// errUsage marks an error in the command line; main exits 2 for it.
var errUsage = cli.ErrUsage

// errNotFound makes main exit 1 without printing an error (get already said so).
var errNotFound = errors.New("not found")

// errNotApplied makes main exit 1 without printing an error (cas already said so).
var errNotApplied = errors.New("not applied")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "kura: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(args[1:], stdout, stderr)
	var status exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status): // a child's (kura bench), which said why itself
		return int(status)
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errNotFound), errors.Is(err, errNotApplied):
		return 1
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "kura %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "kura %s: %v\n", args[0], err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "kura: a geo-distributed key-value store")
	fmt.Fprintln(w, "\nUsage: kura <command> [flags] [args]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-9s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'kura <command> --help' for a command's flags.")
}

// newFlagSet returns a flag set named "kura NAME" that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	return cli.NewFlagSet("kura "+name, stderr)
}

// parseFlags is cli.ParseFlags: flags may follow positional arguments ("kura get KEY
// --addr X"), and a wrong flag is reported in one line.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	return cli.ParseFlags(fs, args)
}

// isHelp reports whether arg, a command's first, asks for its help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// subcommandHelp prints the usage of a command whose first argument is a subcommand.
func subcommandHelp(stderr io.Writer, usage, command string) error {
	fmt.Fprintf(stderr, "Usage: kura %s\n\n'kura %s <subcommand> --help' lists a subcommand's flags.\n", usage, command)
	return flag.ErrHelp
}

// loadTopology reads a topology file, or one of the shipped examples by name.
func loadTopology(arg string) (*topology.Topology, error) {
	if _, err := os.Stat(arg); err == nil || strings.ContainsAny(arg, "/.") {
		return topology.Load(arg)
	}
	return topology.Example(arg)
}

// newLogger logs to stderr at the named level.
func newLogger(stderr io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", errUsage, level)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), nil
}
