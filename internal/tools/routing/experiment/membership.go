package experiment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/routing/chord"
	"github.com/kuradb/kura/internal/tools/sim"
)

// The partial-membership experiment (`kura bench routing --membership`): what a DHT node
// must hold of the cluster, and what keeping it costs, against onehop's full directory.
// Each DHT node keeps its partial membership (chord.Node.Members: fingers, successors,
// predecessors, for mlchord its local ring, and a gateway to each other DC), learnt and
// repaired by the protocol alone; a part of the nodes crashes and as many join, and after
// the protocol has run a while every live node's membership is compared with the one a
// stabilised ring gives it, and lookups with the true owners.

// MembershipConfig sets up the partial-membership experiment.
type MembershipConfig struct {
	// Sizes are the cluster sizes, in nodes over all DCs.
	Sizes []int
	// DCs is the number of DCs, of equal size (node i goes to DC i mod DCs).
	DCs int
	// Protocols are the DHTs measured; nil means chord and mlchord.
	Protocols []chord.Protocol
	// Lookups is the number of lookups per size and protocol, of uniform random keys from
	// uniform random live nodes, after the rings settled.
	Lookups int
	// ChurnFraction is the share of the nodes that crash as the run starts, with as many
	// new nodes joining through the protocol at the same time.
	ChurnFraction float64
	// Settle is how long the protocol runs after the churn before anything is measured;
	// 0 means 90 s, enough for fix_fingers (a slot a second) to refresh every finger.
	Settle time.Duration
	// MaintenanceWindow is how long maintenance traffic is counted after Settle; 0 means
	// 20 s.
	MaintenanceWindow time.Duration
	// ProtocolMaxNodes is the largest size the protocol runs at; larger sizes are measured
	// on stabilised tables only (no churn, no maintenance traffic), since simulating
	// every node's timers takes time in proportion to the nodes. 0 runs every size.
	ProtocolMaxNodes int
	// TickInterval is how often the simulator ticks each node; 0 means 200 ms.
	TickInterval time.Duration
	// Link gives one-way latencies; nil means the routing experiment's default.
	Link LinkModel
	Seed uint64
	// Progress, when set, is told each run (one size, one protocol) as it starts.
	Progress func(MembershipProgress)
}

// MembershipProgress is one run of the experiment: one DHT at one size.
type MembershipProgress struct {
	Protocol string
	Nodes    int
	// Run counts the runs done before this one, of Runs in all.
	Run, Runs int
}

// MembershipRow is one protocol at one size.
type MembershipRow struct {
	Nodes    int    `json:"nodes"`
	Protocol string `json:"protocol"`
	// MembersPerNode is the mean number of other nodes a node holds an entry for;
	// MembersMax the most any node holds.
	MembersPerNode float64 `json:"members_per_node"`
	MembersMax     int     `json:"members_max"`
	// MembershipBytesPerNode is the mean of the bytes a node's entries take, each entry
	// counted as the encoded record membership gossips for that node (see the notes).
	MembershipBytesPerNode float64 `json:"membership_bytes_per_node"`
	// MaintenanceBpsPerNode is the bits per second each node sends to keep its partial
	// membership (every DHT message but client lookups, TCP/IP headers included), after
	// the rings settled; 0 for onehop, whose directory is kept by membership gossip,
	// measured by `kura bench gossip`.
	MaintenanceBpsPerNode        float64 `json:"maintenance_bps_per_node"`
	MaintenanceInterDCBpsPerNode float64 `json:"maintenance_interdc_bps_per_node"`
	// MembersExactFraction is the share of live nodes whose partial membership (every
	// member and its roles) is the one a stabilised ring over the live nodes gives.
	MembersExactFraction float64 `json:"members_exact_fraction"`
	// GatewaysFraction is the share of (live node, other DC) pairs with a live gateway.
	GatewaysFraction float64 `json:"gateways_fraction"`
	// Lookups is how many lookups ran; CorrectFraction the share that found the true
	// owner among the live nodes (a failed lookup counts as wrong).
	Lookups         int     `json:"lookups"`
	CorrectFraction float64 `json:"correct_fraction"`
	HopsMean        float64 `json:"hops_mean"`
	// Crashed and Joined are the nodes that crashed and joined as the run started.
	Crashed int `json:"crashed"`
	Joined  int `json:"joined"`
	// TablesOnly marks a row measured on stabilised tables without running the protocol
	// (see MembershipConfig.ProtocolMaxNodes): its members are what stabilisation
	// converges to, its lookups run on them; it has no churn, no maintenance traffic,
	// and no exactness or gateway check (those fractions are 0).
	TablesOnly bool `json:"tables_only"`
}

