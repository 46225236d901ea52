// Package client is kura's Go client. It speaks the gRPC API (kura.v1) and sends each
// request to a node of the caller's datacenter, preferring one that holds a replica of
// the key, so that the coordinator's first replica read or write is local. It learns the
// cluster and the keyspaces from the node it first reaches, refreshes them periodically,
// and moves to another node when one stops answering (within Options.AttemptTimeout) or
// turns it away because it sleeps (the redirect of the sleeping node's stand-in).
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"regexp"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/workers"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
)

// Options configures a client.
type Options struct {
	// LocalDC is the caller's datacenter; empty means the DC of the first node reached.
	LocalDC string
	// RefreshInterval is how often the cluster view is refreshed; default 10 s. A call
	// that finds the view older than this refreshes it in the background and goes on
	// with it, so that a busy client's requests never wait for a refresh; a call that
	// finds it older than viewAgeMax intervals (a client idle that long) refreshes it
	// first, since the nodes may have changed since.
	RefreshInterval time.Duration
	// MaxMessageBytes bounds a message in either direction; default 64 MiB, enough for
	// the largest value the server accepts by default.
	MaxMessageBytes int
	// TLS, when set, speaks TLS to the nodes and verifies their certificates against
	// TLS.RootCAs: for a cluster set up with kura certs, a pool holding its ca.crt
	// (certs.LoadCA). Nil speaks plaintext.
	TLS *tls.Config
	// Token, when set, is sent with every call as "authorization: Bearer <token>", which
	// nodes started with --auth-token-file require. Without TLS it crosses the network
	// in the clear.
	Token string
	// AttemptTimeout bounds each attempt of a request on one node: a node that accepts
	// the connection and never answers (a stopped process, a powered-off machine nobody
	// stands in for) costs that long, then the request goes to the next node. A compare-
	// and-set or a keyspace drop whose attempt times out is not sent again, since the
	// node may have applied it: its DeadlineExceeded error is returned. Default 15 s,
	// longer than a node's default replica timeout (10 s), so that a node waiting on slow
	// replicas answers with its own error before the client gives up on it.
	AttemptTimeout time.Duration
	// StaticNodes never refreshes the node list: Dial loads it once, keeping only the
	// nodes whose client address is among Dial's addresses, and the client routes by
	// that view for good, marking no node as failed or asleep, so that every request
	// meets what the view says (a client with a stale node list: the paper's 003 second
	// experiment). A redirect is still followed, for the one request it answered.
	// Keyspaces are refreshed as usual.
	StaticNodes bool
	// NoBatching sends every Get and Put as a call of its own, however many of them are
	// in flight to a node, as most clients (gocql, go-redis) do; by default, requests that
	// wait behind a call in flight go together as one GetMany or PutMany (see batch.go).
	// Benchmarks against such clients set it, so that both sides' servers see one call
	// per request.
	NoBatching bool
}

// withDefaults fills in the defaults of the fields left zero.
func (o Options) withDefaults() Options {
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 10 * time.Second
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 64 << 20
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 15 * time.Second
	}
	return o
}

// DialNode connects to the one node at addr (its client API address) with opts' TLS,
// token and message bound, for callers that act on a node rather than on the cluster,
// such as decommission and repair. Like grpc.NewClient it connects at the first call.
func DialNode(addr string, opts Options) (*grpc.ClientConn, error) {
	opts = opts.withDefaults()
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMessageBytes), grpc.MaxCallSendMsgSize(opts.MaxMessageBytes)),
		grpc.WithInitialWindowSize(kurav1.StreamWindowBytes),
		grpc.WithInitialConnWindowSize(kurav1.ConnWindowBytes),
	}
	if opts.Token != "" {
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(bearerToken(opts.Token)))
	}
	conn, err := grpc.NewClient(addr, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("client: connect %s: %w", addr, err)
	}
	return conn, nil
}

// bearerToken sends a token as "authorization: Bearer <token>" metadata.
type bearerToken string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials. It is false so that
// a token also works against a test cluster without TLS on loopback; Options.Token warns.
func (bearerToken) RequireTransportSecurity() bool { return false }

// KeyValue is one result of a scan.
type KeyValue struct {
	Key       []byte
	Value     []byte
	Timestamp hlc.Timestamp
}

// Client is safe for concurrent use.
type Client struct {
	opts  Options
	seeds []string
	// ctx ends at Close, stopping a background refresh.
	ctx        context.Context
	cancel     context.CancelFunc
	background sync.WaitGroup // the background refresh

	mu         sync.Mutex
	closed     bool
	refreshing bool                        // a background refresh is under way
	conns      map[string]*grpc.ClientConn // by client address
	nodes      []*kurav1.NodeStatus
	keyspaces  map[string]schema.Keyspace
	ring       *ring.Ring
	refreshed  time.Time
	bad        map[string]time.Time // client address -> when it last failed
	// ringErr says why the last node list gave no ring (ring nil): requests then go to
	// any live node, which coordinates them on its own ring (see RingError).
	ringErr error
	// asleep holds the client addresses of the nodes that sleep, as the view says or as
	// a redirect from a node's stand-in told since the last refresh of the nodes.
	asleep map[string]bool
	// turn spreads the requests without a key over equally good nodes (see route).
	turn uint64

	// gets and puts batch the Gets and Puts that wait behind calls in flight (batch.go).
	gets *batcher[*kurav1.GetRequest, *kurav1.GetResponse]
	puts *batcher[*kurav1.PutRequest, *kurav1.PutResponse]
	// senders send the batch calls. A goroutine of its own per call grew its stack
	// under gRPC's call path every time: 6 % of a reading client's CPU at 64 callers.
	senders *workers.Pool
}

