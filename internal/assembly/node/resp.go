package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/service/resp"
)

// startRESP serves the Redis protocol on Config.RESPAddr, if set.
func (n *Node) startRESP() error {
	if n.cfg.RESPAddr == "" {
		return nil
	}
	if n.cfg.RESPKeyspace != "" {
		if err := schema.ValidateName(n.cfg.RESPKeyspace); err != nil {
			return fmt.Errorf("the Redis connections' keyspace (RESPKeyspace): %w", err)
		}
	}
	l, err := n.power.Gate().Listen(n.cfg.RESPAddr)
	if err != nil {
		return fmt.Errorf("listen for Redis clients: %w", err)
	}
	if n.cfg.TLS != nil {
		l = tls.NewListener(l, n.clientTLS())
	}
	server := resp.NewServer(resp.Config{
		Backend:         respBackend{Coordinator: n.coord, node: n},
		Limits:          n.coord.Limits(),
		Password:        n.cfg.RESPPassword,
		IdleTimeout:     n.cfg.RESPIdleTimeout,
		DefaultLevel:    n.cfg.RESPConsistency,
		DefaultKeyspace: n.cfg.RESPKeyspace,
		Observe: func(op string, cl consistency.Level, elapsed time.Duration, err error) {
			n.metrics.Observe("resp", op, cl, elapsed, err)
			n.power.ObserveRequest(elapsed)
		},
		Logger:     n.log,
		NodeID:     n.cfg.ID,
		PNCounters: n.cfg.RESPPNCounters,
	})
	n.frontEnds.resp, n.frontEnds.respListener = server, l
	n.serve("Redis protocol server", func() error { return server.Serve(l) }, resp.ErrServerClosed)
	return nil
}

// respBackend serves the Redis front end: data from the coordinator, keyspaces and INFO
// from the node.
type respBackend struct {
	*coord.Coordinator
	node *Node
}

// Truncate truncates a keyspace (FLUSHDB).
func (b respBackend) Truncate(ctx context.Context, keyspace string) (hlc.Timestamp, error) {
	return b.node.Truncate(ctx, keyspace)
}

// Keyspace returns a keyspace's definition.
func (b respBackend) Keyspace(name string) (schema.Keyspace, error) { return b.node.Keyspace(name) }

// Info gathers the node's facts for INFO.
func (b respBackend) Info() resp.Info {
	n := b.node
	info := resp.Info{
		NodeID:       n.cfg.ID,
		DC:           n.cfg.DC,
		Keyspaces:    n.Keyspaces(),
		InterDCBytes: n.Stats().InterDCBytes(),
		Durable:      !n.cfg.InMemory,
	}
	for _, member := range n.directory.Nodes() {
		info.Nodes = append(info.Nodes, resp.NodeState{ID: member.ID, DC: member.DC, Addr: member.Addr, Alive: n.directory.State(member.ID).Reachable()})
	}
	if hints, err := n.coord.HintsPending(); err == nil {
		info.HintsPending = hints
	} else {
		n.log.Warn("count hints for INFO", "err", err)
	}
	return info
}
