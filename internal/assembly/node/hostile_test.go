package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/io/transport"
)

// hostileTimeout bounds every wait of the hostile-bytes test: generous, since the test
// must pass on a loaded machine under the race detector, and never a measure of speed.
const hostileTimeout = 60 * time.Second

// startAllPortsNode starts an in-memory node serving every port: internode, gRPC, RESP and
// HTTP. Its logs are discarded: the hostile-bytes test makes it log a warning per attack.
func startAllPortsNode(t *testing.T, id, dc, defaultReplication string, seeds ...string) *Node {
	t.Helper()
	n, err := Start(Config{
		ID: id, DC: dc, Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0",
		HTTPAddr: "127.0.0.1:0", Seeds: seeds, InMemory: true, DefaultReplication: defaultReplication,
		// Longer than the other tests' rounds, so that a loaded machine does not make
		// gossip suspect a live node while the attack runs.
		GossipInterval: 100 * time.Millisecond,
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// TestHostileBytesOnEveryPort writes acknowledged data to a three-node cluster, throws
// hostile input at every port of one node (each input on its own, checking how the node
// answers where it must, then many connections of each at once), and checks that the node
// still serves reads and writes on every port and that every acknowledged value reads
// back. Half-open connections stay open, idle, until the end.
func TestHostileBytesOnEveryPort(t *testing.T) {
	t.Parallel()
	// dc1=2,dc2=1 over three nodes: every node holds every key.
	nodes := startCluster(t, startAllPortsNode, "dc1=2,dc2=1", "dc1", "dc1", "dc2")
	victim, peer := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 5*hostileTimeout)
	defer cancel()

	kv := kvClient(t, victim)
	rdb := redis.NewClient(&redis.Options{
		Addr: victim.RESPAddr(),
		OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err()
		},
	})
	t.Cleanup(func() { rdb.Close() })
	acked := make(map[string]string)
	for i := range 20 {
		key, value := fmt.Sprintf("grpc-%d", i), fmt.Sprintf("value %d over gRPC", i)
		if _, err := kv.Put(ctx, &kurav1.PutRequest{Keyspace: "default", Key: []byte(key), Value: []byte(value), Consistency: kurav1.Consistency_ALL}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		acked[key] = value
		key, value = fmt.Sprintf("resp-%d", i), fmt.Sprintf("value %d over RESP", i)
		if err := rdb.Set(ctx, key, value, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		acked[key] = value
	}

	inputs := hostileInputs(victim, peer)
	var idle []net.Conn
	var idleMu sync.Mutex
	t.Cleanup(func() {
		for _, nc := range idle {
			nc.Close()
		}
	})
	attack := func(in hostileInput) error {
		nc, err := in.send()
		if err != nil {
			return err
		}
		if in.idle {
			idleMu.Lock()
			idle = append(idle, nc)
			idleMu.Unlock()
			return nil
		}
		defer nc.Close()
		if in.after != nil {
			return in.after(nc)
		}
		return nil
	}
	for _, in := range inputs {
		if err := attack(in); err != nil {
			t.Errorf("%s to the %s port: %v", in.name, in.port, err)
		}
	}
	// Many at once: every input on several connections together.
	const copies = 8
	var wg sync.WaitGroup
	for range copies {
		for _, in := range inputs {
			wg.Go(func() {
				if err := attack(in); err != nil {
					t.Errorf("%s to the %s port, among many: %v", in.name, in.port, err)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d hostile connections, %d of them left open and idle", len(inputs)*(copies+1), len(idle))

	// The attack must not have made gossip lose a node for good; while any node sees one
	// down, writes and reads at ALL would fail for a reason other than the one under test.
	waitFor(t, "every node sees every node up", func() bool {
		for _, viewer := range nodes {
			for _, n := range nodes {
				if !viewer.View().State(n.ID()).Reachable() {
					return false
				}
			}
		}
		return true
	})
	checkServesEveryPort(ctx, t, victim, peer, kv, rdb, acked)
}

// checkServesEveryPort writes through each of n's ports and reads every acknowledged value
// back through the gRPC and RESP ones, at ALL.
func checkServesEveryPort(ctx context.Context, t *testing.T, n, peer *Node, kv kurav1.KVClient, rdb *redis.Client, acked map[string]string) {
	t.Helper()
	// HTTP.
	if body := httpGet(t, n, "/healthz"); body != "ok\n" {
		t.Errorf("/healthz = %q", body)
	}
	var st Status
	if err := json.Unmarshal([]byte(httpGet(t, n, "/status")), &st); err != nil || st.Node != n.ID() || len(st.Peers) != 2 {
		t.Errorf("/status = %+v, %v", st, err)
	}
	// Internode: a new peer is accepted and answered, and a coordinator elsewhere writes
	// to n as a replica.
	probe, err := transport.Listen(transport.Config{
		Self:    transport.Peer{ID: "probe", DC: "dc1", Addr: "127.0.0.1:0"},
		Handler: transport.HandlerFunc(func(context.Context, transport.Peer, transport.Kind, []byte) ([]byte, error) { return nil, nil }),
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	whois, ok := transport.KindByName("gossip_whois")
	if !ok {
		t.Fatal("kind gossip_whois is not registered")
	}
	answer, err := probe.Call(ctx, transport.Peer{ID: n.ID(), DC: "dc1", Addr: n.Addr()}, whois, nil)
	if err != nil || !bytes.Contains(answer, []byte(n.ID())) {
		t.Errorf("whois over a new internode connection: %q, %v", answer, err)
	}
	if _, err := peer.Coordinator().Put(ctx, "default", []byte("after-internode"), []byte("via "+peer.ID()), 0, consistency.All); err != nil {
		t.Errorf("write at ALL coordinated by %s: %v", peer.ID(), err)
	}
	acked["after-internode"] = "via " + peer.ID()
	// gRPC and RESP.
	if _, err := kv.Put(ctx, &kurav1.PutRequest{Keyspace: "default", Key: []byte("after-grpc"), Value: []byte("v"), Consistency: kurav1.Consistency_ALL}); err != nil {
		t.Errorf("gRPC put after the attack: %v", err)
	}
	acked["after-grpc"] = "v"
	if err := rdb.Set(ctx, "after-resp", "v", 0).Err(); err != nil {
		t.Errorf("RESP SET after the attack: %v", err)
	}
	acked["after-resp"] = "v"
	for key, want := range acked {
		got, err := kv.Get(ctx, &kurav1.GetRequest{Keyspace: "default", Key: []byte(key), Consistency: kurav1.Consistency_ALL})
		if err != nil || !got.GetFound() || string(got.GetValue()) != want {
			t.Errorf("gRPC get %s at ALL = %q (found %v), %v; want %q", key, got.GetValue(), got.GetFound(), err, want)
		}
		if got, err := rdb.Get(ctx, key).Result(); err != nil || got != want {
			t.Errorf("RESP GET %s at ALL = %q, %v; want %q", key, got, err, want)
		}
	}
}

// kvClient dials n's gRPC port itself, not through package client, which would send
// requests to whichever replica it prefers.
func kvClient(t *testing.T, n *Node) kurav1.KVClient {
	t.Helper()
	conn, err := grpc.NewClient(n.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return kurav1.NewKVClient(conn)
}

// waitFor is waitUntil with hostileTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hostileTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostileInput is bytes a stranger sends to one port of a node.
type hostileInput struct {
	port string // "internode", "gRPC", "RESP" or "HTTP", for messages
	addr string
	name string
	data []byte
	// after, if set, checks what the node does once data is sent; otherwise the
	// connection is closed at once (unless idle).
	after func(nc net.Conn) error
	// idle leaves the connection open and silent after data: a half-open peer.
	idle bool
}

// send dials the input's port and writes its data. A write the node cuts short by
// closing the connection is not an error: closing is a fine answer to garbage.
func (in hostileInput) send() (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", in.addr, hostileTimeout)
	if err != nil {
		return nil, err
	}
	if err := nc.SetDeadline(time.Now().Add(hostileTimeout)); err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := nc.Write(in.data); err != nil && isTimeout(err) {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// hostileInputs lists what the test sends to each port of victim; peer is the node whose
// identity the forged hellos claim.
func hostileInputs(victim, peer *Node) []hostileInput {
	rng := rand.New(rand.NewPCG(12, 1))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	forged := helloPayload(transport.ProtocolVersion, peer.ID(), "dc1", peer.Addr())
	hello := frame(frameHello, kindHello, 0, forged)
	// Requests of every kind the node serves, and a few it does not, each with a payload
	// that is not valid protobuf or gossip (an unterminated varint), from the forged peer.
	garbage := []byte{0xff, 0xff, 0xff, 0xff}
	requests := append([]byte{}, hello...)
	requests = append(requests, frame(frameOneway, 6, 0, garbage)...) // a one-way gossip message
	var ids []uint64
	for kind := range 20 {
		id := uint64(kind + 1)
		ids = append(ids, id)
		requests = append(requests, frame(frameRequest, byte(kind), id, garbage)...)
	}
	http2Preface := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	// An HTTP/2 SETTINGS frame header declaring the largest payload, then a little of it.
	http2Settings := append(append([]byte{}, http2Preface...), 0xff, 0xff, 0xff, 0x04, 0, 0, 0, 0, 0, 1, 2, 3)
	resp2To40 := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1099511627776\r\n")

	internode, grpcAddr, respAddr, httpAddr := victim.Addr(), victim.ClientAddr(), victim.RESPAddr(), victim.HTTPAddr()
	return []hostileInput{
		{port: "internode", addr: internode, name: "random bytes", data: random, after: closes("")},
		{port: "internode", addr: internode, name: "a frame header declaring 4 GiB", data: header(1<<32-1, frameHello, kindHello, 0), after: closes("")},
		{port: "internode", addr: internode, name: "a hello declaring the largest frame allowed, never sent", data: header(transport.DefaultMaxFrameBytes-frameHeaderBytes, frameHello, kindHello, 0), idle: true},
		{port: "internode", addr: internode, name: "a truncated hello, left open", data: hello[:len(hello)-3], idle: true},
		{port: "internode", addr: internode, name: "a truncated hello, then hanging up", data: hello[:frameHeaderBytes+1], after: hangUpThenCloses},
		{port: "internode", addr: internode, name: "a hello claiming " + peer.ID() + " with stray bytes in it", data: frame(frameHello, kindHello, 0, append(forged, random[:100]...)), after: closes("")},
		{port: "internode", addr: internode, name: "a hello claiming " + peer.ID() + ", then random bytes", data: append(append([]byte{}, hello...), random...), after: closes("")},
		{port: "internode", addr: internode, name: "a hello claiming " + peer.ID() + ", then requests with garbage payloads", data: requests, after: answersEvery(ids)},
		{port: "internode", addr: internode, name: "a hello of another protocol version", data: frame(frameHello, kindHello, 0, helloPayload(0xffff, "stranger", "dc9", "")), after: refuses},
		{port: "internode", addr: internode, name: "an HTTP/2 preface", data: http2Preface, after: closes("")},
		{port: "internode", addr: internode, name: "an HTTP/1.1 request", data: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), after: closes("")},
		{port: "internode", addr: internode, name: "a RESP command", data: []byte("*1\r\n$4\r\nPING\r\n"), after: closes("")},
		{port: "internode", addr: internode, name: "nothing", idle: true},

		{port: "gRPC", addr: grpcAddr, name: "random bytes", data: random},
		{port: "gRPC", addr: grpcAddr, name: "an HTTP/2 preface, then a SETTINGS frame declaring 16 MiB", data: http2Settings, idle: true},
		{port: "gRPC", addr: grpcAddr, name: "an HTTP/2 preface, left open", data: http2Preface, idle: true},
		{port: "gRPC", addr: grpcAddr, name: "an internode hello", data: hello},
		{port: "gRPC", addr: grpcAddr, name: "RESP with a bulk of 2^40 bytes", data: resp2To40},
		{port: "gRPC", addr: grpcAddr, name: "nothing", idle: true},

		{port: "RESP", addr: respAddr, name: "random bytes", data: random},
		{port: "RESP", addr: respAddr, name: "a bulk length of 2^40", data: resp2To40, after: closes("-ERR Protocol error")},
		{port: "RESP", addr: respAddr, name: "2^40 arguments", data: []byte("*1099511627776\r\n"), after: closes("-ERR Protocol error")},
		{port: "RESP", addr: respAddr, name: "a 20 KiB inline line", data: bytes.Repeat([]byte("a"), 20<<10), after: closes("-ERR Protocol error")},
		{port: "RESP", addr: respAddr, name: "a value declaring the largest bulk allowed, left open", data: []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16777216\r\nabc"), idle: true},
		{port: "RESP", addr: respAddr, name: "an internode hello", data: hello},
		{port: "RESP", addr: respAddr, name: "an HTTP/2 preface", data: http2Preface},
		{port: "RESP", addr: respAddr, name: "nothing", idle: true},

		{port: "HTTP", addr: httpAddr, name: "random bytes", data: random},
		{port: "HTTP", addr: httpAddr, name: "a body declaring 2^40 bytes", data: []byte("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1099511627776\r\n\r\n"), after: closes("HTTP/1.1 200")},
		{port: "HTTP", addr: httpAddr, name: "a 2 MiB header", data: []byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 2<<20) + "\r\n\r\n")},
		{port: "HTTP", addr: httpAddr, name: "an HTTP/2 preface", data: http2Preface},
		{port: "HTTP", addr: httpAddr, name: "an internode hello", data: hello},
		{port: "HTTP", addr: httpAddr, name: "half a request, left open", data: []byte("GET /healthz HTTP/1.1\r\nHost:"), idle: true},
		{port: "HTTP", addr: httpAddr, name: "nothing", idle: true},
	}
}

// closes checks that the node closes the connection, having sent first what starts with
// prefix. The close may come as a reset, when the node hangs up on bytes it did not read.
func closes(prefix string) func(nc net.Conn) error {
	return func(nc net.Conn) error {
		got, err := io.ReadAll(nc)
		switch {
		case isTimeout(err):
			return fmt.Errorf("the node kept the connection open for %v (received %q)", hostileTimeout, truncate(got))
		case !bytes.HasPrefix(got, []byte(prefix)):
			return fmt.Errorf("the node answered %q (%v), want %q first", truncate(got), err, prefix)
		}
		return nil
	}
}

// hangUpThenCloses closes the sending side, as a dialer that gives up does, and checks
// that the node closes the connection in turn.
func hangUpThenCloses(nc net.Conn) error {
	if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	return closes("")(nc)
}

// refuses checks that the node answers a hello of another version with a refusal naming
// its own.
func refuses(nc net.Conn) error {
	raw := make([]byte, frameHeaderBytes+2)
	if _, err := io.ReadFull(nc, raw); err != nil {
		return fmt.Errorf("no refusal: %v", err)
	}
	if raw[5] != frameRefuse || binary.BigEndian.Uint16(raw[frameHeaderBytes:]) != transport.ProtocolVersion {
		return fmt.Errorf("answered %x, want a refusal naming version %d", raw, transport.ProtocolVersion)
	}
	return nil
}

// answersEvery checks that the node answers each of the requests ids, with a response or an
// error, on the connection that sent them, after the acceptance of the hello (protocol
// version 4 on).
func answersEvery(ids []uint64) func(nc net.Conn) error {
	return func(nc net.Conn) error {
		waiting := make(map[uint64]bool)
		for _, id := range ids {
			waiting[id] = true
		}
		for first := true; len(waiting) > 0; first = false {
			var h [frameHeaderBytes]byte
			if _, err := io.ReadFull(nc, h[:]); err != nil {
				return fmt.Errorf("%d requests unanswered: %v", len(waiting), err)
			}
			if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(h[:4]))); err != nil {
				return err
			}
			id := binary.BigEndian.Uint64(h[6:])
			if first && h[5] == frameHello && id == 0 {
				continue
			}
			if (h[5] != frameResponse && h[5] != frameError) || !waiting[id] {
				return fmt.Errorf("unexpected frame of type %d, id %d", h[5], id)
			}
			delete(waiting, id)
		}
		return nil
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// truncate shortens what a node sent for an error message.
func truncate(b []byte) []byte { return b[:min(len(b), 80)] }

// The internode wire, as internal/io/transport/frame.go lays it out; the test forges it by hand, as
// an attacker would.
const (
	frameHeaderBytes = 4 + 1 + 1 + 8 // payload length u32 | kind u8 | type u8 | request id u64
	frameRequest     = 1
	frameResponse    = 2
	frameError       = 3
	frameOneway      = 4
	frameHello       = 5
	frameRefuse      = 6
	kindHello        = 1
)

// header is a frame header declaring payloadBytes.
func header(payloadBytes uint32, typ, kind byte, id uint64) []byte {
	h := binary.BigEndian.AppendUint32(nil, payloadBytes)
	h = append(h, kind, typ)
	return binary.BigEndian.AppendUint64(h, id)
}

// frame is a whole frame.
func frame(typ, kind byte, id uint64, payload []byte) []byte {
	return append(header(uint32(len(payload)), typ, kind, id), payload...)
}

// helloPayload is a hello's payload: the version, then id, DC and address, each with its
// u16 length.
func helloPayload(version uint16, id, dc, addr string) []byte {
	b := binary.BigEndian.AppendUint16(nil, version)
	for _, field := range []string{id, dc, addr} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(field)))
		b = append(b, field...)
	}
	return b
}