// MembershipResult is the experiment's outcome.
type MembershipResult struct {
	// Rows hold, per size, onehop over the full directory and then each DHT.
	Rows []MembershipRow `json:"rows"`
	// EntryBytesMean is the mean size of one member's entry.
	EntryBytesMean float64  `json:"entry_bytes_mean"`
	Notes          []string `json:"notes"`
	WallSeconds    float64  `json:"wall_seconds"`
}

// entryGeneration is the generation every simulated node's entry carries: a boot time in
// Unix seconds, as membership.Config.Generation asks, here 2026-01-01.
var entryGeneration = uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix())

// entryBytes is the size of the entry a node holds for p: the record membership gossips
// about p as it starts (its name, generation, heartbeat, DC, address and status), with an
// address of the shape a real deployment has. Onehop's directory and a DHT node's partial
// membership count their entries alike, so the figures differ only by how many they hold.
func entryBytes(p chord.Peer, index int) int {
	addr := fmt.Sprintf("10.%d.%d.%d:7100", index>>16&0xff, index>>8&0xff, index&0xff)
	state := membership.NewLocalState(membership.Config{ID: p.Name, DC: p.DC, Addr: addr, Generation: entryGeneration})
	return state.WireSize()
}

func (c MembershipConfig) withDefaults() (MembershipConfig, error) {
	if c.Protocols == nil {
		c.Protocols = []chord.Protocol{chord.ProtocolChord, chord.ProtocolMLChord}
	}
	if c.Settle == 0 {
		c.Settle = 90 * time.Second
	}
	if c.MaintenanceWindow == 0 {
		c.MaintenanceWindow = 20 * time.Second
	}
	if c.TickInterval == 0 {
		c.TickInterval = 200 * time.Millisecond
	}
	if c.Link == nil {
		c.Link = defaultLink
	}
	if c.Progress == nil {
		c.Progress = func(MembershipProgress) {}
	}
	switch {
	case len(c.Sizes) == 0:
		return c, fmt.Errorf("%w: no sizes", ErrBadConfig)
	case c.DCs < 1:
		return c, fmt.Errorf("%w: %d DCs", ErrBadConfig, c.DCs)
	case c.Lookups < 1:
		return c, fmt.Errorf("%w: %d lookups", ErrBadConfig, c.Lookups)
	case c.ChurnFraction < 0 || c.ChurnFraction >= 0.5:
		return c, fmt.Errorf("%w: churn fraction %v, want [0, 0.5)", ErrBadConfig, c.ChurnFraction)
	case c.Settle < 0 || c.MaintenanceWindow < 0 || c.TickInterval < 0 || c.ProtocolMaxNodes < 0:
		return c, fmt.Errorf("%w: negative duration", ErrBadConfig)
	}
	for _, n := range c.Sizes {
		if n < 2*c.DCs {
			return c, fmt.Errorf("%w: %d nodes over %d DCs, want at least 2 per DC", ErrBadConfig, n, c.DCs)
		}
	}
	for _, p := range c.Protocols {
		if p < chord.ProtocolChord || p > chord.ProtocolMLChord {
			return c, fmt.Errorf("%w: protocol %d", ErrBadConfig, p)
		}
	}
	return c, nil
}

// RunMembership measures, at each size, onehop's full directory and each DHT's partial
// membership: its size, the traffic that keeps it, whether stabilisation brought it to
// the stabilised ring's after the churn, and whether lookups then find the true owners.
func RunMembership(cfg MembershipConfig) (MembershipResult, error) {
	started := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return MembershipResult{}, err
	}
	var result MembershipResult
	var entries, entryTotal int
	runs := len(cfg.Sizes) * len(cfg.Protocols)
	for si, size := range cfg.Sizes {
		peers, index := membershipPeers(size, cfg.DCs)
		for _, p := range peers {
			entryTotal += entryBytes(p, index[p.Name])
			entries++
		}
		result.Rows = append(result.Rows, fullDirectoryRow(peers, index))
		for pi, protocol := range cfg.Protocols {
			cfg.Progress(MembershipProgress{Protocol: protocol.String(), Nodes: size, Run: si*len(cfg.Protocols) + pi, Runs: runs})
			row, err := runMembershipTrial(cfg, protocol, peers, index, uint64(si))
			if err != nil {
				return MembershipResult{}, err
			}
			result.Rows = append(result.Rows, row)
		}
	}
	result.EntryBytesMean = float64(entryTotal) / float64(entries)
	result.Notes = []string{
		fmt.Sprintf("%d equal DCs; node i in DC i mod %d; 64-bit identifiers, successor lists of %d, gateways kept (one per other DC)", cfg.DCs, cfg.DCs, chord.DefaultSuccessorListLen),
		"an entry is the record membership gossips about a node as it starts: name, generation, heartbeat, dc, addr (10.a.b.c:7100), status, varint-encoded (membership.EndpointState.WireSize); both onehop's full directory and a DHT node's members count their entries so; a real node's record is larger (it adds power, levels, start time, protocol, load), so the directory's figure is a lower bound",
		"onehop: the full directory every node holds, all other live nodes; its maintenance is membership gossip (Ferry), measured by `kura bench gossip`, not here",
		fmt.Sprintf("DHT runs: every node starts from a stabilised ring; as the run starts %.3g of the nodes crash and as many new ones join through the protocol (through a random live node and one of their DC); the protocol then runs %v; members_exact_fraction compares each live node's members and roles with a stabilised ring's over the live nodes; maintenance is counted over the next %v; then the lookups run", cfg.ChurnFraction, cfg.Settle, cfg.MaintenanceWindow),
	}
	if cfg.ProtocolMaxNodes > 0 && slices.Max(cfg.Sizes) > cfg.ProtocolMaxNodes {
		result.Notes = append(result.Notes, fmt.Sprintf("tables_only rows (sizes above %d nodes): stabilised tables, the lookups run on them; no churn, no protocol run, so no maintenance, exactness or gateway figures (0)", cfg.ProtocolMaxNodes))
	}
	result.WallSeconds = time.Since(started).Seconds()
	return result, nil
}

