package nemesis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kuradb/kura/api/kurav1"
)

// ClusterConfig says how to start a cluster of `kura server` processes.
type ClusterConfig struct {
	// Bin is the kura binary; its `server` subcommand runs each node.
	Bin string
	// Nodes and DCs: node i goes to DC i*DCs/Nodes, so 5 nodes in 2 DCs are 3+2.
	Nodes, DCs int
	// Dir holds each node's data dir and log; it must exist.
	Dir string
	// GossipInterval is every node's gossip round; short rounds detect failures fast.
	GossipInterval time.Duration
	// ServerArgs are added to every node's `kura server` command line: a topology file
	// and --emulate-wan, say, for a harness that measures the cluster (kura bench peers).
	ServerArgs []string
}

// node is one node of the cluster under test: a process this harness runs, or, attached,
// only its client address.
type node struct {
	Member
	client, resp, listen string
	dataDir, logPath     string
	conn                 *grpc.ClientConn

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the current process has exited
	// unexpected records exits the harness did not cause (a crash of kura itself).
	unexpected []string
	killing    bool
}

// Cluster is the cluster under test.
type Cluster struct {
	nodes      []*node
	bin        string
	gossip     time.Duration
	serverArgs []string
	attached   bool
}

// StartCluster starts cfg.Nodes `kura server` processes on loopback addresses
// 127.0.0.2, 127.0.0.3, ..., each with its data dir and log in cfg.Dir and faults
// enabled, and waits until every node sees every node up and normal.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.Nodes < 1 || cfg.DCs < 1 || cfg.DCs > cfg.Nodes {
		return nil, fmt.Errorf("nemesis: %d nodes in %d DCs: want 1 <= DCs <= nodes", cfg.Nodes, cfg.DCs)
	}
	if cfg.Nodes > 250 {
		return nil, fmt.Errorf("nemesis: %d nodes: at most 250 loopback addresses", cfg.Nodes)
	}
	c := &Cluster{bin: cfg.Bin, gossip: cfg.GossipInterval, serverArgs: cfg.ServerArgs}
	for i := range cfg.Nodes {
		n := &node{Member: Member{ID: fmt.Sprintf("n%d", i+1), DC: fmt.Sprintf("dc%d", i*cfg.DCs/cfg.Nodes+1)}}
		n.dataDir = filepath.Join(cfg.Dir, n.ID)
		n.logPath = filepath.Join(cfg.Dir, n.ID+".log")
		if _, err := os.Stat(n.dataDir); err == nil {
			return nil, fmt.Errorf("nemesis: %s exists: the nodes must start empty (give an empty dir)", n.dataDir)
		}
		c.nodes = append(c.nodes, n)
	}
	for i, n := range c.nodes {
		// The first node founds the cluster; the others join through it.
		var seeds []string
		if i > 0 {
			seeds = []string{c.nodes[0].listen}
		}
		if err := c.launch(ctx, n, fmt.Sprintf("127.0.0.%d", i+2), seeds); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitConverged(ctx, time.Minute); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// launchAttempts bounds the ports a node's first start tries.
const launchAttempts = 3

// launch starts a node's first process on free ports of host and waits until it
// answers. A port that another program took between the choice and the bind (one
// listening on every address, say) makes the process exit at once: it is started again
// on other ports.
func (c *Cluster) launch(ctx context.Context, n *node, host string, seeds []string) error {
	for attempt := 1; ; attempt++ {
		for _, addr := range []*string{&n.listen, &n.client, &n.resp} {
			var err error
			if *addr, err = freeAddr(host); err != nil {
				return err
			}
		}
		if n.conn != nil {
			n.conn.Close()
		}
		var err error
		if n.conn, err = dial(n.client); err != nil {
			return err
		}
		if err := c.start(n, seeds); err != nil {
			return err
		}
		deadline := time.Now().Add(time.Minute)
		for n.running() {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := n.admin().ClusterStatus(sctx, &kurav1.ClusterStatusRequest{})
			cancel()
			switch {
			case err == nil:
				return nil
			case ctx.Err() != nil:
				return ctx.Err()
			case time.Now().After(deadline):
				return fmt.Errorf("nemesis: %s did not answer in a minute: %w (log %s)", n.ID, err, n.logPath)
			}
			time.Sleep(100 * time.Millisecond)
		}
		n.mu.Lock()
		exits := n.unexpected
		n.unexpected = nil
		n.mu.Unlock()
		if attempt == launchAttempts {
			return fmt.Errorf("nemesis: %s did not start: %s", n.ID, strings.Join(exits, "; "))
		}
	}
}

// AttachCluster connects to a running cluster through the client addresses of its
// nodes: every node must be listed, since faults and final reads go to each. Only faults
// through the admin API are possible then.
func AttachCluster(ctx context.Context, addrs []string) (*Cluster, error) {
	c := &Cluster{attached: true}
	ring := map[string]bool{} // the nodes on the ring, as the nodes given see it
	for _, addr := range addrs {
		conn, err := dial(addr)
		if err != nil {
			c.Close()
			return nil, err
		}
		n := &node{client: addr, conn: conn}
		c.nodes = append(c.nodes, n)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := n.admin().ClusterStatus(sctx, &kurav1.ClusterStatusRequest{})
		cancel()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("nemesis: attach %s: %w", addr, err)
		}
		n.ID = st.GetSelf()
		for _, other := range st.GetNodes() {
			if other.GetId() == n.ID {
				n.DC = other.GetDc()
			}
			if other.GetStatus() == "normal" {
				ring[other.GetId()] = true
			}
		}
	}
	for _, n := range c.nodes {
		delete(ring, n.ID)
	}
	if len(ring) > 0 {
		c.Close()
		return nil, fmt.Errorf("nemesis: attach: give the client address of every node; missing %s", strings.Join(slices.Sorted(maps.Keys(ring)), ", "))
	}
	return c, nil
}