// errClosed is the refusal of a closed client.
var errClosed = errors.New("client: closed")

// Dial connects to the cluster through any of addrs (gRPC client addresses).
func Dial(ctx context.Context, addrs []string, opts Options) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("client: no address to dial")
	}
	opts = opts.withDefaults()
	c := &Client{opts: opts, seeds: addrs, conns: map[string]*grpc.ClientConn{}, bad: map[string]time.Time{}, asleep: map[string]bool{},
		gets: newBatcher(getCalls), puts: newBatcher(putCalls)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.senders = workers.New(c.ctx.Done(), batchSendersIdleMax)
	if err := c.refresh(ctx, ExplainAt); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the client's connections, once a background refresh has stopped.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.background.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	c.conns = map[string]*grpc.ClientConn{}
	return errors.Join(errs...)
}

func (c *Client) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if conn, ok := c.conns[addr]; ok {
		return conn, nil
	}
	conn, err := DialNode(addr, c.opts)
	if err != nil {
		return nil, err
	}
	c.conns[addr] = conn
	return conn, nil
}

// refresh reloads the node list and the keyspaces from the first node that answers,
// trying known nodes in the order of route before the seeds, and the nodes a redirect
// names first. explain turns a node's failure into the error returned: ExplainAt for
// Dial, whose caller reads it, and Explain for the later refreshes, whose errors nobody
// reads, so that they do not probe a failing node (ExplainAt) each time.
func (c *Client) refresh(ctx context.Context, explain func(addr string, err error) error) error {
	q := newTries(c.route("", nil))
	var errs []error
	for addr, ok := q.next(); ok; addr, ok = q.next() {
		err := c.attempt(ctx, addr, c.refreshFrom)
		if err == nil {
			return nil
		}
		explained := explain(addr, err)
		if !strings.Contains(explained.Error(), addr) {
			explained = fmt.Errorf("%s: %w", addr, explained)
		}
		errs = append(errs, explained)
		if r := redirectOf(err); r != nil {
			q.redirect(r, c.LocalDC())
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("client: no node answered: %w", errors.Join(errs...))
}

// refreshSoon refreshes the view in the background, unless the view is static: a node
// turned a request away because it sleeps, so the view is out of date.
func (c *Client) refreshSoon() {
	if c.opts.StaticNodes {
		return
	}
	c.refreshBehind()
}

// refreshBehind refreshes the view on a goroutine of its own, unless a refresh is under
// way or the client is closed.
func (c *Client) refreshBehind() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refreshing || c.closed {
		return
	}
	c.refreshing = true
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		_ = c.refresh(c.ctx, explainAnywhere) // on failure the view stays, and calls refresh it once stale
		c.mu.Lock()
		c.refreshing = false
		c.mu.Unlock()
	}()
}

// refreshFrom reloads the view from the node conn leads to. A static view, once loaded,
// keeps its nodes: only the keyspaces are reloaded.
func (c *Client) refreshFrom(ctx context.Context, conn *grpc.ClientConn) error {
	admin := kurav1.NewAdminClient(conn)
	c.mu.Lock()
	// Once loaded, not "once a ring is built": a static view without a ring (RingError)
	// keeps its nodes too.
	keepNodes := c.opts.StaticNodes && !c.refreshed.IsZero()
	c.mu.Unlock()
	var st *kurav1.ClusterStatusResponse
	if !keepNodes {
		var err error
		if st, err = admin.ClusterStatus(ctx, &kurav1.ClusterStatusRequest{}); err != nil {
			return err
		}
	}
	keyspaces, err := loadKeyspaces(ctx, admin)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keyspaces, c.refreshed = keyspaces, time.Now()
	if !keepNodes {
		c.setNodes(st)
	}
	return nil
}

// buildRing builds the ring the client routes by from the nodes of a cluster status.
// A listing it cannot build one from is no reason to fail the refresh: the ring only
// tells which node to ask first, and every node coordinates requests on its own ring.
func buildRing(nodes []*kurav1.NodeStatus) (*ring.Ring, error) {
	r, err := ring.New(ringMembers(nodes))
	if err != nil {
		return nil, fmt.Errorf("build ring: %w", err)
	}
	return r, nil
}

