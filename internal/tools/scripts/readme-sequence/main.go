// Command readme-sequence runs README.md's operator sequence on real `kura server`
// processes, with the commands README gives, its ports substituted: a cluster of three
// nodes in two DCs and a keyspace; two nodes joining at once under writes; a graceful
// restart and a kill -9 with a wiped disk of the seedless first node; a dead node
// replaced; puts and gets at QUORUM through every node; a decommission refused for
// want of nodes in a DC and one that goes through, under writes. After each step it
// waits for the cluster to settle by itself (every node normal and up in every live
// node's `kura status --json`, no repair run), then reads every acknowledged write at
// ONE through every live node, runs a lightweight transaction in the `default`
// keyspace (INCR, and MULTI/EXEC over two keys of one hash tag, through Redis) through
// every live node, and compares the `default` keyspace's definition on every node.
//
// Not part of go test or CI (real processes, minutes). See README.md, "Testing on real
// processes".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kuradb/kura/internal/tools/bench"
)

func main() {
	code, err := run(os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "readme-sequence:", err)
	}
	os.Exit(code)
}

// options are the command line's settings.
type options struct {
	kura          string
	settleTimeout time.Duration
	initialKeys   int
	writers       int
	jsonOut       bool
	keep          bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("readme-sequence", flag.ContinueOnError)
	fs.StringVar(&o.kura, "kura", "", "the kura binary to run (go build -o kura ./cmd/kura)")
	fs.DurationVar(&o.settleTimeout, "settle-timeout", 3*time.Minute, "how long the cluster may take to settle after a step, and each check to pass")
	fs.IntVar(&o.initialKeys, "keys", 200, "keys written at QUORUM after the keyspace is created")
	fs.IntVar(&o.writers, "writers", 2, "concurrent writers during the joins and the decommission")
	fs.BoolVar(&o.jsonOut, "json", false, "print the report as JSON on stdout")
	fs.BoolVar(&o.keep, "keep", false, "keep the data dirs and the nodes' logs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.kura == "" {
		return o, errors.New("--kura names no binary (go build -o kura ./cmd/kura)")
	}
	if o.settleTimeout < 10*time.Second {
		return o, errors.New("--settle-timeout must be at least 10s")
	}
	if o.initialKeys < 1 || o.writers < 1 {
		return o, errors.New("--keys and --writers must be at least 1")
	}
	return o, nil
}

// report is the whole run.
type report struct {
	Environment *bench.Environment `json:"environment"`
	WorkDir     string             `json:"work_dir,omitempty"` // kept with --keep
	Steps       []stepReport       `json:"steps"`
	Checks      int                `json:"checks"`
	Passed      int                `json:"passed"`
	Missing     int                `json:"missing"`
	Wrong       int                `json:"wrong"`
	Errors      int                `json:"errors"`
	// Stopped is why the sequence stopped before its end ("" when it ran whole).
	Stopped string `json:"stopped,omitempty"`
}

// stepReport is one step: how long its operation and the settling took, and its checks.
type stepReport struct {
	Name             string        `json:"name"`
	OperationSeconds float64       `json:"operation_s"`
	SettleSeconds    float64       `json:"settle_s"`
	Note             string        `json:"note,omitempty"`
	Checks           []checkReport `json:"checks"`
}

// checkReport is one check; for a read of the acknowledged writes, its counts.
type checkReport struct {
	Name    string  `json:"name"`
	OK      bool    `json:"ok"`
	Detail  string  `json:"detail"`
	Seconds float64 `json:"seconds"` // until it passed, or gave up
	Keys    int     `json:"keys,omitempty"`
	Missing int     `json:"missing,omitempty"`
	Wrong   int     `json:"wrong,omitempty"`
	Errors  int     `json:"errors,omitempty"`
}

func run(args []string, stdout io.Writer) (int, error) {
	o, err := parseFlags(args)
	if err != nil {
		return 2, err
	}
	if o.kura, err = filepath.Abs(o.kura); err != nil {
		return 2, err
	}
	if _, err := os.Stat(o.kura); err != nil {
		return 2, err
	}
	work, err := os.MkdirTemp("", "kura-readme-sequence-")
	if err != nil {
		return 2, err
	}
	env := bench.CaptureEnvironment(append([]string{"readme-sequence"}, args...))
	version, _ := kura(context.Background(), o.kura, "version")
	env.AddPeer(bench.PeerBuild{Name: "kura", Version: strings.TrimSpace(version), Config: o.kura})
	rep := &report{Environment: env}
	if o.keep {
		rep.WorkDir = work
		fmt.Fprintln(os.Stderr, "readme-sequence: data dirs and logs in", work)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &sequence{o: o, work: work, nodes: map[string]*node{}, ledger: newLedger(), rep: rep, lwt: &lwtState{}}
	if err := s.run(ctx); err != nil {
		rep.Stopped = err.Error()
	}
	s.stopAll()
	if !o.keep {
		os.RemoveAll(work)
	}
	env.End()
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return 1, err
		}
	} else {
		rep.print(stdout)
	}
	if rep.Stopped != "" || rep.Passed != rep.Checks {
		return 1, nil
	}
	return 0, nil
}

// summary is the run's last line.
func (r *report) summary() string {
	return fmt.Sprintf("%d of %d checks, %d missing, %d wrong, %d errors", r.Passed, r.Checks, r.Missing, r.Wrong, r.Errors)
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "README.md's operator sequence, kura %s\n", peerVersion(r.Environment))
	for _, st := range r.Steps {
		fmt.Fprintf(w, "%s: operation %.1f s, settled in %.1f s", st.Name, st.OperationSeconds, st.SettleSeconds)
		if st.Note != "" {
			fmt.Fprintf(w, "; %s", st.Note)
		}
		fmt.Fprintln(w)
		for _, c := range st.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "  %s %s: %s (%.1f s)\n", mark, c.Name, c.Detail, c.Seconds)
		}
	}
	if r.Stopped != "" {
		fmt.Fprintf(w, "stopped: %s\n", r.Stopped)
	}
	if r.WorkDir != "" {
		fmt.Fprintf(w, "data dirs and logs kept in %s\n", r.WorkDir)
	}
	fmt.Fprintln(w, r.summary())
}

func peerVersion(e *bench.Environment) string {
	for _, p := range e.Peers {
		if p.Name == "kura" {
			return p.Version
		}
	}
	return "(unknown)"
}
