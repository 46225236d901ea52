package powercycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/service/resp"
)

// The stand-in is the paper's timeout suppression (003): while node A sleeps, a
// neighbour binds A's released addresses and turns every request away at once, naming
// awake nodes, so that a client with a stale node list moves on at once instead of
// waiting for a request to A to time out.

// standInAddrs are the addresses of the sleeping node a stand-in binds; an empty one is
// not bound.
type standInAddrs struct {
	Internode string // node-to-node
	Client    string // gRPC client API
	RESP      string // Redis protocol
}

// standInConfig configures a stand-in.
type standInConfig struct {
	// For is the sleeping node's id.
	For   string
	Addrs standInAddrs
	// Targets returns the awake nodes to send clients to, best first; it is asked at
	// each request, so the redirect follows the cluster as it changes.
	Targets func() []*kurav1.RedirectTarget
	// TLS is the server configuration of the client and Redis ports (the standing-in
	// node's own, as its front ends use); nil serves them in plaintext.
	TLS    *tls.Config
	Logger *slog.Logger
}

// standInBindInterval is how often a stand-in tries again to bind an address the
// sleeping node still holds: it gives it up only once it has handed its work over.
const standInBindInterval = 20 * time.Millisecond

// standInReadLimits bound what the stand-in reads of a Redis command into memory: it
// needs none of it, and skips what is longer.
var standInReadLimits = resp.ReadLimits{BulkBytesMax: 4 << 10, CommandBytesMax: 4 << 10, ArgsMax: 1 << 10}

// standIn serves a sleeping node's addresses with redirects.
type standIn struct {
	cfg    standInConfig
	grpc   *grpc.Server
	ctx    context.Context // ends at Close, stopping the binding retries
	cancel context.CancelFunc
	wg     sync.WaitGroup // the binding and serving goroutines

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	conns     map[net.Conn]struct{} // Redis connections
}

// startStandIn binds at once those of cfg's addresses that are free, and keeps trying
// the others in the background (every 20 ms) until they are free or the stand-in is
// closed.
func startStandIn(cfg standInConfig) *standIn {
	s := &standIn{cfg: cfg, conns: map[net.Conn]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	opts := []grpc.ServerOption{grpc.UnknownServiceHandler(s.redirectCall)}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	s.grpc = grpc.NewServer(opts...)
	s.bind("internode", cfg.Addrs.Internode, func(l net.Listener) { s.accept(l, func(c net.Conn) { c.Close() }) })
	s.bind("client", cfg.Addrs.Client, func(l net.Listener) { s.grpc.Serve(l) })
	s.bind("Redis", cfg.Addrs.RESP, func(l net.Listener) {
		if cfg.TLS != nil {
			l = tls.NewListener(l, cfg.TLS)
		}
		s.accept(l, s.serveRESP)
	})
	return s
}

// bind listens on addr, if set, and serves it with serve: at once when the address is
// free, else from the first retry that finds it free.
func (s *standIn) bind(what, addr string, serve func(net.Listener)) {
	if addr == "" {
		return
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		s.run(what, l, serve)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		retry := time.NewTicker(standInBindInterval)
		defer retry.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-retry.C:
			}
			if l, err := net.Listen("tcp", addr); err == nil {
				s.run(what, l, serve)
				return
			}
		}
	}()
}

// run records l and serves it in the background, unless the stand-in was closed
// meanwhile: then it gives the address up at once.
func (s *standIn) run(what string, l net.Listener, serve func(net.Listener)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		l.Close()
		return
	}
	s.cfg.Logger.Info("standing in for a sleeping node", "node", s.cfg.For, "port", what, "addr", l.Addr().String())
	s.listeners = append(s.listeners, l)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		serve(l)
	}()
}

// accept hands each connection l accepts to handle, until l is closed.
func (s *standIn) accept(l net.Listener, handle func(net.Conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.cfg.Logger.Warn("stand-in stopped accepting", "node", s.cfg.For, "addr", l.Addr().String(), "err", err)
			}
			return
		}
		handle(c)
	}
}

// Close gives every address up and closes every connection; when it returns, the
// addresses are free for the waking node to bind.
func (s *standIn) Close() {
	s.mu.Lock()
	s.closed = true
	listeners, conns := s.listeners, s.conns
	s.listeners, s.conns = nil, nil
	s.mu.Unlock()
	s.cancel()
	for _, l := range listeners {
		l.Close()
	}
	for c := range conns {
		c.Close()
	}
	s.grpc.Stop()
	s.wg.Wait()
}

// refusal says that the node sleeps and where to go instead.
func (s *standIn) refusal(places []string, sep string) string {
	if len(places) == 0 {
		return fmt.Sprintf("node %s is asleep; no awake node to try", s.cfg.For)
	}
	return fmt.Sprintf("node %s is asleep; try %s", s.cfg.For, strings.Join(places, sep))
}

// redirectCall answers any gRPC call: UNAVAILABLE, with the awake nodes in a
// kurav1.Redirect detail for clients to go to and in the message for people.
func (s *standIn) redirectCall(any, grpc.ServerStream) error {
	targets := s.cfg.Targets()
	var places []string
	for _, t := range targets {
		if t.GetClientAddr() != "" {
			places = append(places, fmt.Sprintf("%s (%s)", t.GetId(), t.GetClientAddr()))
		}
	}
	st := status.New(codes.Unavailable, s.refusal(places, ", "))
	// WithDetails fails only on a message it cannot marshal, which a Redirect is not.
	detailed, err := st.WithDetails(&kurav1.Redirect{NodeId: s.cfg.For, Reason: "asleep", Targets: targets})
	if err != nil {
		return st.Err()
	}
	return detailed.Err()
}

// serveRESP answers every Redis command on c with an -ASLEEP error naming the awake
// nodes' Redis addresses, until the client leaves or sends what is not a command.
func (s *standIn) serveRESP(c net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
		r := resp.NewReader(c, standInReadLimits)
		w := resp.NewWriter(c)
		for {
			args, err := r.ReadCommand()
			switch {
			case errors.Is(err, resp.ErrTooLarge):
				// Read to its end and skipped: still a command, answered as any other.
			case err != nil:
				return // gone, or a stream out of step: nothing more can be answered
			case len(args) == 0:
				continue // an empty line, which Redis ignores too
			}
			var places []string
			for _, t := range s.cfg.Targets() {
				if t.GetRespAddr() != "" {
					places = append(places, t.GetRespAddr())
				}
			}
			w.Error("ASLEEP " + s.refusal(places, " "))
			// Answers to a pipeline go out together, once the client's commands are read.
			if r.Buffered() == 0 && w.Flush() != nil {
				return
			}
		}
	}()
}
