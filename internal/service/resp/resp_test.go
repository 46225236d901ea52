package resp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/lww"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// fakeBackend is an in-memory Backend: keyspaces of sorted keys. Key "broken" fails
// every operation as unavailable, so tests can see how errors are answered, and a read of
// key "panic" panics, as a bug would.
type fakeBackend struct {
	mu   sync.Mutex
	data map[string]map[string][]byte // keyspace -> key -> value
	// expiry holds the deadlines of the values that have one, by keyspace and key; an
	// expired value reads as missing, as the coordinator's do.
	expiry map[string]map[string]hlc.Timestamp
	ops    []string // "op keyspace level", in call order
	// getAlls and putAlls hold the keys of each GetAll call and the records of each
	// PutAll call, in call order.
	getAlls [][][]byte
	putAlls [][]lww.Record
	// calls holds the key-level calls in call order: "get k", "put k=v", "delete k", "getall k1 k2",
	// "putall k1=v1 k2=v2" (a GetAll's or PutAll's keys are not logged again one by one).
	calls []string
	// answerFullAfter, when above zero, is how many keys a GetAll reads before it
	// answers the others coord.ErrAnswerFull, as a coordinator whose answer filled.
	answerFullAfter int
	// types holds the type of each key that is not a string, by keyspace and key: what a
	// collection's header record carries.
	types map[string]map[string]lww.Type
	// stamps holds the timestamp of each key's last write through store, by keyspace and
	// key (WATCH compares them); a key written otherwise reads as stamped 1.
	stamps map[string]map[string]hlc.Timestamp
	// elements holds collections' element records by keyspace and key, stamped by clock
	// (hash_test.go).
	elements map[string]map[string]lww.Record
	clock    hlc.Timestamp
	// failCounterWrites is how many of the next counter writes fail after they were
	// applied (pncounter_test.go).
	failCounterWrites int
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{
		data:   map[string]map[string][]byte{"default": {}, "other": {}, "upgraded": {}},
		expiry: map[string]map[string]hlc.Timestamp{"default": {}, "other": {}, "upgraded": {}},
	}
}

// live returns key's value in keyspace ks (whose map is data), dropping it when expired.
func (f *fakeBackend) live(ks string, data map[string][]byte, key string) (lww.Record, bool) {
	v, ok := data[key]
	at := f.expiry[ks][key]
	if ok && at != 0 && hlc.FromTime(time.Now()) >= at {
		delete(data, key)
		delete(f.expiry[ks], key)
		ok = false
	}
	if !ok {
		return lww.Record{}, false
	}
	return lww.Record{Key: []byte(key), Value: v, ExpiresAt: at, Timestamp: max(f.stamps[ks][key], 1), Type: f.types[ks][key]}, true
}

// store sets or deletes key as rec says.
func (f *fakeBackend) store(ks string, data map[string][]byte, key string, rec lww.Record) {
	delete(f.types[ks], key)
	if f.stamps == nil {
		f.stamps = map[string]map[string]hlc.Timestamp{}
	}
	if f.stamps[ks] == nil {
		f.stamps[ks] = map[string]hlc.Timestamp{}
	}
	f.stamps[ks][key] = rec.Timestamp
	if rec.Tombstone {
		delete(data, key)
		delete(f.expiry[ks], key)
		return
	}
	if rec.Type != lww.String {
		if f.types == nil {
			f.types = map[string]map[string]lww.Type{}
		}
		if f.types[ks] == nil {
			f.types[ks] = map[string]lww.Type{}
		}
		f.types[ks][key] = rec.Type
	}
	data[key] = rec.Value
	if rec.ExpiresAt != 0 {
		if f.expiry[ks] == nil {
			f.expiry[ks] = map[string]hlc.Timestamp{}
		}
		f.expiry[ks][key] = rec.ExpiresAt
	} else {
		delete(f.expiry[ks], key)
	}
}

