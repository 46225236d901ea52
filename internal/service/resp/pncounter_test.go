package resp

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// ReadCounter reads a counter as the coordinator does, except that the fake keeps no
// dead header: a key that is not live has no header (every element of an earlier life).
func (f *fakeBackend) ReadCounter(_ context.Context, keyspace string, key []byte, cl consistency.Level) (coord.CounterRead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	elems, err := f.collection(keyspace, key)
	if err != nil {
		return coord.CounterRead{}, err
	}
	var out coord.CounterRead
	if out.Header, out.Found, err = f.get(keyspace, key, cl); err != nil {
		return coord.CounterRead{}, err
	}
	out.Live = out.Found
	reset := resetOf(elems, key)
	for _, k := range slices.Sorted(maps.Keys(elems)) {
		if strings.HasPrefix(k, string(element.Prefix(key))) && k != string(element.Key(key, element.Reset, nil)) && liveElement(elems[k], reset) {
			out.Elements = append(out.Elements, elems[k])
		}
	}
	return out, nil
}

// WriteCounter writes a counter's records. While failCounterWrites is above zero a write
// is applied and then answered as failed, as a write that reached some replicas and
// not enough of them.
func (f *fakeBackend) WriteCounter(_ context.Context, keyspace string, key []byte, w coord.CounterWrite, cl consistency.Level) (hlc.Timestamp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	elems, err := f.collection(keyspace, key)
	if err != nil {
		return 0, err
	}
	if _, err := f.record("putcounter", keyspace, cl); err != nil {
		return 0, err
	}
	t := f.tick()
	for _, e := range w.Elements {
		applyElement(elems, lww.Record{Key: e.Key, Value: bytes.Clone(e.Value), Timestamp: t})
	}
	for _, e := range w.Stamped {
		applyElement(elems, e)
	}
	if w.Header != nil {
		f.store(keyspace, f.data[keyspace], string(key), *w.Header)
	}
	if f.failCounterWrites > 0 {
		f.failCounterWrites--
		return t, errBroken
	}
	return t, nil
}