// membershipPeers places size nodes in dcs DCs named dc1, dc2, ...; index numbers the
// nodes, for their addresses.
func membershipPeers(size, dcs int) ([]chord.Peer, map[string]int) {
	peers := make([]chord.Peer, size)
	index := make(map[string]int, size)
	for i := range peers {
		peers[i] = newPeer(fmt.Sprintf("dc%d", i%dcs+1), i)
		index[peers[i].Name] = i
	}
	return peers, index
}

// fullDirectoryRow is onehop's: every node holds an entry for every other node.
func fullDirectoryRow(peers []chord.Peer, index map[string]int) MembershipRow {
	total := 0
	for _, p := range peers {
		total += entryBytes(p, index[p.Name])
	}
	n := len(peers)
	// Each node holds every entry but its own.
	bytes := float64(total) * float64(n-1) / float64(n)
	return MembershipRow{
		Nodes: n, Protocol: "onehop", MembersPerNode: float64(n - 1), MembersMax: n - 1,
		MembershipBytesPerNode: bytes, MembersExactFraction: 1, GatewaysFraction: 1, CorrectFraction: 1,
	}
}

// runMembershipTrial runs one DHT at one size on the simulator.
func runMembershipTrial(cfg MembershipConfig, protocol chord.Protocol, peers []chord.Peer, index map[string]int, run uint64) (MembershipRow, error) {
	layout, err := chord.NewLayout(peers)
	if err != nil {
		return MembershipRow{}, fmt.Errorf("routing: membership layout: %w", err)
	}
	dcs := make([]string, cfg.DCs)
	for i := range dcs {
		dcs[i] = fmt.Sprintf("dc%d", i+1)
	}
	routingCfg := Config{Link: cfg.Link}
	s, err := sim.New(sim.Config{Seed: cfg.Seed + run, DCs: dcs, Links: simLinks(routingCfg), Wire: sim.TCPIPv4})
	if err != nil {
		return MembershipRow{}, fmt.Errorf("routing: membership simulator: %w", err)
	}
	t := &trial{
		cfg: routingCfg, protocol: protocol, keepGateways: true, sim: s, nodes: make(map[string]*simNode, len(peers)),
		layout: layout, pending: make(map[pendingKey]pendingLookup), rng: s.NewRand(),
	}
	tablesOnly := cfg.ProtocolMaxNodes > 0 && len(peers) > cfg.ProtocolMaxNodes
	tick := cfg.TickInterval
	if tablesOnly {
		tick = 0 // nothing runs but the lookups
	}
	for _, p := range peers {
		if err := t.addNode(p, tick, true); err != nil {
			return MembershipRow{}, err
		}
	}
	if tablesOnly {
		row := MembershipRow{Nodes: len(peers), Protocol: protocol.String(), TablesOnly: true}
		t.countMembers(&row, index)
		t.lookups(&row, cfg, run)
		return row, nil
	}
	churned := int(math.Round(cfg.ChurnFraction * float64(len(peers))))
	for range churned {
		i := t.rng.IntN(len(t.live))
		_ = t.sim.Crash(t.live[i]) // live: it cannot be down already
		t.live = slices.Delete(t.live, i, i+1)
	}
	byDC := map[string][]string{}
	for _, name := range t.live {
		dc := t.nodes[name].node.Self().DC
		byDC[dc] = append(byDC[dc], name)
	}
	var joiners []*simNode
	for j := range churned {
		p := newPeer(dcs[j%len(dcs)], len(peers)+j)
		index[p.Name] = len(peers) + j
		known := []chord.Peer{t.nodes[t.live[t.rng.IntN(len(t.live))]].node.Self()}
		if same := byDC[p.DC]; len(same) > 0 {
			known = append(known, t.nodes[same[t.rng.IntN(len(same))]].node.Self())
		}
		if err := t.addNode(p, cfg.TickInterval, false); err != nil {
			return MembershipRow{}, err
		}
		sn := t.nodes[p.Name]
		joiners = append(joiners, sn)
		_ = t.sim.Do(p.Name, func(now time.Duration) []sim.Envelope {
			return t.output(now, sn, sn.node.Join(now, known...))
		})
	}
	t.sim.RunUntil(cfg.Settle)
	live := make([]chord.Peer, len(t.live))
	for i, name := range t.live {
		live[i] = t.nodes[name].node.Self()
	}
	if t.layout, err = chord.NewLayout(live); err != nil {
		return MembershipRow{}, fmt.Errorf("routing: membership layout of the live nodes: %w", err)
	}
	row := MembershipRow{Nodes: len(peers), Protocol: protocol.String(), Crashed: churned, Joined: len(joiners)}
	if err := t.compareMembers(&row, index, cfg.DCs); err != nil {
		return MembershipRow{}, err
	}
	before := t.sim.Network().Counters()
	t.sim.RunUntil(cfg.Settle + cfg.MaintenanceWindow)
	maintenance := t.sim.Network().Counters().Sub(before)
	perNodeBps := func(c sim.Counter) float64 {
		return float64(c.Bytes) * 8 / cfg.MaintenanceWindow.Seconds() / float64(len(t.live))
	}
	isMaintenance := func(k sim.CounterKey) bool { return !strings.HasPrefix(k.Kind, kindLookup) }
	if cfg.MaintenanceWindow > 0 {
		row.MaintenanceBpsPerNode = perNodeBps(maintenance.Sum(isMaintenance))
		row.MaintenanceInterDCBpsPerNode = perNodeBps(maintenance.Sum(func(k sim.CounterKey) bool {
			return isMaintenance(k) && k.FromDC != k.ToDC
		}))
	}
	t.lookups(&row, cfg, run)
	return row, nil
}