// Update runs fn under the backend's lock: a transaction nothing else can interleave.
func (f *fakeBackend) Update(_ context.Context, keyspace string, key []byte, serial consistency.Level, fn coord.UpdateFunc) (coord.UpdateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks, err := f.record("cas", keyspace, serial)
	if err != nil {
		return coord.UpdateResult{}, err
	}
	if string(key) == "broken" {
		return coord.UpdateResult{}, errBroken
	}
	if element.IsKey(key) {
		return f.updateElement(keyspace, key, fn)
	}
	cur, found := f.live(keyspace, ks, string(key))
	next, write, err := fn(cur, found)
	if err != nil || !write {
		return coord.UpdateResult{Previous: cur, PreviousFound: found}, err
	}
	next.Key, next.Timestamp = key, f.tick()
	f.store(keyspace, ks, string(key), next)
	return coord.UpdateResult{Applied: true, Previous: cur, PreviousFound: found, Record: next}, nil
}

// UpdateBatch runs fn on keys under the backend's lock, as the coordinator's transaction
// over a partition: several keys only in a keyspace whose transactions run per partition
// (the fake's "default" and "upgraded"), and of one partition as the keyspace's
// definition says (schema.Keyspace.TransactionPartition).
func (f *fakeBackend) UpdateBatch(_ context.Context, keyspace string, keys, collections [][]byte, serial consistency.Level, fn coord.BatchFunc) (coord.BatchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks, err := f.record("casbatch", keyspace, serial)
	if err != nil {
		return coord.BatchResult{}, err
	}
	def := fakeDefinition(keyspace)
	if len(keys) > 1 && !def.PartitionTransactions() {
		return coord.BatchResult{}, fmt.Errorf("%w: keyspace %s runs its lightweight transactions per key", coord.ErrInvalidArgument, keyspace)
	}
	var calls []string
	cur := make([]coord.KeyRecord, len(keys))
	for i, key := range keys {
		if !bytes.Equal(def.TransactionPartition(key), def.TransactionPartition(keys[0])) {
			return coord.BatchResult{}, fmt.Errorf("%w: keys of different hash tags", coord.ErrInvalidArgument)
		}
		cur[i].Key = key
		cur[i].Record, cur[i].Found = f.live(keyspace, ks, string(key))
		if !cur[i].Found {
			cur[i].Ended = f.stamps[keyspace][string(key)]
		}
		calls = append(calls, string(key))
		if slices.ContainsFunc(collections, func(k []byte) bool { return bytes.Equal(k, key) }) && cur[i].Found && cur[i].Record.Type != lww.String {
			elems, err := f.collection(keyspace, key)
			if err != nil {
				return coord.BatchResult{}, err
			}
			cur[i].Reset = resetOf(elems, key)
			for _, k := range slices.Sorted(maps.Keys(elems)) {
				if strings.HasPrefix(k, string(element.Prefix(key))) && k != string(element.Key(key, element.Reset, nil)) && liveElement(elems[k], cur[i].Reset) {
					cur[i].Elements = append(cur[i].Elements, elems[k])
				}
			}
		}
	}
	f.calls = append(f.calls, "casbatch "+strings.Join(calls, " "))
	ts := f.tick()
	next, write, reply, err := fn(ts, cur)
	if err != nil || !write {
		return coord.BatchResult{Previous: cur, Reply: reply}, err
	}
	for i := range next {
		coll, kind, _, isElement := element.Parse(next[i].Key)
		if !isElement {
			next[i].Timestamp = ts
			f.store(keyspace, ks, string(next[i].Key), next[i])
			continue
		}
		if kind != element.Reset {
			next[i].Timestamp = ts
		}
		elems, err := f.collection(keyspace, coll)
		if err != nil {
			return coord.BatchResult{}, err
		}
		applyElement(elems, next[i])
	}
	return coord.BatchResult{Applied: true, Previous: cur, Records: next, Reply: reply}, nil
}

