package bench

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/tools/sim"
	"github.com/kuradb/kura/internal/tools/sim/bubble"
	"github.com/kuradb/kura/internal/tools/sim/lifecycle"
)

// schedLAN is the simulated network between the nodes of a virtual run: a LAN whose hop
// adds little to a read's 3.9 ms of emulated device, as loopback does in the default
// run, with a little jitter so that no two messages arrive at one instant by accident.
var schedLAN = sim.LinkSpec{Latency: 100 * time.Microsecond, Jitter: 20 * time.Microsecond, BandwidthBps: 10e9}

// schedLANText is schedLAN for the report's scale.
const schedLANText = "100 µs one way, up to 20 µs of jitter, 10 Gbit/s"

// runSchedulingVirtual runs the bench in virtual time (--virtual): the cluster, its
// load and every point inside one testing/synctest bubble, the progress told from
// outside it, in real time. The summary's wall_s is the run's real time, virtual_s the
// time the bubble's clock moved.
func runSchedulingVirtual(ctx context.Context, env Env, o schedOptions) (*Report, error) {
	started := time.Now()
	// The bubble sends the points to do, then each point's status; a goroutine outside
	// it tells them on a Progress, whose clock must be real.
	totals, statuses := make(chan int), make(chan string)
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		points, ok := <-totals
		if !ok {
			return
		}
		progress := env.StartProgress("scheduling", float64(points))
		defer progress.Done()
		for status := range statuses {
			progress.Add(1, "%s", status)
		}
	}()
	var report *Report
	var err error
	errs := bubble.Run(1, []func(){func() {
		// The caller's context is not the bubble's, whose goroutines must not wait on it
		// (its clock would stand still): an interrupt is seen as a point ends.
		inner, cancel := context.WithCancel(context.Background())
		defer cancel()
		report, err = measureScheduling(inner, env, o, startVirtualSchedCluster, func(points int) (func(string), func()) {
			totals <- points
			return func(status string) {
				statuses <- status
				if ctx.Err() != nil {
					cancel()
				}
			}, func() {}
		})
	}})
	close(totals)
	close(statuses)
	<-forwarded
	if err := cmp.Or(errs[0], err, ctx.Err()); err != nil {
		return nil, err
	}
	report.Summary["virtual_s"] = report.Summary["wall_s"]
	report.Summary["wall_s"] = round(time.Since(started).Seconds(), 1)
	return report, nil
}

// schedConvergeTimeout bounds, in virtual time, how long the simulated nodes may take
// to see each other.
const schedConvergeTimeout = time.Minute

// startVirtualSchedCluster starts the bench's 12 nodes on the simulated network
// (internal/tools/sim/lifecycle), as startSchedCluster starts them over loopback: one DC,
// one evenly spaced token each, the read stage configured, all founding the cluster
// through the first. Call it inside a testing/synctest bubble.
func startVirtualSchedCluster(env Env, o schedOptions) (*schedCluster, error) {
	tokens := ring.EvenTokens(schedNodes)
	index := map[string]int{}
	for i := range schedNodes {
		index[schedNodeID(i)] = i
	}
	start := time.Now()
	c, err := lifecycle.Start(lifecycle.Config{
		Seed: o.seed, DCs: []string{"lan"}, Links: sim.UniformLinks{Local: schedLAN},
		Configure: func(spec lifecycle.NodeSpec, cfg *node.Config) {
			o.configureNode(cfg)
			cfg.Tokens = []uint64{uint64(tokens[index[spec.ID]])}
			cfg.Founding = true // the 12 nodes make a new cluster together
		},
	})
	if err != nil {
		return nil, err
	}
	sc := &schedCluster{device: o.device, virtual: true, clock: " of virtual time", close: c.Close}
	for i := range schedNodes {
		spec := lifecycle.NodeSpec{ID: schedNodeID(i), DC: "lan"}
		if i > 0 {
			spec.Seeds = []string{schedNodeID(0)}
		}
		if err := c.StartNode(spec); err != nil {
			c.Close()
			return nil, err
		}
		run, err := c.Running(spec.ID)
		if err != nil {
			c.Close()
			return nil, err
		}
		sc.nodes = append(sc.nodes, run)
	}
	for converged, why := c.Converged(); !converged; converged, why = c.Converged() {
		if time.Since(start) > schedConvergeTimeout {
			c.Close()
			return nil, fmt.Errorf("the simulated nodes did not see each other within %v of virtual time: %s", schedConvergeTimeout, why)
		}
		c.Run(100 * time.Millisecond)
	}
	sc.connect = func(_ context.Context, clients int, o schedOptions, _ [][]byte) (schedClients, error) {
		return schedCoordinators{nodes: sc.nodes, nodeOf: bindClients(clients, o.seed)}, nil
	}
	env.Progressf("scheduling: %d simulated nodes up in %.1f s of virtual time, %d read workers each, device %s, shared %v", schedNodes, time.Since(start).Seconds(), o.readWorkers, o.device, o.sharedDevice)
	return sc, nil
}

// schedCoordinators sends each query goroutine's queries to its node's coordinator, as
// the node's client API would: in virtual time the Go client's hop and connection cost
// nothing, and there is no connection to warm up.
type schedCoordinators struct {
	nodes  []*node.Node
	nodeOf []int
}

func (s schedCoordinators) get(ctx context.Context, w int, keyspace string, key []byte) error {
	_, _, err := s.nodes[s.nodeOf[w]].Coordinator().Get(ctx, keyspace, key, consistency.One)
	return err
}

func (s schedCoordinators) scan(ctx context.Context, w int, keyspace string, start []byte, limit int) (int, []byte, error) {
	got, err := s.nodes[s.nodeOf[w]].Coordinator().Scan(ctx, keyspace, start, nil, limit, consistency.One)
	if err != nil || len(got) == 0 {
		return 0, nil, err
	}
	return len(got), got[0].Key, nil
}

// Close closes nothing: the coordinators belong to the nodes.
func (schedCoordinators) Close() {}
