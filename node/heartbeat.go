package node

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/transport"
)

// Message kinds the node itself sends.
var (
	kindPing   = transport.RegisterKind("ping")
	kindSchema = transport.RegisterKind("schema")
)

// heartbeat keeps the cluster directory: it pings every known node and the seeds each
// interval, learns new nodes and keyspaces from the answers, marks a node down when it
// stops answering, and measures round-trip times for the coordinator's proximity order.
// Every node pings every other, so its traffic grows as n²: it is the foundation's
// membership, meant to be replaced by gossip for large clusters.
type heartbeat struct {
	n *Node

	mu    sync.Mutex
	peers map[string]*peerState // by node id
	seeds map[string]bool       // seed address -> ping in flight
}

type peerState struct {
	lastAck  time.Time
	rtt      time.Duration // exponentially weighted mean; 0 until measured
	inFlight bool
}

func newHeartbeat(n *Node) *heartbeat {
	h := &heartbeat{n: n, peers: map[string]*peerState{}, seeds: map[string]bool{}}
	for _, s := range n.cfg.Seeds {
		h.seeds[s] = false
	}
	return h
}

func (h *heartbeat) state(id string) *peerState {
	p, ok := h.peers[id]
	if !ok {
		// A node counts as answering from the moment it is learned of, so that a new
		// peer gets SuspectAfter to answer before it is taken for down.
		p = &peerState{lastAck: time.Now()}
		h.peers[id] = p
	}
	return p
}

// round pings every peer and unknown seed that has no ping in flight, and marks down the
// peers silent for longer than SuspectAfter.
func (h *heartbeat) round(ctx context.Context) {
	self := h.n.directory.Self()
	known := map[string]bool{}
	h.mu.Lock()
	for _, node := range h.n.directory.Nodes() {
		known[node.Addr] = true
		if node.ID == self.ID {
			continue
		}
		p := h.state(node.ID)
		if time.Since(p.lastAck) > h.n.cfg.SuspectAfter && h.n.directory.SetAlive(node.ID, false) {
			h.n.log.Warn("peer down", "peer", node.ID, "silent_for", time.Since(p.lastAck).Round(time.Millisecond))
		}
		if !p.inFlight {
			p.inFlight = true
			go h.ping(ctx, node.ID, transport.Peer{ID: node.ID, DC: node.DC, Addr: node.Addr})
		}
	}
	for addr, inFlight := range h.seeds {
		if !known[addr] && !inFlight {
			h.seeds[addr] = true
			go h.ping(ctx, "", transport.Peer{ID: "seed@" + addr, Addr: addr})
		}
	}
	h.mu.Unlock()
}

// ping sends one heartbeat; id is "" for a seed not yet known by id.
func (h *heartbeat) ping(ctx context.Context, id string, peer transport.Peer) {
	payload, err := proto.Marshal(&kurav1.PingRequest{
		Sender:       peerInfo(h.n.directory.Self()),
		SchemaDigest: h.n.catalog.Digest(),
		NodesDigest:  nodesDigest(h.n.directory.Nodes()),
	})
	if err != nil {
		panic(err) // a message of plain fields always encodes
	}
	ctx, cancel := context.WithTimeout(ctx, h.n.cfg.SuspectAfter)
	defer cancel()
	start := time.Now()
	raw, err := h.n.transport.Call(ctx, peer, kindPing, payload)
	rtt := time.Since(start)

	h.mu.Lock()
	if id == "" {
		h.seeds[peer.Addr] = false
	} else {
		p := h.state(id)
		p.inFlight = false
		if err == nil {
			p.lastAck = time.Now()
			if p.rtt == 0 {
				p.rtt = rtt
			} else {
				p.rtt = (p.rtt*7 + rtt) / 8
			}
		}
	}
	h.mu.Unlock()

	if err != nil {
		// A refused connection is certain: the node is down now, not after SuspectAfter.
		if id != "" && errors.Is(err, transport.ErrUnreachable) && h.n.directory.SetAlive(id, false) {
			h.n.log.Warn("peer down", "peer", id, "err", err)
		}
		return
	}
	if id != "" && h.n.directory.SetAlive(id, true) {
		h.n.log.Info("peer up", "peer", id)
	}
	var resp kurav1.PingResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		h.n.log.Warn("bad ping answer", "peer", peer.ID, "err", err)
		return
	}
	for _, info := range resp.GetKnown() {
		h.n.directory.Upsert(fromPeerInfo(info))
	}
	for _, update := range resp.GetKeyspaces() {
		if err := h.n.applySchema(update); err != nil {
			h.n.log.Warn("schema from peer", "peer", peer.ID, "err", err)
		}
	}
}

// handlePing answers a heartbeat: the sender is alive and known; it gets the node list
// and the keyspaces if its digests show it lacks them.
func (h *heartbeat) handlePing(payload []byte) ([]byte, error) {
	var req kurav1.PingRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode ping: %w", err)
	}
	sender := fromPeerInfo(req.GetSender())
	if sender.ID == "" || sender.DC == "" {
		return nil, errors.New("ping without sender id and dc")
	}
	h.n.directory.Upsert(sender)
	h.mu.Lock()
	h.state(sender.ID).lastAck = time.Now()
	h.mu.Unlock()
	h.n.directory.SetAlive(sender.ID, true)

	var resp kurav1.PingResponse
	if nodes := h.n.directory.Nodes(); req.GetNodesDigest() != nodesDigest(nodes) {
		for _, node := range nodes {
			resp.Known = append(resp.Known, peerInfo(node))
		}
	}
	if req.GetSchemaDigest() != h.n.catalog.Digest() {
		for _, ks := range h.n.catalog.List() {
			resp.Keyspaces = append(resp.Keyspaces, schemaUpdate(ks))
		}
	}
	return proto.Marshal(&resp)
}

// Distance is the measured round-trip time to a node; nodes not measured yet rank last.
func (h *heartbeat) Distance(id string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.peers[id]; ok && p.rtt > 0 {
		return p.rtt
	}
	return time.Hour
}

func nodesDigest(nodes []cluster.Node) uint64 {
	h := fnv.New64a()
	for _, n := range nodes {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%v\x00", n.ID, n.DC, n.Addr, n.ClientAddr, n.Tokens)
	}
	return h.Sum64()
}

func peerInfo(n cluster.Node) *kurav1.PeerInfo {
	return &kurav1.PeerInfo{Id: n.ID, Dc: n.DC, Addr: n.Addr, ClientAddr: n.ClientAddr, Tokens: n.Tokens}
}

func fromPeerInfo(p *kurav1.PeerInfo) cluster.Node {
	return cluster.Node{ID: p.GetId(), DC: p.GetDc(), Addr: p.GetAddr(), ClientAddr: p.GetClientAddr(), Tokens: p.GetTokens()}
}