// Truncate empties keyspace.
func (f *fakeBackend) Truncate(_ context.Context, keyspace string) (hlc.Timestamp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.record("truncate", keyspace, 0); err != nil {
		return 0, err
	}
	f.data[keyspace], f.expiry[keyspace] = map[string][]byte{}, map[string]hlc.Timestamp{}
	return 1, nil
}

var errBroken = &coord.UnavailableError{Level: consistency.Quorum, Alive: map[string]int{"dc1": 1}}

func (f *fakeBackend) record(op, keyspace string, cl consistency.Level) (map[string][]byte, error) {
	f.ops = append(f.ops, fmt.Sprintf("%s %s %v", op, keyspace, cl))
	ks, ok := f.data[keyspace]
	if !ok {
		return nil, fmt.Errorf("%w %q", schema.ErrNoKeyspace, keyspace)
	}
	return ks, nil
}

func (f *fakeBackend) Get(_ context.Context, keyspace string, key []byte, cl consistency.Level) (lww.Record, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "get "+string(key))
	return f.get(keyspace, key, cl)
}

// get is Get with f.mu held, not logged in calls.
func (f *fakeBackend) get(keyspace string, key []byte, cl consistency.Level) (lww.Record, bool, error) {
	ks, err := f.record("get", keyspace, cl)
	if err != nil {
		return lww.Record{}, false, err
	}
	if string(key) == "broken" {
		return lww.Record{}, false, errBroken
	}
	if string(key) == "panic" {
		panic("fakeBackend: a read of key panic")
	}
	rec, ok := f.live(keyspace, ks, string(key))
	return rec, ok, nil
}

func (f *fakeBackend) Put(_ context.Context, keyspace string, key, value []byte, expiresAt hlc.Timestamp, cl consistency.Level) (hlc.Timestamp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "put "+string(key)+"="+string(value))
	return f.put(keyspace, key, value, expiresAt, cl)
}

// put is Put with f.mu held, not logged in calls.
func (f *fakeBackend) put(keyspace string, key, value []byte, expiresAt hlc.Timestamp, cl consistency.Level) (hlc.Timestamp, error) {
	ks, err := f.record("put", keyspace, cl)
	if err != nil {
		return 0, err
	}
	if string(key) == "broken" {
		return 0, errBroken
	}
	f.store(keyspace, ks, string(key), lww.Record{Value: value, ExpiresAt: expiresAt})
	return 1, nil
}

// GetAll is Get of each key in order, noting the call's keys.
func (f *fakeBackend) GetAll(_ context.Context, keyspace string, keys [][]byte, cl consistency.Level) []coord.GetResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getAlls = append(f.getAlls, keys)
	f.calls = append(f.calls, "getall "+string(bytes.Join(keys, []byte(" "))))
	results := make([]coord.GetResult, len(keys))
	for i, key := range keys {
		r := &results[i]
		if f.answerFullAfter > 0 && i >= f.answerFullAfter {
			r.Err = fmt.Errorf("%w: the values read before this key reached 64 MiB", coord.ErrAnswerFull)
			continue
		}
		r.Record, r.Found, r.Err = f.get(keyspace, key, cl)
	}
	return results
}

// PutAll is Put of each record in order, noting the call's records.
func (f *fakeBackend) PutAll(_ context.Context, keyspace string, puts []lww.Record, cl consistency.Level) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.putAlls = append(f.putAlls, puts)
	written := make([]string, len(puts))
	for i, p := range puts {
		written[i] = string(p.Key) + "=" + string(p.Value)
	}
	f.calls = append(f.calls, "putall "+strings.Join(written, " "))
	errs := make([]error, len(puts))
	for i, p := range puts {
		_, errs[i] = f.put(keyspace, p.Key, p.Value, p.ExpiresAt, cl)
	}
	return errs
}

func (f *fakeBackend) Delete(_ context.Context, keyspace string, key []byte, cl consistency.Level) (hlc.Timestamp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete "+string(key))
	ks, err := f.record("delete", keyspace, cl)
	if err != nil {
		return 0, err
	}
	f.store(keyspace, ks, string(key), lww.Record{Tombstone: true})
	return 1, nil
}