// dial opens a client connection that reconnects within a second of a node's restart;
// gRPC's default backoff would leave a restarted node unused for up to two minutes.
func dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		}))
}

// freeAddr returns a free port on one loopback address; each node has its own address,
// so another program taking the port between a kill and the restart is unlikely.
func freeAddr(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("nemesis: a port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Members returns the cluster's nodes.
func (c *Cluster) Members() []Member {
	out := make([]Member, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Member
	}
	return out
}

// Process is one node of a cluster the harness started: its process and addresses.
type Process struct {
	Member
	// PID is the node's current process; 0 when it is not running.
	PID int
	// Client and RESP are its gRPC client API and Redis protocol addresses.
	Client, RESP string
	// LogPath is the file its output goes to.
	LogPath string
}

// Processes returns the cluster's nodes with their processes and addresses, for a
// harness that measures them (CPU time and memory from /proc).
func (c *Cluster) Processes() []Process {
	out := make([]Process, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = Process{Member: n.Member, Client: n.client, RESP: n.resp, LogPath: n.logPath}
		n.mu.Lock()
		if n.cmd != nil && n.cmd.Process != nil {
			out[i].PID = n.cmd.Process.Pid
		}
		n.mu.Unlock()
	}
	return out
}

func (c *Cluster) node(id string) (*node, error) {
	for _, n := range c.nodes {
		if n.ID == id {
			return n, nil
		}
	}
	return nil, fmt.Errorf("nemesis: no node %s", id)
}

func (n *node) admin() kurav1.AdminClient { return kurav1.NewAdminClient(n.conn) }

// start runs the node's process; seeds are node-to-node addresses to join through.
func (c *Cluster) start(n *node, seeds []string) error {
	args := []string{"server", "--id", n.ID, "--dc", n.DC, "--listen", n.listen, "--client", n.client,
		"--resp", n.resp, "--data-dir", n.dataDir, "--gossip-interval", c.gossip.String(),
		"--log-level", "warn", "--enable-faults"}
	if len(seeds) > 0 {
		args = append(args, "--seeds", strings.Join(seeds, ","))
	}
	if len(c.nodes) > 1 {
		// The nodes share this machine's cores: a scheduler one leaves in a WAL sync is
		// taken by another's threads, and a spare one in each only adds threads competing
		// for the cores (kura bench peers: 3 nodes on 2 cores served 7 % fewer reads).
		args = append(args, "--spare-go-procs", "0")
	}
	args = append(args, c.serverArgs...)
	log, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "--- %s start %s\n", time.Now().Format(time.RFC3339Nano), n.ID)
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("nemesis: start %s: %w", n.ID, err)
	}
	exited := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.exited, n.killing = cmd, exited, false
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		log.Close()
		n.mu.Lock()
		if !n.killing {
			n.unexpected = append(n.unexpected, fmt.Sprintf("%s exited by itself: %v (log %s)", n.ID, err, n.logPath))
		}
		n.mu.Unlock()
		close(exited)
	}()
	return nil
}

// restart starts the node again on its data dir, with every node as a seed, itself
// included: a wiped node learns the ring from any other. Seeding each node with the
// others only would leave a cluster restarted as a whole without gossip: Ferry admits
// a joiner only through a node that is joined, and a restarted node that is not its own
// seed is not joined until admitted.
func (c *Cluster) restart(n *node) error {
	seeds := make([]string, len(c.nodes))
	for i, other := range c.nodes {
		seeds[i] = other.listen
	}
	return c.start(n, seeds)
}

// errAttached refuses a process fault on a cluster the harness did not start.
var errAttached = errors.New("nemesis: kill, pause and wipe need nodes the harness started (not --attach)")

