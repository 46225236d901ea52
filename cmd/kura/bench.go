package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kuradb/kura/bench"
)

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "Usage: kura bench <name> [flags] [--json] [--plot FILE.png]\n\nBenches:")
		for _, b := range bench.All() {
			fmt.Fprintf(stderr, "  %-14s %s\n", b.Name, b.Summary)
		}
		if len(args) == 0 {
			return fmt.Errorf("%w: name a bench", errUsage)
		}
		return nil
	}
	b, ok := bench.Lookup(args[0])
	if !ok {
		return fmt.Errorf("%w: unknown bench %q (kura bench --help lists them)", errUsage, args[0])
	}
	fs := newFlagSet("bench "+b.Name, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	plotPath := fs.String("plot", "", "draw the figure to this PNG file")
	runner := b.Setup(fs)
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := runner(ctx, bench.Env{Progress: stderr})
	if err != nil {
		return err
	}
	if *plotPath != "" {
		if report.Plot == nil {
			return fmt.Errorf("bench %s draws no figure", b.Name)
		}
		if err := report.Plot(*plotPath); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "figure written to %s\n", *plotPath)
	}
	if *asJSON {
		return report.WriteJSON(stdout)
	}
	return report.WriteTable(stdout)
}
