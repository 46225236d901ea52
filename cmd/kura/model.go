package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/tools/model"
)

// modelFlags are `kura model`'s settings.
type modelFlags struct {
	topology    string
	tokens      string
	vnodes      int
	addr        string
	keyspace    string
	replication string
	levels      string
	coordinator string
	ops         string
	processing  float64
	keyBytes    int
	valueBytes  int
	ranges      bool
	asJSON      bool
	security    securityFlags
}

func runModel(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("model", stderr)
	f := modelFlags{}
	fs.StringVar(&f.topology, "topology", "three-dc", "topology file or example name: the DCs' latency and bandwidth (and, without --addr, the nodes)")
	fs.StringVar(&f.tokens, "tokens", "vnodes", "token layout of the topology's nodes: vnodes (kura's default) or even (one evenly spaced token per node, in file order)")
	fs.IntVar(&f.vnodes, "vnodes", ring.DefaultVnodes, "tokens per node for the vnodes layout and for nodes of a running cluster placed by id")
	fs.StringVar(&f.addr, "addr", "", "client API address of a running cluster: take its nodes, tokens and (with --keyspace) replication from it")
	fs.StringVar(&f.keyspace, "keyspace", "", "with --addr: the keyspace whose replication to model")
	fs.StringVar(&f.replication, "replication", "", "replication to model: 3, simple=3 or dc1=2,dc2=1")
	fs.StringVar(&f.levels, "consistency", "ANY,ONE,QUORUM,ALL", "consistency levels, comma-separated; at SERIAL and LOCAL_SERIAL a write is a compare-and-set (3 round trips) and a read a serial read (1)")
	fs.StringVar(&f.coordinator, "coordinator", "each", "node that coordinates the requests, or each")
	fs.StringVar(&f.ops, "op", "write,read", "operations: write, read or both comma-separated")
	fs.Float64Var(&f.processing, "proc-ms", 1, "t_proc: a request's time apart from the network wait (paper 002 measured ~1 ms; kura bench latency-model calibrates it for this machine)")
	fs.IntVar(&f.keyBytes, "key-bytes", 16, "key size, for serialisation on narrow links")
	fs.IntVar(&f.valueBytes, "value-bytes", 256, "value size, for serialisation on narrow links")
	fs.BoolVar(&f.ranges, "ranges", false, "show every token range: replicas, awaited replies, latency")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object instead of the table")
	f.security = addSecurityFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
	}
	result, err := f.run()
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(result)
	}
	return result.writeTable(stdout, f.ranges)
}

// modelResult is what `kura model` prints; its JSON is the --json output.
type modelResult struct {
	Topology     string     `json:"topology"`
	Replication  string     `json:"replication"`
	Tokens       string     `json:"tokens"`
	ProcessingMs float64    `json:"t_proc_ms"`
	ValueBytes   int        `json:"value_bytes"`
	Rows         []modelRow `json:"rows"`
}

// modelRow is one coordinator, operation and level.
type modelRow struct {
	Coordinator string  `json:"coordinator"`
	DC          string  `json:"dc"`
	Op          string  `json:"op"`
	Consistency string  `json:"consistency"`
	P           float64 `json:"p"`
	// RoundTrips is how many times a request waits for the level's replies (2 for a
	// compare-and-set).
	RoundTrips int `json:"round_trips"`
	// LatencyMs and LatencyMsMax are absent when no key can meet the level.
	LatencyMs        *float64        `json:"latency_ms,omitempty"`
	LatencyMsMax     *float64        `json:"latency_ms_max,omitempty"`
	UnavailableShare float64         `json:"unavailable_share"`
	Ranges           []modelRangeRow `json:"ranges,omitempty"`
}

// modelRangeRow is one token range of a row, shown with --ranges.
type modelRangeRow struct {
	Start       uint64   `json:"start"`
	End         uint64   `json:"end"`
	Share       float64  `json:"share"`
	Replicas    []string `json:"replicas"`
	Awaited     []string `json:"awaited,omitempty"`
	LatencyMs   float64  `json:"latency_ms"`
	Remote      bool     `json:"remote"`
	Unavailable bool     `json:"unavailable"`
}

