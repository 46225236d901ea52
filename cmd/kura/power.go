package main

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/kuradb/kura/api/kurav1"
)

// runPower drives a node's power cycle by hand (paper 003; docs/power.md): power sleep
// NODE, power wake NODE, or power status.
func runPower(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("power", stderr)
	nf := addNodeFlags(fs, oneNode, 5*time.Minute)
	fs.Lookup("addr").Usage = "client API address of any awake node"
	fs.Lookup("timeout").Usage = "how long to wait for the transition"
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && pos[0] == "status":
		return nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) error {
			st, err := admin.ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
			if err == nil {
				printPower(stdout, st)
			}
			return err
		})
	case len(pos) == 2 && (pos[0] == "sleep" || pos[0] == "wake"):
		return nf.withAdmin(func(ctx context.Context, admin kurav1.AdminClient) error {
			resp, err := admin.SetPower(ctx, &kurav1.SetPowerRequest{NodeId: pos[1], Action: pos[0]})
			if err == nil {
				fmt.Fprintf(stdout, "%s is %s\n", pos[1], resp.GetPower())
			}
			return err
		})
	}
	return fmt.Errorf("%w: power sleep NODE | power wake NODE | power status", errUsage)
}

// printPower lists every node's power state and modelled energy, and the cluster's.
func printPower(w io.Writer, st *kurav1.ClusterStatusResponse) {
	fmt.Fprintf(w, "seen from %s\n%-16s %-6s %-9s %9s %12s\n", st.GetSelf(), "NODE", "TIER", "POWER", "WATTS", "ENERGY_KJ")
	var watts, joules float64
	for _, n := range st.GetNodes() {
		fmt.Fprintf(w, "%-16s %-6d %-9s %9.1f %12.1f\n", n.GetId(), n.GetPowerTier(), n.GetPower(), n.GetPowerWatts(), n.GetEnergyJoules()/1000)
		watts += n.GetPowerWatts()
		joules += n.GetEnergyJoules()
	}
	fmt.Fprintf(w, "%-16s %-6s %-9s %9.1f %12.1f\n", "cluster", "", "", watts, joules/1000)
}

// processCPUTime is the CPU time of this process so far, user and system, every thread:
// a kura server runs one node, so it is the node's (node.Config.CPUTime).
func processCPUTime() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