// ringMembers returns the nodes of a cluster status that own ranges now, as the servers'
// placement decides it (placement.Ring's current ring, whose replicas serve reads and
// count for writes), so that the client's first choice is a replica the coordinator
// reads and writes locally:
//
//   - A node off the ring (booting, joining, left, removed) is no member: a removed node
//     keeps its tokens in the listing, and a replacement (kura server --replace) claims
//     those very tokens.
//   - While a node replaces a dead one (its Replaces names it), both claim the same
//     tokens and exactly one is a member: the dead node until its replacement is normal,
//     the replacement from then on, even before the dead node is marked removed.
//   - A status this client cannot read (a newer server's) is no member: the node may
//     still be asked, but not as a replica.
//
// Members are in the listing's order, by id, as the server's view lists them; a node
// given no tokens has the ones derived from its id, with the default vnodes, which
// kura server uses.
func ringMembers(nodes []*kurav1.NodeStatus) []ring.Member {
	statusOf := func(n *kurav1.NodeStatus) (cluster.Status, bool) {
		s, err := cluster.ParseStatus(n.GetStatus()) // "" is normal: a server that sends none
		return s, err == nil
	}
	replacedBy := map[string]cluster.Status{} // a dead node's id -> its replacement's status
	for _, n := range nodes {
		if n.GetReplaces() != "" {
			s, ok := statusOf(n)
			if !ok {
				s = cluster.StatusBooting // unknown: not normal, so the dead node keeps its tokens
			}
			replacedBy[n.GetReplaces()] = s
		}
	}
	members := make([]ring.Member, 0, len(nodes))
	for _, n := range nodes {
		s, ok := statusOf(n)
		by, replaced := replacedBy[n.GetId()]
		if !ok || !s.OnRing() || replaced && by == cluster.StatusNormal {
			continue
		}
		members = append(members, ring.Member{ID: n.GetId(), DC: n.GetDc(), Tier: int(n.GetPowerTier()),
			Tokens: cluster.Node{ID: n.GetId(), Tokens: n.GetTokens()}.RingTokens(ring.DefaultVnodes)})
	}
	return members
}

// leftCluster reports whether a node's status says it is no longer a member of the
// cluster (decommissioned, or removed): such a node, even while its process still runs,
// refuses every client request as unavailable, an answer the client does not take to
// another node.
func leftCluster(n *kurav1.NodeStatus) bool {
	s, err := cluster.ParseStatus(n.GetStatus())
	return err == nil && (s == cluster.StatusLeft || s == cluster.StatusRemoved)
}

// loadKeyspaces asks a node for the keyspaces, keeping those this client can compile.
func loadKeyspaces(ctx context.Context, admin kurav1.AdminClient) (map[string]schema.Keyspace, error) {
	list, err := admin.ListKeyspaces(ctx, &kurav1.ListKeyspacesRequest{})
	if err != nil {
		return nil, err
	}
	keyspaces := map[string]schema.Keyspace{}
	for _, ks := range list.GetKeyspaces() {
		compiled, err := schema.Keyspace{
			Name:        ks.GetName(),
			Replication: ks.GetReplication(),
			Partitioner: ks.GetPartitioner(),
			Erasure:     schema.Erasure{M: int(ks.GetErasure().GetM()), K: int(ks.GetErasure().GetK())},
		}.Compile()
		if err == nil {
			keyspaces[ks.GetName()] = compiled
		}
	}
	return keyspaces, nil
}

// setNodes takes the nodes of a cluster status as the view: with StaticNodes only those
// Dial was given. The nodes the status shows asleep replace those redirects told of.
// The ring is built from every node of the status, since a replica the view leaves out
// is still a replica. The caller holds c.mu.
func (c *Client) setNodes(st *kurav1.ClusterStatusResponse) {
	r, ringErr := buildRing(st.GetNodes())
	if c.opts.LocalDC == "" {
		for _, n := range st.GetNodes() {
			if n.GetId() == st.GetSelf() {
				c.opts.LocalDC = n.GetDc()
			}
		}
	}
	nodes := st.GetNodes()
	if c.opts.StaticNodes {
		nodes = slices.DeleteFunc(slices.Clone(nodes), func(n *kurav1.NodeStatus) bool { return !slices.Contains(c.seeds, n.GetClientAddr()) })
	}
	clear(c.asleep)
	for _, n := range nodes {
		if n.GetState() == cluster.StateAsleep.String() {
			c.asleep[n.GetClientAddr()] = true
		}
	}
	c.nodes, c.ring, c.ringErr = nodes, r, ringErr
}

// RingError returns why the client routes requests without the ring, or nil when it
// sends each key's requests to its replicas first. When the cluster listing gives no
// ring the client can build (it tells nodes apart by a rule this client does not know),
// requests go to any live node, nearest first, which coordinates them on its own ring:
// every call still works, at the cost of a hop to the replicas. The next refresh that
// builds a ring clears it.
func (c *Client) RingError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ringErr
}

// LocalDC returns the datacenter the client prefers.
func (c *Client) LocalDC() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opts.LocalDC
}