func (f *fakeBackend) Scan(_ context.Context, keyspace string, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks, err := f.record("scan", keyspace, cl)
	if err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = 1000
	}
	var keys []string
	for k := range ks {
		if (start == nil || k >= string(start)) && (end == nil || k < string(end)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []lww.Record
	for _, k := range keys[:min(limit, len(keys))] {
		out = append(out, lww.Record{Key: []byte(k), Value: ks[k]})
	}
	return out, nil
}

// ScanKeys walks the keys in the order of their position, the hash partitioner's token,
// as the coordinator does, never splitting a position.
func (f *fakeBackend) ScanKeys(_ context.Context, keyspace string, cursor uint64, count int, cl consistency.Level) ([][]byte, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks, err := f.record("scankeys", keyspace, cl)
	if err != nil {
		return nil, 0, err
	}
	var keys []string
	for k := range ks {
		if position(k) >= cursor {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return position(keys[i]) < position(keys[j]) })
	var out [][]byte
	for i, k := range keys {
		if i >= count && position(k) != position(keys[i-1]) {
			return out, position(k), nil
		}
		out = append(out, []byte(k))
	}
	return out, 0, nil
}

func position(key string) uint64 { return uint64(ring.HashPartitioner().Token([]byte(key))) }

func (f *fakeBackend) CountKeys(_ context.Context, keyspace string) (coord.KeyCount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks, err := f.record("countkeys", keyspace, consistency.One)
	if err != nil {
		return coord.KeyCount{}, err
	}
	if _, ok := ks["broken"]; ok {
		return coord.KeyCount{}, errBroken
	}
	return coord.KeyCount{Keys: int64(len(ks)), Expiring: int64(len(ks) / 2)}, nil
}

func (f *fakeBackend) Keyspace(name string) (schema.Keyspace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.data[name]; !ok {
		return schema.Keyspace{}, fmt.Errorf("%w %q", schema.ErrNoKeyspace, name)
	}
	return fakeDefinition(name), nil
}

// fakeDefinition is the definition of the fake's keyspace name, as UpdateBatch runs its
// transactions: "default" per partition with element records on their collection's
// instance, as a new cluster's; "upgraded" per partition with each element record on
// its own hash tag's, as a cluster's created before that; "other" per key.
func fakeDefinition(name string) schema.Keyspace {
	ks := schema.Keyspace{Name: name, Replication: "dc1=2,dc2=1", Partitioner: fakePartitioner(name), Transactions: schema.TransactionsKey}
	switch name {
	case "default":
		ks.Transactions, ks.CollectionInstances = schema.TransactionsPartition, true
	case "upgraded":
		ks.Transactions = schema.TransactionsPartition
	}
	return ks
}

func (f *fakeBackend) Info() Info {
	return Info{
		NodeID: "n1", DC: "dc1", HintsPending: 3, InterDCBytes: 12345, Durable: true,
		Nodes: []NodeState{
			{ID: "n1", DC: "dc1", Addr: "127.0.0.1:1", Alive: true},
			{ID: "n2", DC: "dc2", Addr: "127.0.0.1:2", Alive: false},
		},
		Keyspaces: []schema.Keyspace{{Name: "default", Replication: "dc1=2,dc2=1", Partitioner: "hash"}},
	}
}

// takeOps returns the operations recorded since the last call.
func (f *fakeBackend) takeOps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops := f.ops
	f.ops = nil
	return ops
}

// startServer serves cfg (with a fake backend unless cfg has one) on a loopback port.
func startServer(t *testing.T, cfg Config) (*Server, *fakeBackend, string) {
	t.Helper()
	fake := newFakeBackend()
	if cfg.Backend == nil {
		cfg.Backend = fake
	}
	s := NewServer(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return s, fake, l.Addr().String()
}

// client is a raw RESP connection for tests.
type client struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// encode writes a command as a RESP array of bulk strings.
func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func (c *client) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, raw); err != nil {
		c.t.Fatal(err)
	}
}

