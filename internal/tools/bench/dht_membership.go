package bench

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/kuradb/kura/internal/tools/routing/experiment"
)

func init() {
	Register(Bench{
		Name:    "dht-membership",
		Summary: "issue 48: partial membership of chord/mlchord nodes (fingers, successors, gateways) against onehop's full directory: entries and bytes held, maintenance traffic, correctness after churn",
		Setup:   setupDHTMembership,
	})
}

// The dht-membership bench's defaults: the sizes over 5 DCs, the protocol run up
// to 10,000 nodes (simulating every node's timers at 100,000 takes hours on 2 cores).
const (
	dhtMembershipSizes            = "1000,10000,100000"
	dhtMembershipDCs              = 5
	dhtMembershipLookups          = 2000
	dhtMembershipChurnPercent     = 1.0
	dhtMembershipProtocolMaxNodes = 10_000
)

// DHTMembershipRow is one protocol at one size.
type DHTMembershipRow struct {
	experiment.MembershipRow `table:"nodes,protocol,members_per_node,membership_bytes_per_node,maintenance_bps_per_node,members_exact_fraction,gateways_fraction,correct_fraction,tables_only"`
}

func setupDHTMembership(fs *flag.FlagSet) Runner {
	sizes := fs.String("nodes", dhtMembershipSizes, "cluster sizes, nodes over all DCs")
	dcs := fs.Int("dcs", dhtMembershipDCs, "DCs, of equal size")
	lookups := fs.Int("lookups", dhtMembershipLookups, "lookups per size and protocol, after the rings settled")
	churn := fs.Float64("churn-percent", dhtMembershipChurnPercent, "percent of the nodes that crash as the run starts, with as many joining")
	protocolMax := fs.Int("protocol-max-nodes", dhtMembershipProtocolMaxNodes, "largest size the protocol runs at; larger ones are measured on stabilised tables only (0: run every size)")
	seed := fs.Uint64("seed", 1, "seed of the simulator and the workload")
	return func(ctx context.Context, env Env) (*Report, error) {
		cfg := experiment.MembershipConfig{
			DCs: *dcs, Lookups: *lookups, ChurnFraction: *churn / 100, ProtocolMaxNodes: *protocolMax, Seed: *seed,
		}
		for _, field := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(field))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--nodes %q: want positive node counts, e.g. 1000,10000", *sizes)
			}
			cfg.Sizes = append(cfg.Sizes, n)
		}
		var progress *Progress
		cfg.Progress = func(p experiment.MembershipProgress) {
			if progress == nil {
				progress = env.StartProgress("dht-membership", float64(p.Runs))
			}
			progress.Add(float64(min(p.Run, 1)), "%s at %d nodes", p.Protocol, p.Nodes)
		}
		res, err := experiment.RunMembership(cfg)
		if progress != nil {
			progress.Add(1, "done")
			progress.Done()
		}
		if err != nil {
			return nil, err
		}
		rows := make([]DHTMembershipRow, len(res.Rows))
		for i, r := range res.Rows {
			rows[i] = DHTMembershipRow{r}
		}
		return &Report{
			Bench: "dht-membership",
			Scale: fmt.Sprintf("simulated: %s nodes in %d DCs; %.3g %% crash and as many join; protocol run up to %d nodes; %d lookups per run; seed %d",
				*sizes, cfg.DCs, *churn, cfg.ProtocolMaxNodes, cfg.Lookups, cfg.Seed),
			Rows: rows,
			Summary: map[string]any{
				"entry_bytes_mean": res.EntryBytesMean,
				"wall_seconds":     res.WallSeconds,
			},
			Notes: res.Notes,
		}, nil
	}
}
