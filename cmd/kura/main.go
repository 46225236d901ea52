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
	"time"

	"github.com/kuradb/kura/topology"
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
	"keyspace":  {"manage keyspaces: keyspace create|list|describe|truncate|drop", runKeyspace},
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
	"bench":     {"run an experiment that reproduces a paper's figure: bench <name>", runBench},
	"model":     {"predict the latency a consistency level costs from the ring and the links", runModel},
	"nemesis":   {"run a workload under faults and check the history: nemesis [--faults all] | nemesis check FILE", runNemesis},
	"simulate":  {"explore operator actions and faults on whole clusters in virtual time: simulate --seeds 1-1000 [--json]", runSimulate},
}

// errUsage marks an error in the command line; main exits 2 for it.
var errUsage = errors.New("usage")

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
	switch {
	case err == nil:
		return 0
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

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kura "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args, letting flags follow positional arguments too
// ("kura get KEY --addr X"), and returns the positional ones. A wrong flag is reported in
// one line, with the closest flag's name or a duration's missing unit, not above the
// whole list of flags, which --help prints.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	out := fs.Output()
	for {
		// The flag package prints its error and the usage itself; the error alone
		// comes back here, explained.
		fs.SetOutput(io.Discard)
		err := fs.Parse(args)
		fs.SetOutput(out)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, explainFlagError(fs, err))
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
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

// explainFlagError adds to the flag package's error what its reader needs next: the
// closest known flag to an unknown one, the unit a duration lacks, and where the flags
// are listed.
func explainFlagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		if closest := closestFlag(fs, name); closest != "" {
			return fmt.Sprintf("unknown flag --%s; did you mean --%s? (%s --help lists the flags)", name, closest, fs.Name())
		}
		return fmt.Sprintf("unknown flag --%s (%s --help lists the flags)", name, fs.Name())
	}
	var name string
	if _, rest, found := strings.Cut(msg, " for flag -"); found {
		name, _, _ = strings.Cut(rest, ":")
	}
	if f := fs.Lookup(name); f != nil {
		if getter, ok := f.Value.(flag.Getter); ok {
			if _, isDuration := getter.Get().(time.Duration); isDuration {
				return fmt.Sprintf("%s: --%s takes a duration with its unit, e.g. 10s, 500ms or 2m", msg, name)
			}
		}
	}
	return msg
}

// closestFlag returns the defined flag whose name is nearest to name (at most a third of
// its letters different), or "".
func closestFlag(fs *flag.FlagSet, name string) string {
	best, bestDistance := "", len(name)/3+1
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestDistance || (d == bestDistance && best != "" && f.Name < best) {
			best, bestDistance = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b: the fewest letters to insert,
// delete or change to turn one into the other.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current := make([]int, len(b)+1)
		current[0] = i
		for j := 1; j <= len(b); j++ {
			change := previous[j-1]
			if a[i-1] != b[j-1] {
				change++
			}
			current[j] = min(previous[j]+1, current[j-1]+1, change)
		}
		previous = current
	}
	return previous[len(b)]
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