// expect reads exactly len(want) bytes and compares them with want.
func (c *client) expect(want string) {
	c.t.Helper()
	got := make([]byte, len(want))
	n, err := io.ReadFull(c.br, got)
	if err != nil {
		c.t.Fatalf("reading %q: got %q, %v", want, got[:n], err)
	}
	if string(got) != want {
		c.t.Fatalf("reply %q, want %q", got, want)
	}
}

// do sends one command and checks its raw reply.
func (c *client) do(want string, args ...string) {
	c.t.Helper()
	c.send(encode(args...))
	c.expect(want)
}

// line reads one reply line, for replies whose length the test does not know.
func (c *client) line() string {
	c.t.Helper()
	s, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read line: %q, %v", s, err)
	}
	return s
}

// expectClosed checks that the server closed the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	if b, err := c.br.ReadByte(); err == nil {
		c.t.Fatalf("connection still open: read %q", b)
	}
}

func TestServerCloseEndsConnectionsAndServe(t *testing.T) {
	fake := newFakeBackend()
	s := NewServer(Config{Backend: fake})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	c := dial(t, l.Addr().String())
	c.do("+PONG\r\n", "PING")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v, want ErrServerClosed", err)
	}
	c.expectClosed()
	if err := s.Serve(l); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Close returned %v", err)
	}
}

func TestNewServerDefaults(t *testing.T) {
	s := NewServer(Config{Backend: newFakeBackend(), Limits: coord.Limits{KeyBytesMax: 10, ValueBytesMax: 100}})
	if s.limits.BulkBytesMax != 100 {
		t.Errorf("BulkBytesMax = %d, want the value limit 100", s.limits.BulkBytesMax)
	}
	if s.cfg.DefaultLevel != consistency.One || s.cfg.DefaultKeyspace != "default" {
		t.Errorf("defaults: level %v keyspace %q, want ONE and default", s.cfg.DefaultLevel, s.cfg.DefaultKeyspace)
	}
	if s.cfg.Limits.ScanLimitMax != coord.DefaultLimits().ScanLimitMax {
		t.Errorf("ScanLimitMax = %d", s.cfg.Limits.ScanLimitMax)
	}
}

// reply reads one reply of any type: string for simple and bulk strings, int64, nil,
// replyError, []any for arrays and maps (flattened).
func (c *client) reply() any {
	c.t.Helper()
	line := strings.TrimSuffix(c.line(), "\r\n")
	body := line[1:]
	switch line[0] {
	case '+':
		return body
	case '-':
		return replyError(body)
	case ':':
		var n int64
		fmt.Sscan(body, &n)
		return n
	case '_':
		return nil
	case '$':
		var n int
		fmt.Sscan(body, &n)
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, buf); err != nil {
			c.t.Fatal(err)
		}
		return string(buf[:n])
	case '*', '%':
		var n int
		fmt.Sscan(body, &n)
		if line[0] == '%' {
			n *= 2
		}
		items := make([]any, n)
		for i := range items {
			items[i] = c.reply()
		}
		return items
	}
	c.t.Fatalf("unexpected reply line %q", line)
	return nil
}

// replyError is an error reply's text.
type replyError string

// call sends a command and returns its reply.
func (c *client) call(args ...string) any {
	c.t.Helper()
	c.send(encode(args...))
	return c.reply()
}

// flakyListener fails its first accepts, as a listener out of file descriptors does.
type flakyListener struct {
	net.Listener
	failures atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, errors.New("accept: too many open files")
	}
	return l.Listener.Accept()
}

func TestServeOutlivesFailedAccepts(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &flakyListener{Listener: inner}
	l.failures.Store(3)
	s := NewServer(Config{Backend: newFakeBackend()})
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	dial(t, inner.Addr().String()).do("+PONG\r\n", "PING")
	s.Close()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
}
