// Command kura-bench runs the experiments that reproduce the papers' figures and set kura
// beside its peers: `kura-bench <name> [flags]`, which `kura bench <name> [flags]` runs
// too. It is a binary of its own so that the server links none of what only the benches
// need (gocql, gonum/plot).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kuradb/kura/cmd/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs a bench and returns the exit code: 0, 1 when the bench failed, 2 for an error
// in the command line.
func run(args []string, stdout, stderr io.Writer) int {
	err := runBench(args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, cli.ErrUsage):
		fmt.Fprintf(stderr, "kura-bench: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "kura-bench: %v\n", err)
		return 1
	}
}

// kuraBinary finds the kura binary whose `server` subcommand runs a bench's nodes: the
// one that ran `kura bench`, which names itself in the environment, else kura beside this
// binary or on PATH.
func kuraBinary() (string, error) {
	if bin := os.Getenv(cli.KuraBinaryEnv); bin != "" {
		return bin, nil
	}
	bin, err := cli.Sibling("kura")
	if err != nil {
		return "", fmt.Errorf("%w: give --bin, build one beside kura-bench (go build -o kura ./cmd/kura), or run the bench as kura bench", err)
	}
	return bin, nil
}
