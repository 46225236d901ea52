package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/tools/sim/bubble"
	"github.com/kuradb/kura/internal/tools/sim/explore"
)

// runSimulate runs the schedule explorer (package internal/tools/sim/explore) over a range of seeds:
// each seed a whole cluster, life cycle included, in virtual time. Progress goes to
// stderr; the verdict to stdout, as text or one JSON object.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("simulate", stderr)
	seeds := fs.String("seeds", "1-100", "the seeds to run, A-B")
	asJSON := fs.Bool("json", false, "print one JSON object: seeds, runs, violations (each with its seed and a one-line reason), minimal schedules")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "seeds run at once")
	shrink := fs.Int("shrink", 20, "runs spent shrinking each failing seed to its fewest actions (0: none)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: simulate takes flags only", errUsage)
	}
	from, to, err := explore.ParseSeeds(*seeds)
	if err != nil {
		return fmt.Errorf("%w: --seeds: %v", errUsage, err)
	}
	if *parallel < 1 || *shrink < 0 {
		return fmt.Errorf("%w: --parallel must be at least 1 and --shrink at least 0", errUsage)
	}
	start := time.Now()
	report := simulateReport{Seeds: *seeds, Violations: []explore.Violation{}}
	var mu sync.Mutex
	var failing []uint64
	var runs []func()
	for seed := from; seed <= to; seed++ {
		runs = append(runs, func() {
			res := explore.Run(explore.Generate(seed))
			mu.Lock()
			defer mu.Unlock()
			report.Runs++
			report.Acknowledged += res.Acknowledged
			report.Increments += res.Increments
			if len(res.Violations) > 0 {
				failing = append(failing, seed)
				report.Violations = append(report.Violations, res.Violations...)
				// Said at once: a run of thousands of seeds takes hours, and the seed is
				// what an engineer needs to start on it.
				fmt.Fprintf(stderr, "simulate: seed %d failed: %s: %s\n", seed, res.Violations[0].Check, res.Violations[0].Reason)
			}
		})
	}
	// Progress is told from outside the bubbles, whose clocks are virtual.
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				mu.Lock()
				fmt.Fprintf(stderr, "simulate: %d of %d seeds run, %d failing, %v\n", report.Runs, to-from+1, len(failing), time.Since(start).Round(time.Second))
				mu.Unlock()
			}
		}
	}()
	errs := bubble.Run(*parallel, runs)
	close(done)
	fmt.Fprintf(stderr, "simulate: %d seeds run, %d failing, %v\n", report.Runs, len(failing), time.Since(start).Round(time.Second))
	for i, err := range errs {
		if err != nil {
			report.Violations = append(report.Violations, explore.Violation{Seed: from + uint64(i), Check: "crash", Reason: err.Error()})
			failing = append(failing, from+uint64(i))
		}
	}
	for _, seed := range failing {
		if *shrink == 0 {
			break
		}
		fmt.Fprintf(stderr, "simulate: shrinking seed %d\n", seed)
		var minimal explore.Schedule
		bubble.Run(1, []func(){func() { minimal, _ = explore.Shrink(explore.Generate(seed), *shrink) }})
		report.Minimal = append(report.Minimal, simulateMinimal{Seed: seed, Schedule: minimal.String()})
	}
	report.TookSeconds = time.Since(start).Seconds()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		printSimulate(stdout, report)
	}
	if len(report.Violations) > 0 {
		return fmt.Errorf("%d violations in %d of %d seeds", len(report.Violations), len(failing), report.Runs)
	}
	return nil
}

// simulateReport is kura simulate's verdict.
type simulateReport struct {
	Seeds        string              `json:"seeds"`
	Runs         int                 `json:"runs"`
	Acknowledged int                 `json:"acknowledged_writes"`
	Increments   int                 `json:"acknowledged_increments"`
	Violations   []explore.Violation `json:"violations"`
	// Minimal holds, for each failing seed, the fewest of its actions that still fail.
	Minimal     []simulateMinimal `json:"minimal_schedules,omitempty"`
	TookSeconds float64           `json:"took_s"`
}

type simulateMinimal struct {
	Seed     uint64 `json:"seed"`
	Schedule string `json:"schedule"`
}

func printSimulate(w io.Writer, r simulateReport) {
	fmt.Fprintf(w, "seeds %s: %d runs, %d acknowledged writes and %d increments checked, %d violations, %.0f s\n", r.Seeds, r.Runs, r.Acknowledged, r.Increments, len(r.Violations), r.TookSeconds)
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  seed %d: %s: %s\n", v.Seed, v.Check, v.Reason)
	}
	for _, m := range r.Minimal {
		fmt.Fprintf(w, "\nminimal schedule of %s\n", m.Schedule)
	}
}
