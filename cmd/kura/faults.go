package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/faults"
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
	addr := fs.String("addr", defaultClientAddr, "client API address of the node (comma-separated: each of them)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for each node")
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
	for _, a := range strings.Split(*addr, ",") {
		got, err := callFaults(a, req, *timeout)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", a, describeFaults(got))
	}
	return nil
}

// callFaults sets a node's faults (req non-nil) or reads them, and returns them.
func callFaults(addr string, req *kurav1.Faults, timeout time.Duration) (*kurav1.Faults, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	admin := kurav1.NewAdminClient(conn)
	var got *kurav1.Faults
	if req != nil {
		got, err = admin.SetFaults(ctx, req)
	} else {
		got, err = admin.GetFaults(ctx, &kurav1.GetFaultsRequest{})
	}
	if err != nil {
		return nil, fmt.Errorf("faults at %s: %s", addr, status.Convert(err).Message())
	}
	return got, nil
}

// describeFaults says what a node injects, in the words of faults.Spec.String.
func describeFaults(f *kurav1.Faults) string { return faults.FromProto(f).String() }
