package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/kuradb/kura/cmd/internal/cli"
	"github.com/kuradb/kura/internal/tools/bench"
)

// runBench runs the bench args name with the flags that follow: `kura-bench NAME
// [flags]`, which `kura bench NAME [flags]` runs too.
func runBench(args []string, stdout, stderr io.Writer) (err error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "Usage: kura-bench <name> [flags] [--json] [--plot FILE.png]\n(kura bench <name> ... runs it too)\n\nBenches:")
		for _, b := range bench.All() {
			fmt.Fprintf(stderr, "  %-14s %s\n", b.Name, b.Summary)
		}
		if len(args) == 0 {
			return fmt.Errorf("%w: name a bench", cli.ErrUsage)
		}
		return nil
	}
	b, ok := bench.Lookup(args[0])
	if !ok {
		return fmt.Errorf("%w: unknown bench %q (kura-bench --help lists them)", cli.ErrUsage, args[0])
	}
	fs := cli.NewFlagSet("kura-bench "+b.Name, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	plotPath := fs.String("plot", "", "draw the figure to this PNG file")
	// Profiles are how the simulator's memory and time are found and
	// checked at scale (issue 17); they cost nothing when not asked for.
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the run to this file")
	memProfile := fs.String("memprofile", "", "write a pprof heap profile to this file: in-use at the run's peak live heap, allocated over the whole run")
	runner := b.Setup(fs)
	pos, err := cli.ParseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", cli.ErrUsage, pos)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		peak := watchHeapPeak(*memProfile)
		defer func() {
			if perr := peak(); err == nil {
				err = perr
			}
		}()
	}
	environment := bench.CaptureEnvironment(append([]string{"kura-bench"}, args...))
	report, err := runner(ctx, bench.Env{Progress: stderr, Environment: environment, KuraBinary: kuraBinary})
	if err != nil {
		return err
	}
	environment.End()
	report.Environment = environment
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

// heapPollInterval is how often watchHeapPeak reads the live heap: often
// enough to catch the peak of a run that lasts a minute, and cheap (a read of
// runtime metrics, no stop of the world).
const heapPollInterval = 200 * time.Millisecond

// watchHeapPeak writes the heap profile to path each time the live heap (as
// of the last garbage collection) grows past its highest value so far, so
// that the in-use figures are the run's peak rather than what is left once
// the simulated clusters are gone. The returned function stops watching and
// writes the profile once more if none was written. The watcher only reads
// the runtime's state, so the run's results do not depend on it.
func watchHeapPeak(path string) (stop func() error) {
	done := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		written := false
		ticker := time.NewTicker(heapPollInterval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				if written {
					finished <- nil
				} else {
					finished <- writeHeapProfile(path)
				}
				return
			case <-ticker.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > peak+peak/20 {
				peak = live
				if err := writeHeapProfile(path); err != nil {
					finished <- err
					<-done
					return
				}
				written = true
			}
		}
	}()
	return func() error {
		close(done)
		return <-finished
	}
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