// route returns the client addresses to try for a key, best first: live replicas in the
// local DC, other live nodes of the local DC, live replicas elsewhere, every other live
// node, the nodes that failed lately, the seeds, then the nodes that sleep (whose
// stand-ins only redirect). Within each group before the seeds the order is rotated to
// spread the load. A node that left the cluster or was removed is never chosen from the
// view, though it may still run: it refuses every request (as a seed it is still tried,
// after the view's nodes). Without a ring (RingError) no node counts as a replica: the
// groups are by DC alone.
func (c *Client) route(keyspace string, key []byte) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The nodes of a group are equally good: each request starts at one of them, so that
	// a key's replicas share its requests instead of the first in the list taking them
	// all. A key always starts at the same node (its row cache, its batches); a request
	// without a key starts at the next node in turn; a key of a keyspace the client has
	// not loaded yet keeps the view's order.
	var spread uint64
	var replicas []ring.Member
	if ks, ok := c.keyspaces[keyspace]; ok && key != nil && c.ring != nil {
		token := ks.Partition().Token(key)
		replicas = ks.Strategy().Replicas(c.ring, token)
		spread = mixBits(uint64(token))
	} else if key == nil {
		c.turn++
		spread = c.turn
	}
	isReplica := func(id string) bool {
		return slices.ContainsFunc(replicas, func(m ring.Member) bool { return m.ID == id })
	}
	now := time.Now()
	var tiers [5][]string
	var asleep []string
	for _, n := range c.nodes {
		addr := n.GetClientAddr()
		if !n.GetAlive() || addr == "" || leftCluster(n) {
			continue
		}
		if c.asleep[addr] {
			asleep = append(asleep, addr)
			continue
		}
		tier := 3
		switch local := n.GetDc() == c.opts.LocalDC; {
		case local && isReplica(n.GetId()):
			tier = 0
		case local:
			tier = 1
		case isReplica(n.GetId()):
			tier = 2
		}
		if failed, ok := c.bad[addr]; ok && now.Sub(failed) < c.opts.RefreshInterval {
			tier = 4 // recently failed: last resort
		}
		tiers[tier] = append(tiers[tier], addr)
	}
	out := make([]string, 0, len(c.nodes)+len(c.seeds))
	for _, t := range tiers {
		if len(t) == 0 {
			continue
		}
		first := int(spread % uint64(len(t)))
		out = append(append(out, t[first:]...), t[:first]...)
	}
	for _, seed := range c.seeds {
		if c.asleep[seed] {
			asleep = append(asleep, seed)
		} else {
			out = append(out, seed)
		}
	}
	return append(out, asleep...)
}

