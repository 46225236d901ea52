package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kuradb/kura/internal/tools/demo"
)

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	duration := fs.Duration("duration", 20*time.Second, "how long the mixed workload runs")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the summary")
	topologyArg := fs.String("topology", "three-dc", "topology file or example name")
	keys := fs.Int("keys", 2000, "keys loaded before the workload")
	clients := fs.Int("clients-per-dc", 8, "concurrent clients in each DC")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	topo, err := loadTopology(*topologyArg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "starting %d nodes of topology %s with emulated WAN...\n", len(topo.Nodes()), topo.Name)
	result, err := demo.Run(ctx, demo.Options{
		Duration: *duration, Topology: topo, Keys: *keys, ClientsPerDC: *clients, Progress: stderr,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(result); err != nil {
			return err
		}
	} else {
		result.WriteSummary(stdout)
	}
	if result.Errors > 0 {
		return fmt.Errorf("%w: %d of %d operations failed", demo.ErrFailed, result.Errors, result.Ops)
	}
	return nil
}
