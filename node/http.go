package node

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/kuradb/kura/console"
)

// startHTTP serves the admin endpoints on Config.HTTPAddr, if set: the web console (/,
// /console/ and /api/console; package console), /metrics (Prometheus), /healthz, /status
// (JSON), and /debug/pprof with Config.EnablePprof.
func (n *Node) startHTTP() error {
	if n.cfg.HTTPAddr == "" {
		return nil
	}
	l, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen for HTTP: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", n.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /status", n.serveStatus)
	console.New(n.consoleSnapshot).Register(mux)
	// The HTTP port stays up while the node sleeps, as a machine's management
	// controller does: it is how the node is woken.
	mux.HandleFunc("POST /power/wake", n.power.ServeWake)
	if n.cfg.EnablePprof {
		// The Go profiler, for operators chasing a hot spot (go tool pprof HOST:PORT/debug/pprof/profile).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	n.frontEnds.http, n.frontEnds.httpListener = server, l
	n.serve("HTTP admin server", func() error { return server.Serve(l) }, http.ErrServerClosed)
	return nil
}

// Status is what /status reports: the node, its share of the ring, and its peers.
type Status struct {
	Node       string  `json:"node"`
	DC         string  `json:"dc"`
	Addr       string  `json:"addr"`
	ClientAddr string  `json:"client_addr,omitempty"`
	RESPAddr   string  `json:"resp_addr,omitempty"`
	RingShare  float64 `json:"ring_share"`
	// Peers are the other nodes this node knows.
	Peers []PeerStatus `json:"peers"`
}

// PeerStatus is one peer as this node sees it.
type PeerStatus struct {
	ID         string  `json:"id"`
	DC         string  `json:"dc"`
	Addr       string  `json:"addr"`
	ClientAddr string  `json:"client_addr,omitempty"`
	Alive      bool    `json:"alive"`
	State      string  `json:"state"` // up, down, joining, leaving, asleep
	RingShare  float64 `json:"ring_share"`
}

// Status describes the node. A node's ring share is the fraction of the token space whose
// first replica it is.
func (n *Node) Status() (Status, error) {
	r, err := n.Ring()
	if err != nil {
		return Status{}, err
	}
	self := n.directory.Self()
	st := Status{
		Node: self.ID, DC: self.DC, Addr: self.Addr, ClientAddr: self.ClientAddr,
		RESPAddr: n.RESPAddr(), RingShare: r.Share(self.ID), Peers: []PeerStatus{},
	}
	for _, p := range n.directory.Nodes() {
		if p.ID == self.ID {
			continue
		}
		st.Peers = append(st.Peers, PeerStatus{
			ID: p.ID, DC: p.DC, Addr: p.Addr, ClientAddr: p.ClientAddr,
			Alive: n.directory.State(p.ID).Reachable(), State: n.directory.State(p.ID).String(), RingShare: r.Share(p.ID),
		})
	}
	return st, nil
}

func (n *Node) serveStatus(w http.ResponseWriter, _ *http.Request) {
	st, err := n.Status()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(st)
}
