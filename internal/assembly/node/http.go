package node

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/service/console"
)

// startHTTP serves the admin endpoints on Config.HTTPAddr, if set: the web console (/,
// /console/ and /api/console; package console), /metrics (Prometheus), /healthz, /status
// (JSON), and /debug/pprof with Config.EnablePprof; with Config.HTTPToken, only to
// requests that carry it.
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
	var handler http.Handler = mux
	if n.cfg.HTTPToken != "" {
		handler = requireHTTPToken(n.cfg.HTTPToken, mux)
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	n.frontEnds.http, n.frontEnds.httpListener = server, l
	n.serve("HTTP admin server", func() error { return server.Serve(l) }, http.ErrServerClosed)
	return nil
}

// requireHTTPToken serves next only the requests that carry token, as "Authorization:
// Bearer TOKEN" (Prometheus's authorization.credentials_file) or as the password of HTTP
// Basic authentication, which a browser asks for when the console answers 401. GET
// /healthz and POST /power/wake stay open: a load balancer's health check and a peer
// waking this node carry no token, and neither reveals anything or touches data.
func requireHTTPToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := (r.Method == http.MethodGet && r.URL.Path == "/healthz") || (r.Method == http.MethodPost && r.URL.Path == "/power/wake")
		if open || httpTokenGiven(r, token) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="kura", charset="UTF-8"`)
		http.Error(w, `this port requires the node's HTTP token: send "Authorization: Bearer <token>", or the token as the password of HTTP Basic authentication (any user)`, http.StatusUnauthorized)
	})
}

// httpTokenGiven reports whether r carries token, as a bearer token or a Basic password.
func httpTokenGiven(r *http.Request, token string) bool {
	given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		_, given, ok = r.BasicAuth()
	}
	return ok && subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
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