// lookups runs the experiment's lookups from the live nodes and fills the row's figures.
func (t *trial) lookups(row *MembershipRow, cfg MembershipConfig, run uint64) {
	rng := rand.New(rand.NewPCG(cfg.Seed, run))
	plan := make([]plannedLookup, cfg.Lookups)
	for i := range plan {
		plan[i] = plannedLookup{coordinator: rng.Float64(), key: chord.ID(rng.Uint64())}
	}
	t.runLookups(plan, time.Millisecond)
	lookups := t.stats.row(row.Protocol)
	row.Lookups, row.CorrectFraction, row.HopsMean = lookups.Lookups, lookups.CorrectFraction, lookups.HopsMean
}

// countMembers fills the row's count and bytes of the live nodes' members.
func (t *trial) countMembers(row *MembershipRow, index map[string]int) {
	var members int
	var bytes float64
	for _, name := range t.live {
		have := t.nodes[name].node.Members()
		members += len(have)
		row.MembersMax = max(row.MembersMax, len(have))
		for _, m := range have {
			bytes += float64(entryBytes(m.Peer, index[m.Name]))
		}
	}
	n := float64(len(t.live))
	row.MembersPerNode = float64(members) / n
	row.MembershipBytesPerNode = bytes / n
}

// compareMembers fills the row's membership figures: each live node's members against
// those a stabilised ring over the live nodes gives it, their count and bytes, and its
// gateways.
func (t *trial) compareMembers(row *MembershipRow, index map[string]int, dcs int) error {
	t.countMembers(row, index)
	var exact, gateways int
	for _, p := range t.layout.Peers() {
		got := t.nodes[p.Name].node
		want, err := t.layout.StableNode(chord.Config{Self: p, Protocol: t.protocol, KeepGateways: true, Rand: t.rng})
		if err != nil {
			return fmt.Errorf("routing: membership: %w", err)
		}
		if slices.Equal(got.Members(), want.Members()) {
			exact++
		}
		for _, g := range got.Gateways() {
			if t.sim.Alive(g.Name) {
				gateways++
			}
		}
	}
	n := float64(len(t.live))
	row.MembersExactFraction = float64(exact) / n
	row.GatewaysFraction = 1 // with one DC there is no other to reach
	if dcs > 1 {
		row.GatewaysFraction = float64(gateways) / (n * float64(dcs-1))
	}
	return nil
}