// mixBits spreads every bit of x over the low ones (splitmix64's finaliser): the
// ordered partitioner's tokens of short keys end in zeros, which a plain modulo would
// send to one node.
func mixBits(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// tries is the queue of nodes a request goes to, best first, each at most once.
type tries struct {
	queue []string
	tried map[string]bool
}

func newTries(addrs []string) *tries { return &tries{queue: addrs, tried: map[string]bool{}} }

// next returns the next node not tried yet, and false when there is none.
func (q *tries) next() (string, bool) {
	for len(q.queue) > 0 {
		addr := q.queue[0]
		q.queue = q.queue[1:]
		if !q.tried[addr] {
			q.tried[addr] = true
			return addr, true
		}
	}
	return "", false
}

// redirect puts the targets of a redirect first, those of datacenter dc before the
// others, each in the redirect's order.
func (q *tries) redirect(r *kurav1.Redirect, dc string) {
	var local, other []string
	for _, t := range r.GetTargets() {
		switch {
		case t.GetClientAddr() == "":
		case t.GetDc() == dc:
			local = append(local, t.GetClientAddr())
		default:
			other = append(other, t.GetClientAddr())
		}
	}
	q.queue = slices.Concat(local, other, q.queue)
}

// Whether a request whose attempt timed out may be sent to another node, since the node
// that timed out may have applied it.
const (
	resend   = true  // reads, and writes whose second copy the caller cannot tell from the first
	sendOnce = false // compare-and-set and keyspace drops, whose answers would tell
)

// errAttemptTimeout marks an attempt that ran out of Options.AttemptTimeout.
var errAttemptTimeout = errors.New("no answer within the attempt timeout")

// attempt runs fn on the node at addr within Options.AttemptTimeout.
func (c *Client) attempt(ctx context.Context, addr string, fn func(context.Context, *grpc.ClientConn) error) error {
	conn, err := c.conn(addr)
	if err != nil {
		return err
	}
	attemptCtx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
	defer cancel()
	err = fn(attemptCtx, conn)
	if err != nil && ctx.Err() == nil && errors.Is(attemptCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: %w", addr, errAttemptTimeout, err)
	}
	return err
}

// remember records what a request learned of a node, unless the view is static.
func (c *Client) remember(record func()) {
	if c.opts.StaticNodes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	record()
}

// call runs fn against the best node for key, moving to the next when a node cannot be
// reached or does not answer in time (if mayResend), and to the nodes a sleeping
// node's stand-in names, at once. Errors from a node that answered (unavailable
// replicas, invalid input) are returned as they are.
func (c *Client) call(ctx context.Context, keyspace string, key []byte, mayResend bool, fn func(context.Context, *grpc.ClientConn) error) error {
	return c.callOn(ctx, c.routeFor(ctx, keyspace, key), mayResend, fn)
}

// viewAgeMax is the age, in refresh intervals, past which a call refreshes the view
// before it routes, rather than in the background: a view that old was not refreshed
// behind the calls (the client was idle, or no node answered), and routing by it may
// send the call to nodes that have left.
const viewAgeMax = 3

// routeFor is route on the client's view: refreshed in the background once it is older
// than the refresh interval, and first, in the call's path, once it is older than
// viewAgeMax intervals, so that a busy client's periodic refresh (a round trip and a
// ring rebuilt) adds to no call's latency.
func (c *Client) routeFor(ctx context.Context, keyspace string, key []byte) []string {
	c.mu.Lock()
	age := time.Since(c.refreshed)
	c.mu.Unlock()
	switch {
	case age > viewAgeMax*c.opts.RefreshInterval:
		// A region of the execution trace, when one is recorded, so that a request slowed
		// by the refresh says so.
		trace.WithRegion(ctx, "kura.client.refresh", func() {
			_ = c.refresh(ctx, explainAnywhere) // keep the old view if no node answers; the call will say why
		})
	case age > c.opts.RefreshInterval:
		c.refreshBehind()
	}
	return c.route(keyspace, key)
}

// callOn is call on the nodes addrs, best first, as routeFor returned them.
func (c *Client) callOn(ctx context.Context, addrs []string, mayResend bool, fn func(context.Context, *grpc.ClientConn) error) error {
	var lastErr error
	q := newTries(addrs)
	for addr, ok := q.next(); ok; addr, ok = q.next() {
		err := c.attempt(ctx, addr, fn)
		traceAttempt(ctx, addr, err)
		redirect := redirectOf(err)
		switch {
		case redirect != nil:
			c.remember(func() { c.asleep[addr] = true })
			q.redirect(redirect, c.LocalDC())
			c.refreshSoon()
		case errors.Is(err, errAttemptTimeout):
			c.remember(func() { c.bad[addr] = time.Now() })
			if !mayResend {
				return errorFromStatus(err)
			}
		case unreachable(err):
			c.remember(func() { c.bad[addr] = time.Now() })
		default:
			return errorFromStatus(err)
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("client: no node reachable: %w", lastErr)
}

// traceAttempt logs an attempt and its outcome to the execution trace when one is
// recorded (runtime/trace), so that a slow request's trace tells which nodes it tried.
func traceAttempt(ctx context.Context, addr string, err error) {
	if !trace.IsEnabled() {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = err.Error()
	}
	trace.Log(ctx, "kura.client.attempt", addr+": "+outcome)
}

// redirectOf returns the redirect a sleeping node's stand-in answered with, or nil.
func redirectOf(err error) *kurav1.Redirect {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return nil
	}
	for _, detail := range st.Details() {
		if r, ok := detail.(*kurav1.Redirect); ok {
			return r
		}
	}
	return nil
}

// unreachable tells a node that could not be reached from a node that answered "not
// enough replicas": both arrive as codes.Unavailable, but the coordinator's message says
// "unavailable:". An error that is no gRPC status is the client's own failure to set up
// a connection to the node.
func unreachable(err error) bool {
	st, ok := status.FromError(err)
	return !ok || st.Code() == codes.Unavailable && !strings.HasPrefix(st.Message(), "unavailable:")
}

// Error is a server's answer that a request failed, with the gRPC code for programs and
// the server's own message for people.
type Error struct {
	Code    codes.Code
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorFromStatus(err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok {
		if e := tooLarge(st); e != nil {
			return e
		}
		if e := notReached(st); e != nil {
			return e
		}
		return &Error{Code: st.Code(), Message: st.Message()}
	}
	return err
}

// Explain turns an error of a call made on a connection from DialNode into the error the
// client's own methods return: kura's message for people, with what to do where gRPC's
// says only what failed.
func Explain(err error) error { return errorFromStatus(err) }

// explainAnywhere is Explain with the signature of ExplainAt, for refresh.
func explainAnywhere(_ string, err error) error { return Explain(err) }

// dialFailure matches gRPC's message for a connection it could not set up.
var dialFailure = regexp.MustCompile(`dial tcp ([^ ]+?): (?:connect: )?([^"]+)"?$`)

// notReached rewrites gRPC's "connection error: desc = ..." into which address failed, why,
// and what to check, or returns nil for any other status.
func notReached(st *status.Status) *Error {
	if st.Code() != codes.Unavailable {
		return nil
	}
	if strings.Contains(st.Message(), "error reading server preface") {
		// The server hung up on a plaintext connection: it speaks TLS.
		return &Error{Code: codes.Unavailable, Message: "the node closed the connection before answering: " +
			"if it serves TLS, give the client its CA (--tls-ca on the command line, Options.TLS in Go)"}
	}
	if !strings.Contains(st.Message(), "Error while dialing") {
		return nil
	}
	m := dialFailure.FindStringSubmatch(st.Message())
	if m == nil {
		return nil
	}
	return &Error{Code: codes.Unavailable, Message: fmt.Sprintf(
		"cannot reach %s: %s: is a kura server running there, and is it the node's client API address (its --client)?", m[1], m[2])}
}

// tooLarge turns gRPC's refusal of an oversized message, by the node or by this client,
// into kura's invalid argument with what to do, or returns nil for any other status.
// gRPC refuses the message before kura sees it, so the node cannot say so itself.
func tooLarge(st *status.Status) *Error {
	if st.Code() != codes.ResourceExhausted {
		return nil
	}
	var size, limit int64
	var who string
	switch {
	case scanSizes(st.Message(), "grpc: received message larger than max (%d vs. %d)", &size, &limit):
		who = "the node accepts in one request"
	case scanSizes(st.Message(), "grpc: trying to send message larger than max (%d vs. %d)", &size, &limit):
		who = "this client sends in one request (Options.MaxMessageBytes)"
	default:
		return nil
	}
	return &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf(
		"invalid argument: the request takes %s, more than the %s %s: a value may be at most the nodes' --max-value-bytes (default 16 MiB); split the value, or raise the limit on every node",
		formatMiB(size), formatMiB(limit), who)}
}

// scanSizes reads the two sizes of one of gRPC's size messages; false if msg is not one.
func scanSizes(msg, format string, size, limit *int64) bool {
	n, err := fmt.Sscanf(msg, format, size, limit)
	return err == nil && n == 2
}

// formatMiB prints a byte count in MiB with one decimal, the unit of the limits.
func formatMiB(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// IsNotFound reports whether err says a keyspace does not exist.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == codes.NotFound
}

// PutOption adjusts a put; WithTTL and WithExpiresAt give it an expiry.
type PutOption func(*kurav1.PutRequest)

// WithTTL makes the value expire ttl after the coordinating node receives the put,
// rounded up to a whole millisecond (a positive TTL never becomes "never"); from then on
// it reads as absent everywhere, as if deleted. Zero means no expiry; a negative TTL is
// refused as an invalid argument.
func WithTTL(ttl time.Duration) PutOption {
	return func(req *kurav1.PutRequest) {
		req.TtlMs = int64(ttl / time.Millisecond)
		if ttl%time.Millisecond > 0 {
			req.TtlMs++
		}
	}
}

// WithExpiresAt makes the value expire at t (to the millisecond), judged by each node's
// clock. A time already past makes the put a delete; the zero time means no expiry.
func WithExpiresAt(t time.Time) PutOption {
	return func(req *kurav1.PutRequest) {
		if !t.IsZero() {
			req.ExpiresAtUnixMs = t.UnixMilli()
		}
	}
}

// Put writes value under key at level cl and returns the write's timestamp. Options may
// give the value an expiry (WithTTL, WithExpiresAt; at most one). Under load it may go
// to the node together with other callers' Puts, as one PutMany (batch.go).
func (c *Client) Put(ctx context.Context, keyspace string, key, value []byte, cl consistency.Level, opts ...PutOption) (hlc.Timestamp, error) {
	req := &kurav1.PutRequest{Keyspace: keyspace, Key: key, Value: value, Consistency: levelToProto(cl)}
	for _, opt := range opts {
		opt(req)
	}
	resp, err := c.puts.do(ctx, c, req)
	if err != nil {
		return 0, err
	}
	return hlc.Timestamp(resp.GetTimestamp()), nil
}

// Item is a key's value as a get found it.
type Item struct {
	Value     []byte
	Timestamp hlc.Timestamp // the write's
	ExpiresAt time.Time     // when the value expires (to the millisecond); zero: never
}

// Get reads key at level cl; found is false for a missing, deleted, expired or truncated
// key. Under load it may go to the node together with other callers' Gets, as one
// GetMany (batch.go).
func (c *Client) Get(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (item Item, found bool, err error) {
	resp, err := c.gets.do(ctx, c, &kurav1.GetRequest{Keyspace: keyspace, Key: key, Consistency: levelToProto(cl)})
	if err != nil || !resp.GetFound() {
		return Item{}, false, err
	}
	item = Item{Value: resp.GetValue(), Timestamp: hlc.Timestamp(resp.GetTimestamp())}
	if ms := resp.GetExpiresAtUnixMs(); ms != 0 {
		item.ExpiresAt = time.UnixMilli(ms)
	}
	return item, true, nil
}

// Delete removes key at level cl.
func (c *Client) Delete(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (hlc.Timestamp, error) {
	var resp *kurav1.DeleteResponse
	err := c.call(ctx, keyspace, key, resend, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewKVClient(conn).Delete(ctx, &kurav1.DeleteRequest{Keyspace: keyspace, Key: key, Consistency: levelToProto(cl)})
		return err
	})
	if err != nil {
		return 0, err
	}
	return hlc.Timestamp(resp.GetTimestamp()), nil
}

// Scan returns up to limit keys in [start, end) in key order (nil bounds are open; limit
// 0 is the server's default).
func (c *Client) Scan(ctx context.Context, keyspace string, start, end []byte, limit int, cl consistency.Level) ([]KeyValue, error) {
	var answer scanAnswer
	err := c.call(ctx, keyspace, c.scanRouteKey(keyspace, start), resend, func(ctx context.Context, conn *grpc.ClientConn) error {
		req := &kurav1.ScanRequest{Keyspace: keyspace, Start: start, End: end, Limit: int32(limit), Consistency: levelToProto(cl)}
		return conn.Invoke(ctx, kurav1.KV_Scan_FullMethodName, req, &answer, scanCall)
	})
	if err != nil {
		return nil, err
	}
	return answer.items, nil
}

// scanRouteKey returns the key a scan is routed by. Under the ordered partitioner that is
// its start, which the first range it reads holds. Under the hash partitioner a scan
// reads every range wherever it starts: it goes without a key, so that scans take turns
// over the nodes rather than follow their start keys' tokens (zipfian start keys put a
// third more of the work on one of two nodes than on the other).
func (c *Client) scanRouteKey(keyspace string, start []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ks, ok := c.keyspaces[keyspace]; ok && ks.Partitioner != "ordered" {
		return nil
	}
	return start
}

// CreateKeyspace defines a keyspace ("dc1=2,dc2=1" or "simple=3"; partitioner "grouped",
// "hash" or "ordered", "" for schema.DefaultPartitioner). Creating an identical keyspace
// again is not an error.
func (c *Client) CreateKeyspace(ctx context.Context, name, replication, partitioner string) error {
	return c.createKeyspace(ctx, &kurav1.Keyspace{Name: name, Replication: replication, Partitioner: partitioner})
}

// KeyspaceSpec is a keyspace for CreateKeyspaceWith.
type KeyspaceSpec struct {
	Name        string
	Replication string // "dc1=2,dc2=1" or "simple=3"
	Partitioner string // "grouped", "hash" or "ordered"; "" means grouped (schema.DefaultPartitioner)
	// Splits balance the ordered partitioner: quantiles of a sample of the keys the
	// keyspace will hold (schema.SplitsFromSample), so that they spread over the nodes
	// as the sample does rather than by their first 8 bytes.
	Splits [][]byte
	// Transactions is where lightweight transactions run: "key" (or "") or "partition"
	// (schema.TransactionsPartition), fixed at creation.
	Transactions string
}

// CreateKeyspaceWith defines a keyspace as spec says. Creating an identical keyspace
// again is not an error.
func (c *Client) CreateKeyspaceWith(ctx context.Context, spec KeyspaceSpec) error {
	return c.createKeyspace(ctx, &kurav1.Keyspace{Name: spec.Name, Replication: spec.Replication, Partitioner: spec.Partitioner, Splits: spec.Splits, Transactions: spec.Transactions})
}

// CreateErasureKeyspace defines an erasure-coded keyspace: each value is stored as m
// chunks, any k of which rebuild it, and a get fetches chunks from the caller's
// datacenter first (LDR). Partitioner "" means grouped (schema.DefaultPartitioner).
func (c *Client) CreateErasureKeyspace(ctx context.Context, name string, m, k int, partitioner string) error {
	return c.createKeyspace(ctx, &kurav1.Keyspace{Name: name, Partitioner: partitioner, Erasure: &kurav1.Erasure{M: uint32(m), K: uint32(k)}})
}

func (c *Client) createKeyspace(ctx context.Context, ks *kurav1.Keyspace) error {
	err := c.call(ctx, "", nil, resend, func(ctx context.Context, conn *grpc.ClientConn) error {
		_, err := kurav1.NewAdminClient(conn).CreateKeyspace(ctx, &kurav1.CreateKeyspaceRequest{Keyspace: ks})
		return err
	})
	if err == nil {
		_ = c.refresh(ctx, explainAnywhere) // route the new keyspace's keys to replicas from now on
	}
	return err
}

// TruncateKeyspace removes every value of keyspace name written until now (Redis's
// FLUSHDB) and returns the truncation's timestamp: values written before it read as
// absent at once, those written after it stay.
func (c *Client) TruncateKeyspace(ctx context.Context, name string) (hlc.Timestamp, error) {
	var resp *kurav1.TruncateKeyspaceResponse
	err := c.call(ctx, "", nil, resend, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewAdminClient(conn).TruncateKeyspace(ctx, &kurav1.TruncateKeyspaceRequest{Name: name})
		return err
	})
	if err != nil {
		return 0, err
	}
	return hlc.Timestamp(resp.GetTruncatedAt()), nil
}

// DropKeyspace drops keyspace name, its values with it, and returns the drop's
// timestamp. A keyspace created again under the name starts empty.
func (c *Client) DropKeyspace(ctx context.Context, name string) (hlc.Timestamp, error) {
	var resp *kurav1.DropKeyspaceResponse
	err := c.call(ctx, "", nil, sendOnce, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewAdminClient(conn).DropKeyspace(ctx, &kurav1.DropKeyspaceRequest{Name: name})
		return err
	})
	if err != nil {
		return 0, err
	}
	_ = c.refresh(ctx, explainAnywhere) // stop routing the dropped keyspace's keys
	return hlc.Timestamp(resp.GetDroppedAt()), nil
}

// Keyspaces lists the cluster's keyspaces.
func (c *Client) Keyspaces(ctx context.Context) ([]*kurav1.Keyspace, error) {
	var resp *kurav1.ListKeyspacesResponse
	err := c.call(ctx, "", nil, resend, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewAdminClient(conn).ListKeyspaces(ctx, &kurav1.ListKeyspacesRequest{})
		return err
	})
	return resp.GetKeyspaces(), err
}

