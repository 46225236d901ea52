package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/io/faults"
)

// runFaults injects faults into nodes started with --enable-faults, or heals them: the
// partitions, loss, delay and clock skew `kura nemesis` applies, by hand.
func runFaults(args []string, stdout, stderr io.Writer) error {
	const usage = "faults set|clear|show [flags]"
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	if isHelp(args[0]) {
		return subcommandHelp(stderr, usage, "faults")
	}
	verb := args[0]
	fs := newFlagSet("faults "+verb, stderr)
	nf := addNodeFlags(fs, eachNode, 10*time.Second)
	var partition *string
	var loss *float64
	var delay, clockOffset *time.Duration
	var to *string
	if verb == "set" {
		partition = fs.String("partition", "", "comma-separated peers to cut off both ways: node ids, dc:NAME, or *")
		to = fs.String("to", "*", "the peers --loss and --delay apply to: a node id, dc:NAME, or *")
		loss = fs.Float64("loss", 0, "probability that a request or one-way message to --to is dropped")
		delay = fs.Duration("delay", 0, "added to every frame sent to --to")
		clockOffset = fs.Duration("clock-offset", 0, "added to the node's wall clock (e.g. 30s, -2s)")
	}
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: %s takes no arguments, only flags", errUsage, verb)
	}
	var req *kurav1.Faults
	switch verb {
	case "set":
		spec := faults.Spec{ClockOffset: *clockOffset}
		if *partition != "" {
			spec.Partitioned = strings.Split(*partition, ",")
		}
		if *loss != 0 || *delay != 0 {
			spec.Links = []faults.Link{{Target: *to, Loss: *loss, Delay: *delay}}
		}
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		req = spec.Proto()
	case "clear":
		req = &kurav1.Faults{}
	case "show":
	default:
		return fmt.Errorf("%w: unknown subcommand %q; %s", errUsage, verb, usage)
	}
	return nf.eachAdmin(func(ctx context.Context, addr string, admin kurav1.AdminClient) error {
		got, err := callFaults(ctx, admin, req)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", addr, describeFaults(got))
		return nil
	})
}

// callFaults sets a node's faults (req non-nil) or reads them, and returns them.
func callFaults(ctx context.Context, admin kurav1.AdminClient, req *kurav1.Faults) (*kurav1.Faults, error) {
	if req != nil {
		return admin.SetFaults(ctx, req)
	}
	return admin.GetFaults(ctx, &kurav1.GetFaultsRequest{})
}

// describeFaults says what a node injects, in the words of faults.Spec.String.
func describeFaults(f *kurav1.Faults) string { return faults.FromProto(f).String() }