// kill sends SIGKILL and waits for the process to exit: no shutdown code runs.
func (c *Cluster) kill(n *node) error {
	if c.attached {
		return errAttached
	}
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.killing = true
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	// A paused process dies of SIGKILL too.
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	return nil
}

// running reports whether the node's process is up.
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// signal sends sig (SIGSTOP, SIGCONT) to the node's process.
func (c *Cluster) signal(n *node, sig syscall.Signal) error {
	if c.attached {
		return errAttached
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("nemesis: %s is not running", n.ID)
	}
	return n.cmd.Process.Signal(sig)
}

// Unexpected returns the exits of processes the harness did not kill.
func (c *Cluster) Unexpected() []string {
	var out []string
	for _, n := range c.nodes {
		n.mu.Lock()
		out = append(out, n.unexpected...)
		n.mu.Unlock()
	}
	return out
}

// Close stops every process the harness started and closes the connections.
func (c *Cluster) Close() {
	for _, n := range c.nodes {
		if !c.attached {
			c.kill(n)
		}
		if n.conn != nil {
			n.conn.Close()
		}
	}
}

// WaitConverged waits until every node answers and sees every node alive and normal.
func (c *Cluster) WaitConverged(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		why := c.converged(ctx)
		if why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nemesis: the cluster did not converge in %v: %s", timeout, why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// converged says why the cluster has not converged yet; "" once it has.
func (c *Cluster) converged(ctx context.Context) string {
	for _, n := range c.nodes {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := n.admin().ClusterStatus(sctx, &kurav1.ClusterStatusRequest{})
		cancel()
		if err != nil {
			return fmt.Sprintf("%s: %v", n.ID, err)
		}
		up := 0
		for _, other := range st.GetNodes() {
			if other.GetAlive() && other.GetStatus() == "normal" {
				up++
			}
		}
		if up < len(c.nodes) {
			return fmt.Sprintf("%s sees %d of %d nodes up and normal", n.ID, up, len(c.nodes))
		}
	}
	return ""
}

// CreateKeyspace creates a keyspace through the first node and waits until every node
// knows it, so that no early request fails for a reason the run is not about.
func (c *Cluster) CreateKeyspace(ctx context.Context, name, replication string) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := c.nodes[0].admin().CreateKeyspace(cctx, &kurav1.CreateKeyspaceRequest{Keyspace: &kurav1.Keyspace{Name: name, Replication: replication}})
	if err != nil {
		return fmt.Errorf("nemesis: create keyspace %s: %w", name, err)
	}
	for _, n := range c.nodes {
		for {
			_, err := n.admin().DescribeKeyspace(cctx, &kurav1.DescribeKeyspaceRequest{Name: name})
			if err == nil {
				break
			}
			if cctx.Err() != nil {
				return fmt.Errorf("nemesis: %s never learned keyspace %s: %w", n.ID, name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// setFaults replaces one node's injected faults (nil heals it).
func (c *Cluster) setFaults(ctx context.Context, n *node, f *kurav1.Faults) error {
	if f == nil {
		f = &kurav1.Faults{}
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := n.admin().SetFaults(sctx, f); err != nil {
		return fmt.Errorf("set faults on %s: %w", n.ID, err)
	}
	return nil
}

// CheckFaultAPI heals every node's faults, which fails unless each one accepts faults
// (--enable-faults): better to know before the run than in its middle.
func (c *Cluster) CheckFaultAPI(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := c.setFaults(ctx, n, nil); err != nil {
			return fmt.Errorf("nemesis: %w (is every node started with --enable-faults?)", err)
		}
	}
	return nil
}

// Repair runs Admin.Repair on one node of the keyspace, again while ranges fail (a
// replica not reachable yet), for up to timeout.
func (c *Cluster) Repair(ctx context.Context, id, keyspace string, timeout time.Duration) (*kurav1.RepairResponse, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		resp, err := n.admin().Repair(rctx, &kurav1.RepairRequest{Keyspace: keyspace})
		cancel()
		if err == nil && resp.GetFailed() == 0 {
			return resp, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("%d ranges failed", resp.GetFailed())
			}
			return resp, fmt.Errorf("nemesis: repair %s: %w", id, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// LocalScan reads every version one node stores in the keyspace, page by page.
func (c *Cluster) LocalScan(ctx context.Context, id, keyspace string) ([]*kurav1.LocalVersion, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	var out []*kurav1.LocalVersion
	var start []byte
	for {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := n.admin().LocalScan(sctx, &kurav1.LocalScanRequest{Keyspace: keyspace, Start: start})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("nemesis: local scan of %s: %w", id, err)
		}
		out = append(out, resp.GetVersions()...)
		if len(resp.GetNext()) == 0 {
			return out, nil
		}
		start = resp.GetNext()
	}
}
