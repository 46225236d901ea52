package transport

import (
	"context"
	"time"
)

// Endpoint is one node's side of the network between nodes: a Transport over TCP, or a
// simulated network in virtual time (package internal/tools/sim/simnet). A node, its gossip and its
// replicas send through it, so that the simulator can run a whole node unchanged.
type Endpoint interface {
	// Self returns this node, with the address others reach it at.
	Self() Peer
	// Addr returns the address others reach this node at.
	Addr() string
	// Call sends a request and waits for its response until ctx ends.
	Call(ctx context.Context, to Peer, kind Kind, payload []byte) ([]byte, error)
	// Send sends a one-way message; it reports failures to reach the peer, never the
	// handler's result.
	Send(ctx context.Context, to Peer, kind Kind, payload []byte) error
	// RTT returns the smoothed round trip of recent calls to a peer; ok is false until a
	// call to it has succeeded.
	RTT(peerID string) (rtt time.Duration, ok bool)
	// Stats returns the endpoint's traffic counters.
	Stats() *Stats
	// Close stops the endpoint and fails its pending calls with ErrClosed.
	Close() error
}

// Listener starts an Endpoint from a Config: Listen over TCP, or a simulated network's.
type Listener func(Config) (Endpoint, error)

// ListenEndpoint is Listen as a Listener.
func ListenEndpoint(cfg Config) (Endpoint, error) {
	t, err := Listen(cfg)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return t, nil
}

var _ Endpoint = (*Transport)(nil)