// run builds the model and predicts every row the flags ask for.
func (f modelFlags) run() (*modelResult, error) {
	topo, err := loadTopology(f.topology)
	if err != nil {
		return nil, err
	}
	levels, err := parseLevels(f.levels)
	if err != nil {
		return nil, err
	}
	ops, err := parseOps(f.ops)
	if err != nil {
		return nil, err
	}
	r, replication, source, err := f.ringAndReplication(topo)
	if err != nil {
		return nil, err
	}
	strategy, err := ring.ParseReplication(replication)
	if err != nil {
		return nil, fmt.Errorf("%w: --replication: %v", errUsage, err)
	}
	if f.processing < 0 {
		return nil, fmt.Errorf("%w: --proc-ms %v must not be negative", errUsage, f.processing)
	}
	m, err := model.New(r, topo, model.Params{
		Processing: time.Duration(f.processing * float64(time.Millisecond)),
		KeyBytes:   f.keyBytes,
		ValueBytes: f.valueBytes,
	})
	if err != nil {
		return nil, err
	}
	coordinators, err := f.coordinators(r, topo)
	if err != nil {
		return nil, err
	}
	result := &modelResult{Topology: topo.Name, Replication: strategy.String(), Tokens: source, ProcessingMs: f.processing, ValueBytes: f.valueBytes}
	for _, coordinator := range coordinators {
		for _, op := range ops {
			for _, level := range levels {
				if op == model.Read && level == consistency.Any {
					continue // ANY is a write level
				}
				pred, err := m.Predict(coordinator, strategy, level, op)
				if err != nil {
					return nil, err
				}
				result.Rows = append(result.Rows, newModelRow(pred, f.ranges))
			}
		}
	}
	return result, nil
}