func TestPNCounterCommands(t *testing.T) {
	const counterOp = "-" + errCounterOp + "\r\n"
	tests := []struct {
		name  string
		steps []step
	}{
		{"the mode", []step{
			{cmd("KURA.COUNTERS"), "+EXACT\r\n"},
			{cmd("KURA.COUNTERS", "pn"), "+OK\r\n"},
			{cmd("KURA.COUNTERS"), "+PN\r\n"},
			{cmd("KURA.COUNTERS", "fast"), "-ERR KURA.COUNTERS takes EXACT (INCR is a lightweight transaction) or PN (a conflict-free counter)\r\n"},
			{cmd("KURA.COUNTERS", "pn", "exact"), "-ERR wrong number of arguments for 'kura.counters' command\r\n"},
		}},
		{"increments answer integers, GET a bulk string", []step{
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
			{cmd("INCRBY", "c", "10"), ":11\r\n"},
			{cmd("DECR", "c"), ":10\r\n"},
			{cmd("DECRBY", "c", "13"), ":-3\r\n"},
			{cmd("INCRBY", "c", "0"), ":-3\r\n"},
			{cmd("GET", "c"), "$2\r\n-3\r\n"},
			{cmd("MGET", "c", "none"), "*2\r\n$2\r\n-3\r\n$-1\r\n"},
			{cmd("TYPE", "c"), "+string\r\n"},
			{cmd("OBJECT", "ENCODING", "c"), "$3\r\nint\r\n"},
			{cmd("EXISTS", "c"), ":1\r\n"},
		}},
		{"the other string commands are refused, saying why", []step{
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
			{cmd("INCRBYFLOAT", "c", "1.5"), counterOp},
			{cmd("APPEND", "c", "x"), counterOp},
			{cmd("STRLEN", "c"), counterOp},
			{cmd("GETSET", "c", "x"), counterOp},
			{cmd("HGET", "c", "f"), wrongType},
			{cmd("GET", "c"), "$1\r\n1\r\n"},
		}},
		{"overflow", []step{
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCRBY", "c", "9223372036854775807"), ":9223372036854775807\r\n"},
			{cmd("INCR", "c"), "-" + errOverflow + "\r\n"},
			{cmd("DECRBY", "c", "9223372036854775807"), ":0\r\n"},
			{cmd("DECRBY", "c", "-9223372036854775808"), "-ERR decrement would overflow\r\n"},
		}},
		{"the key's type decides, not the mode", []step{
			{cmd("SET", "s", "5"), "+OK\r\n"},
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCR", "s"), ":6\r\n"}, // a string stays an exact counter
			{cmd("GET", "s"), "$1\r\n6\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
			{cmd("KURA.COUNTERS", "EXACT"), "+OK\r\n"},
			{cmd("INCR", "c"), ":2\r\n"}, // a PN counter stays one
			{cmd("HSET", "h", "f", "v"), ":1\r\n"},
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCR", "h"), wrongType},
		}},
		{"DEL removes the counter, and the next INCR starts a new one", []step{
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCRBY", "c", "5"), ":5\r\n"},
			{cmd("DEL", "c"), ":1\r\n"},
			{cmd("GET", "c"), "$-1\r\n"},
			{cmd("TYPE", "c"), "+none\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
			{cmd("GET", "c"), "$1\r\n1\r\n"},
		}},
		{"SET replaces a counter, and a counter made again starts at zero", []step{
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCRBY", "c", "5"), ":5\r\n"},
			{cmd("SET", "c", "x"), "+OK\r\n"},
			{cmd("GET", "c"), "$1\r\nx\r\n"},
			{cmd("DEL", "c"), ":1\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
		}},
		{"EXPIRE applies to the counter, and an increment keeps the deadline", []step{
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
			{cmd("EXPIRE", "c", "100"), ":1\r\n"},
			{cmd("INCR", "c"), ":2\r\n"},
			{cmd("TTL", "c"), ":100\r\n"},
			{cmd("PERSIST", "c"), ":1\r\n"},
			{cmd("TTL", "c"), ":-1\r\n"},
			{cmd("GET", "c"), "$1\r\n2\r\n"},
		}},
		{"an unavailable counter", []step{
			{cmd("KURA.COUNTERS", "PN"), "+OK\r\n"},
			{cmd("INCR", "broken"), "-" + errorReply(errBroken) + "\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{NodeID: "n1"})
			converse(t, addr, tt.steps)
		})
	}
}

// TestPNCountersByDefault: Config.PNCounters sets every new connection's mode.
func TestPNCountersByDefault(t *testing.T) {
	_, fake, addr := startServer(t, Config{NodeID: "n1", PNCounters: true})
	converse(t, addr, []step{{cmd("KURA.COUNTERS"), "+PN\r\n"}, {cmd("INCR", "c"), ":1\r\n"}})
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.types["default"]["c"] != lww.Counter {
		t.Fatalf("INCR made key c of type %v, want a PN counter", fake.types["default"]["c"])
	}
}

// TestPNCounterFailedWrite: an INCR whose write failed after it may have reached a
// replica is answered an error, and its increment counts once, carried by the next
// write, never twice and never taken back: a DEL between that observed the failed
// version removes exactly what it saw, and no acknowledged increment after it.
func TestPNCounterFailedWrite(t *testing.T) {
	_, fake, addr := startServer(t, Config{NodeID: "n1", PNCounters: true})
	c := dial(t, addr)
	c.do(":1\r\n", "INCR", "c")
	fake.mu.Lock()
	fake.failCounterWrites = 1
	fake.mu.Unlock()
	c.do("-"+errorReply(errBroken)+"\r\n", "INCR", "c")
	c.do(":3\r\n", "INCR", "c") // the failed increment counts once
	c.do("$1\r\n3\r\n", "GET", "c")

	fake.mu.Lock()
	fake.failCounterWrites = 1
	fake.mu.Unlock()
	c.do("-"+errorReply(errBroken)+"\r\n", "INCRBY", "c", "10") // reaches the store: 13
	c.do(":1\r\n", "DEL", "c")                                  // observes 13, removes it
	c.do(":1\r\n", "INCR", "c")                                 // a new counter: 1, not 1-10
	c.do("$1\r\n1\r\n", "GET", "c")
}

// TestPNCounterConcurrentIncrements: increments of one key from many connections at once
// share batches (one read and one write each), and each is answered a distinct value:
// the counter after its own step, in the order the batch applied them.
func TestPNCounterConcurrentIncrements(t *testing.T) {
	_, _, addr := startServer(t, Config{NodeID: "n1", PNCounters: true})
	const clients, each = 16, 50
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: clients, Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	var (
		mu      sync.Mutex
		answers = map[int64]int{}
		wg      sync.WaitGroup
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, err := rdb.Incr(ctx, "c").Result()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				answers[v]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for v := int64(1); v <= clients*each; v++ {
		if answers[v] != 1 {
			t.Fatalf("value %d answered %d times, want once (answers %v)", v, answers[v], answers)
		}
	}
	if got, err := rdb.Get(ctx, "c").Int64(); err != nil || got != clients*each {
		t.Fatalf("GET = %d, %v; want %d", got, err, clients*each)
	}
}

// TestPNCounterPanicFreesTheKey: a batch whose read panics (a bug) costs its leader's
// connection only, and hands the key on: the next increment of it is answered, not
// stalled behind a leader that is gone.
func TestPNCounterPanicFreesTheKey(t *testing.T) {
	_, _, addr := startServer(t, Config{NodeID: "n1", PNCounters: true})
	c := dial(t, addr)
	c.send(encode("INCR", "panic"))
	c.expectClosed()
	c = dial(t, addr)
	c.send(encode("INCR", "panic"))
	c.expectClosed()
	dial(t, addr).do(":1\r\n", "INCR", "c")
}