// Keyspace describes one keyspace.
func (c *Client) Keyspace(ctx context.Context, name string) (*kurav1.Keyspace, error) {
	var resp *kurav1.Keyspace
	err := c.call(ctx, "", nil, resend, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewAdminClient(conn).DescribeKeyspace(ctx, &kurav1.DescribeKeyspaceRequest{Name: name})
		return err
	})
	return resp, err
}

// Status returns the cluster as the nearest node sees it.
func (c *Client) Status(ctx context.Context) (*kurav1.ClusterStatusResponse, error) {
	var resp *kurav1.ClusterStatusResponse
	err := c.call(ctx, "", nil, resend, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewAdminClient(conn).ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
		return err
	})
	return resp, err
}

func levelToProto(l consistency.Level) kurav1.Consistency {
	return kurav1.Consistency(kurav1.Consistency_value[l.String()])
}

// Condition is what a compare-and-set requires of the key's current live value: build it
// with IfAbsent, IfPresent or IfEquals. An expired value counts as absent.
type Condition struct {
	set func(*kurav1.CompareAndSetRequest)
}

// IfAbsent holds when the key has no live value.
func IfAbsent() Condition {
	return Condition{func(r *kurav1.CompareAndSetRequest) {
		r.Condition = &kurav1.CompareAndSetRequest_IfAbsent{IfAbsent: true}
	}}
}