// ringAndReplication returns the ring to model, the replication setting and a word on
// where the tokens came from: a running cluster's when --addr is given, else the
// topology's nodes laid out by --tokens.
func (f modelFlags) ringAndReplication(topo *topology.Topology) (*ring.Ring, string, string, error) {
	if f.addr == "" {
		if f.replication == "" {
			return nil, "", "", fmt.Errorf("%w: --replication is required (e.g. --replication simple=3), or --addr with --keyspace", errUsage)
		}
		layout, err := model.ParseLayout(f.tokens, topo, f.vnodes)
		if err != nil {
			return nil, "", "", fmt.Errorf("%w: --tokens: %v", errUsage, err)
		}
		r, err := model.Ring(topo, layout)
		if err != nil {
			return nil, "", "", err
		}
		return r, f.replication, f.tokens, nil
	}
	opts, err := f.security.options()
	if err != nil {
		return nil, "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, strings.Split(f.addr, ","), opts)
	if err != nil {
		return nil, "", "", err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return nil, "", "", err
	}
	members := make([]ring.Member, len(st.GetNodes()))
	for i, n := range st.GetNodes() {
		members[i] = ring.Member{ID: n.GetId(), DC: n.GetDc(), Tokens: cluster.Node{ID: n.GetId(), Tokens: n.GetTokens()}.RingTokens(f.vnodes)}
	}
	r, err := ring.New(members)
	if err != nil {
		return nil, "", "", fmt.Errorf("ring of the cluster at %s: %w", f.addr, err)
	}
	replication := f.replication
	if replication == "" {
		if f.keyspace == "" {
			return nil, "", "", fmt.Errorf("%w: with --addr, name --keyspace or --replication", errUsage)
		}
		ks, err := c.Keyspace(ctx, f.keyspace)
		if err != nil {
			return nil, "", "", err
		}
		replication = ks.GetReplication()
	}
	return r, replication, "cluster at " + f.addr, nil
}

// coordinators lists the nodes to model as coordinator: the one named, or every node (in
// topology order when the topology lists them, else by id).
func (f modelFlags) coordinators(r *ring.Ring, topo *topology.Topology) ([]string, error) {
	if f.coordinator != "each" {
		if _, ok := r.Member(f.coordinator); !ok {
			return nil, fmt.Errorf("%w: --coordinator: no node %q", errUsage, f.coordinator)
		}
		return []string{f.coordinator}, nil
	}
	var ids []string
	for _, n := range topo.Nodes() {
		if _, ok := r.Member(n.ID); ok {
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == r.Len() {
		return ids, nil
	}
	ids = ids[:0]
	for _, m := range r.Members() {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

func parseLevels(list string) ([]consistency.Level, error) {
	var levels []consistency.Level
	for _, name := range strings.Split(list, ",") {
		level, err := consistency.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("%w: --consistency: %v", errUsage, err)
		}
		levels = append(levels, level)
	}
	return levels, nil
}

func parseOps(list string) ([]model.Op, error) {
	var ops []model.Op
	for _, name := range strings.Split(list, ",") {
		op, err := model.ParseOp(name)
		if err != nil {
			return nil, fmt.Errorf("%w: --op: %v", errUsage, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func newModelRow(pred model.Prediction, withRanges bool) modelRow {
	row := modelRow{
		Coordinator:      pred.Coordinator,
		DC:               pred.DC,
		Op:               pred.Op.String(),
		Consistency:      pred.Level.String(),
		P:                pred.P,
		RoundTrips:       pred.RoundTrips,
		UnavailableShare: pred.UnavailableShare,
	}
	if pred.Available() {
		mean, worst := durationMs(pred.Latency), durationMs(pred.LatencyMax)
		row.LatencyMs, row.LatencyMsMax = &mean, &worst
	}
	if withRanges {
		for _, rp := range pred.Ranges {
			row.Ranges = append(row.Ranges, modelRangeRow{
				Start: uint64(rp.Range.Start), End: uint64(rp.Range.End), Share: rp.Share,
				Replicas: rp.Replicas, Awaited: rp.Awaited, LatencyMs: durationMs(rp.Latency),
				Remote: rp.Remote, Unavailable: rp.Unavailable,
			})
		}
	}
	return row
}

func durationMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeTable prints the result for people: one line per row; with ranges, then each
// row's token ranges.
func (r *modelResult) writeTable(w io.Writer, withRanges bool) error {
	fmt.Fprintf(w, "model of %s: replication %s, tokens %s, t_proc %g ms, %d-byte values\n",
		r.Topology, r.Replication, r.Tokens, r.ProcessingMs, r.ValueBytes)
	fmt.Fprintln(w, "p: share of the key space that waits on a reply from another DC (paper 002)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COORDINATOR\tDC\tOP\tCONSISTENCY\tROUND_TRIPS\tP\tLATENCY_MS\tLATENCY_MS_MAX\tUNAVAILABLE")
	for _, row := range r.Rows {
		mean, worst := "unavailable", "-"
		if row.LatencyMs != nil {
			mean, worst = fmt.Sprintf("%.3f", *row.LatencyMs), fmt.Sprintf("%.3f", *row.LatencyMsMax)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%.4f\t%s\t%s\t%.4f\n", row.Coordinator, row.DC, row.Op, row.Consistency, row.RoundTrips, row.P, mean, worst, row.UnavailableShare)
	}
	if err := tw.Flush(); err != nil || !withRanges {
		return err
	}
	for _, row := range r.Rows {
		fmt.Fprintf(w, "\n%s %s at %s:\n", row.Coordinator, row.Op, row.Consistency)
		fmt.Fprintln(tw, "  RANGE_START\tRANGE_END\tSHARE\tLATENCY_MS\tREPLICAS\tAWAITED")
		for _, rg := range row.Ranges {
			latency, awaited := fmt.Sprintf("%.3f", rg.LatencyMs), strings.Join(rg.Awaited, " ")
			if rg.Unavailable {
				latency, awaited = "unavailable", "-"
			}
			fmt.Fprintf(tw, "  %d\t%d\t%.4f\t%s\t%s\t%s\n", rg.Start, rg.End, rg.Share, latency, strings.Join(rg.Replicas, " "), awaited)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
