package node

import (
	"errors"
	"net"
	"net/http"

	"github.com/kuradb/kura/internal/service/powercycle"
	"github.com/kuradb/kura/internal/service/resp"
)

// frontEnds are the node's servers besides the gRPC API: the Redis protocol and the HTTP
// admin port (metrics, health, status).
type frontEnds struct {
	resp         *resp.Server
	respListener net.Listener
	http         *http.Server
	httpListener net.Listener
}

// startFrontEnds starts the servers the configuration asks for.
func (n *Node) startFrontEnds() error {
	if err := n.startRESP(); err != nil {
		return err
	}
	if err := n.startHTTP(); err != nil {
		return err
	}
	// A stand-in takes the Redis address over while the node sleeps, and the HTTP port
	// is where it is woken.
	n.feed.SetAppState(powercycle.KeyRESPAddr, n.RESPAddr())
	n.feed.SetAppState(powercycle.KeyWakeAddr, n.HTTPAddr())
	return nil
}

// close stops the servers and closes their connections and listeners. A server closes
// only the listeners its Serve has taken, and Serve runs on a goroutine of its own that
// may not have started yet: it would close its listener after close returned, and the
// node's address would still take connections for a moment (a closed node must refuse
// them at once). Closing a listener twice does no harm.
func (f *frontEnds) close() {
	if f.resp != nil {
		f.resp.Close()
	}
	if f.http != nil {
		f.http.Close()
	}
	for _, l := range []net.Listener{f.respListener, f.httpListener} {
		if l != nil {
			l.Close()
		}
	}
}

// RESPAddr returns the address of the Redis protocol server, or "" when the node serves
// none.
func (n *Node) RESPAddr() string { return listenerAddr(n.frontEnds.respListener) }

// HTTPAddr returns the address of the HTTP admin server, or "" when the node serves none.
func (n *Node) HTTPAddr() string { return listenerAddr(n.frontEnds.httpListener) }

func listenerAddr(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// serve runs a server's accept loop in the background, logging how it ended unless the
// node closed it.
func (n *Node) serve(what string, serve func() error, closed error) {
	go func() {
		if err := serve(); err != nil && !errors.Is(err, closed) {
			n.log.Error(what+" stopped", "err", err)
		}
	}()
}