// IfPresent holds when the key has a live value.
func IfPresent() Condition {
	return Condition{func(r *kurav1.CompareAndSetRequest) {
		r.Condition = &kurav1.CompareAndSetRequest_IfPresent{IfPresent: true}
	}}
}

// IfEquals holds when the key's live value is exactly value.
func IfEquals(value []byte) Condition {
	return Condition{func(r *kurav1.CompareAndSetRequest) {
		r.Condition = &kurav1.CompareAndSetRequest_IfEquals{IfEquals: value}
	}}
}

// Action is what a compare-and-set does when its condition holds: build it with PutValue
// or DeleteValue.
type Action struct {
	set func(*kurav1.CompareAndSetRequest)
}

// PutValue writes value; a ttl above zero makes it expire that long after the request
// (rounded down to milliseconds), zero never.
func PutValue(value []byte, ttl time.Duration) Action {
	return Action{func(r *kurav1.CompareAndSetRequest) {
		r.Action = &kurav1.CompareAndSetRequest_Put{Put: &kurav1.CompareAndSetPut{Value: value, TtlMs: ttl.Milliseconds()}}
	}}
}

// DeleteValue deletes the key.
func DeleteValue() Action {
	return Action{func(r *kurav1.CompareAndSetRequest) { r.Action = &kurav1.CompareAndSetRequest_Delete{Delete: true} }}
}

// CASResult is a compare-and-set's answer.
type CASResult struct {
	// Applied: the condition held and the action was written.
	Applied bool
	// Found, Value, Timestamp and ExpiresAt describe the key's live value the condition
	// was checked against: the one the action replaced when applied, the one that failed
	// the condition when not. ExpiresAt is zero for a value that never expires.
	Found     bool
	Value     []byte
	Timestamp hlc.Timestamp
	ExpiresAt hlc.Timestamp
	// WriteTimestamp is the applied action's timestamp; zero when not applied.
	WriteTimestamp hlc.Timestamp
}

// CompareAndSet runs action on key only if the key's current value meets cond,
// atomically: a lightweight transaction, Paxos among the key's replicas at serial level
// consistency.Serial or consistency.LocalSerial (zero: SERIAL). Writes to a key must all
// go through CompareAndSet, at one serial level, for them to be linearizable. An error
// of code DeadlineExceeded may leave the action applied or not: read the key at a serial
// level to learn which.
func (c *Client) CompareAndSet(ctx context.Context, keyspace string, key []byte, cond Condition, action Action, serial consistency.Level) (CASResult, error) {
	req := &kurav1.CompareAndSetRequest{Keyspace: keyspace, Key: key}
	if cond.set != nil {
		cond.set(req)
	}
	if action.set != nil {
		action.set(req)
	}
	if serial != 0 {
		req.SerialConsistency = levelToProto(serial)
	}
	var resp *kurav1.CompareAndSetResponse
	err := c.call(ctx, keyspace, key, sendOnce, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewKVClient(conn).CompareAndSet(ctx, req)
		return err
	})
	if err != nil {
		return CASResult{}, err
	}
	return CASResult{
		Applied:        resp.GetApplied(),
		Found:          resp.GetFound(),
		Value:          resp.GetValue(),
		Timestamp:      hlc.Timestamp(resp.GetTimestamp()),
		ExpiresAt:      hlc.Timestamp(resp.GetExpiresAt()),
		WriteTimestamp: hlc.Timestamp(resp.GetWriteTimestamp()),
	}, nil
}
