package resp

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
)

// Pipelined GETs reach the backend in one GetAll, and their replies keep their order.
func TestPipelinedReadsReachTheBackendTogether(t *testing.T) {
	const reads = 20
	_, fake, addr := startServer(t, Config{})
	for i := range reads {
		fake.data["default"][fmt.Sprint(i)] = []byte(fmt.Sprintf("v%d", i))
	}
	c := dial(t, addr)
	var batch, want strings.Builder
	for i := range reads {
		batch.WriteString(encode("get", fmt.Sprint(i)))
		v := fmt.Sprintf("v%d", i)
		fmt.Fprintf(&want, "$%d\r\n%s\r\n", len(v), v)
	}
	c.send(batch.String())
	c.expect(want.String())
	fake.mu.Lock()
	defer fake.mu.Unlock()
	// One small write of the client's arrives in one read on loopback.
	if len(fake.getAlls) != 1 || len(fake.getAlls[0]) != reads {
		t.Fatalf("GetAll calls %q; want one of %d keys", fake.getAlls, reads)
	}
}

// A GET of a pipeline that the backend's GetAll did not read, its answer full of the
// values before it, is read by itself: every GET is answered, in order, and metered once.
// An MGET whose answer fills is refused, with what to do, and metered as one refusal.
func TestPipelinedReadsOverTheAnswerLimitAreReadAlone(t *testing.T) {
	const reads, readTogether = 12, 5
	var mu sync.Mutex
	observed := map[string]int{}
	observe := func(op string, _ consistency.Level, _ time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		observed[fmt.Sprintf("%s %v", op, coord.Classify(err))]++
	}
	_, fake, addr := startServer(t, Config{Observe: observe})
	fake.answerFullAfter = readTogether
	var batch, want strings.Builder
	for i := range reads {
		fake.data["default"][fmt.Sprint(i)] = []byte(fmt.Sprintf("v%d", i))
		batch.WriteString(encode("get", fmt.Sprint(i)))
		v := fmt.Sprintf("v%d", i)
		fmt.Fprintf(&want, "$%d\r\n%s\r\n", len(v), v)
	}
	c := dial(t, addr)
	c.send(batch.String())
	c.expect(want.String())
	fake.mu.Lock()
	keysRead := 0
	for _, op := range fake.ops {
		if strings.HasPrefix(op, "get ") {
			keysRead++
		}
	}
	fake.mu.Unlock()
	if keysRead != reads {
		t.Errorf("%d reads of a key, want %d: %d in the GetAll and %d alone", keysRead, reads, readTogether, reads-readTogether)
	}
	mu.Lock()
	if want := map[string]int{"get ok": reads}; !maps.Equal(observed, want) {
		t.Errorf("the pipeline's GETs metered %v, want %v", observed, want)
	}
	clear(observed)
	mu.Unlock()

	args := []string{"mget"}
	for i := range reads {
		args = append(args, fmt.Sprint(i))
	}
	c.send(encode(args...))
	if reply := c.line(); !strings.HasPrefix(reply, "-ERR answer full") {
		t.Errorf("MGET over the answer limit: %q, want ERR answer full", reply)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]int{"get ok": readTogether, "get answer_full": 1}; !maps.Equal(observed, want) {
		t.Errorf("the MGET metered %v, want %v", observed, want)
	}
}

func TestPipelinedWritesKeepTheirOrder(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send(encode("GET", "a") + encode("GET", "b") + encode("SET", "a", "1") + encode("GET", "a") +
		encode("SET", "a", "2") + encode("GET", "a") + encode("GET", "a") + encode("KURA.CONSISTENCY") + encode("GET", "a"))
	c.expect("$-1\r\n$-1\r\n+OK\r\n$1\r\n1\r\n+OK\r\n$1\r\n2\r\n$1\r\n2\r\n+ONE\r\n$1\r\n2\r\n")
}

// Pipelined plain SETs reach the backend in one PutAll, in order, each answered in turn
// (an error too); a SET with options, or any other command, runs on its own and ends
// the batch.
func TestPipelinedSetsReachTheBackendTogether(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send(encode("SET", "a", "1") + encode("set", "b", "2") + encode("SET", "broken", "x") + encode("SET", "a", "3") +
		encode("SET", "c", "4", "NX") + encode("SET", "d", "5") + encode("SET", "e", "6") + encode("GET", "a") + encode("GET", "e"))
	c.expect("+OK\r\n+OK\r\n-" + errorReply(errBroken) + "\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n$1\r\n3\r\n$1\r\n6\r\n")
	fake.mu.Lock()
	defer fake.mu.Unlock()
	var got []string
	for _, puts := range fake.putAlls {
		var keys []string
		for _, p := range puts {
			keys = append(keys, string(p.Key)+"="+string(p.Value))
		}
		got = append(got, strings.Join(keys, " "))
	}
	// One small write of the client's arrives in one read on loopback, as
	// TestPipelinedReadsReachTheBackendTogether relies on too.
	if want := []string{"a=1 b=2 broken=x a=3", "d=5 e=6"}; !slices.Equal(got, want) {
		t.Fatalf("PutAll calls %q; want %q", got, want)
	}
}

// A batch of writes stops gathering once its values pass batchBytesMax.
func TestPipelinedSetBatchesAreBoundedInBytes(t *testing.T) {
	_, fake, addr := startServer(t, Config{Limits: coord.Limits{KeyBytesMax: 16, ValueBytesMax: batchBytesMax}})
	c := dial(t, addr)
	value := strings.Repeat("v", batchBytesMax/4+1)
	var batch, want strings.Builder
	for i := range 12 {
		batch.WriteString(encode("SET", fmt.Sprint(i), value))
		want.WriteString("+OK\r\n")
	}
	c.send(batch.String())
	c.expect(want.String())
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for _, puts := range fake.putAlls {
		if len(puts) > 4 {
			t.Errorf("a batch of %d values of %d bytes", len(puts), len(value))
		}
	}
	if len(fake.putAlls) == 0 {
		t.Fatal("no SET was batched")
	}
}

func TestReadsBeforeAProtocolErrorAreAnswered(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send(encode("GET", "a") + encode("GET", "b") + "*x\r\n")
	c.expect("$-1\r\n$-1\r\n-ERR Protocol error: invalid multibulk length\r\n")
	c.expectClosed()
}

// TestOversizedCommandInAPipelineIsAnsweredInTurn: a command the reader refuses for its
// size, pipelined behind reads, is answered after them and before what follows it.
func TestOversizedCommandInAPipelineIsAnsweredInTurn(t *testing.T) {
	_, _, addr := startServer(t, Config{Limits: coord.Limits{KeyBytesMax: 16, ValueBytesMax: 32}})
	c := dial(t, addr)
	c.send(encode("GET", "a") + encode("GET", "b") + encode("SET", "k", strings.Repeat("v", 33)) + encode("GET", "c") + encode("SET", "k", "fits"))
	c.expect("$-1\r\n$-1\r\n-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n$-1\r\n+OK\r\n")
	c.do("$4\r\nfits\r\n", "GET", "k")
}

func TestLongPipelinesOfReadsSpanBatches(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	c := dial(t, addr)
	var batch, want strings.Builder
	for range 3*batchMax + 1 {
		batch.WriteString(encode("GET", "k"))
		want.WriteString("$-1\r\n")
	}
	c.send(batch.String())
	c.expect(want.String())
	if ops := fake.takeOps(); len(ops) != 3*batchMax+1 {
		t.Fatalf("%d reads reached the backend", len(ops))
	}
}

// A pipeline that mixes GETs and plain SETs reaches the backend in batches: the GETs of
// keys not SET before them in the batch first, then the SETs, then the GETs of keys SET
// before them. Each key sees the commands in the order sent, and every reply is in turn.
func TestMixedPipelinesKeepEachKeysOrder(t *testing.T) {
	ok := "+OK\r\n"
	null := "$-1\r\n"
	bulk := func(v string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(v), v) }
	for _, tc := range []struct {
		name      string
		commands  [][]string
		answerMax int // the fake's answerFullAfter
		want      string
		calls     []string
	}{{
		name:     "interleaved SET and GET of each key",
		commands: [][]string{{"SET", "k0", "v0"}, {"GET", "k0"}, {"set", "k1", "v1"}, {"get", "k1"}, {"SET", "k2", "v2"}, {"GET", "k2"}},
		want:     ok + bulk("v0") + ok + bulk("v1") + ok + bulk("v2"),
		calls:    []string{"putall k0=v0 k1=v1 k2=v2", "getall k0 k1 k2"},
	}, {
		name:     "a GET before a SET of its key does not see it, one after does",
		commands: [][]string{{"GET", "a"}, {"SET", "a", "1"}, {"GET", "a"}, {"GET", "b"}},
		want:     null + ok + bulk("1") + null,
		calls:    []string{"getall a b", "putall a=1", "get a"},
	}, {
		name:     "a SET of a key a GET of the batch read after a SET starts the next batch",
		commands: [][]string{{"SET", "a", "1"}, {"GET", "a"}, {"SET", "a", "2"}, {"GET", "a"}, {"SET", "b", "3"}},
		want:     ok + bulk("1") + ok + bulk("2") + ok,
		calls:    []string{"putall a=1", "get a", "putall a=2 b=3", "get a"},
	}, {
		name:     "SETs of one key take effect in order",
		commands: [][]string{{"SET", "a", "1"}, {"SET", "a", "2"}, {"GET", "a"}},
		want:     ok + ok + bulk("2"),
		calls:    []string{"putall a=1 a=2", "get a"},
	}, {
		name:     "errors are answered in their turn",
		commands: [][]string{{"SET", "a", "1"}, {"SET", "broken", "x"}, {"GET", "broken"}, {"GET", "a"}, {"SET", "b", "2"}},
		want:     ok + "-" + errorReply(errBroken) + "\r\n" + "-" + errorReply(errBroken) + "\r\n" + bulk("1") + ok,
		calls:    []string{"putall a=1 broken=x b=2", "getall broken a"},
	}, {
		name:     "another command runs alone, in its turn",
		commands: [][]string{{"SET", "a", "1"}, {"GET", "a"}, {"DEL", "a"}, {"GET", "a"}, {"SET", "a", "2"}},
		want:     ok + bulk("1") + ":1\r\n" + null + ok,
		calls:    []string{"putall a=1", "get a", "get a", "putall a=2"},
	}, {
		name:      "a GET the batch's read left out is read before the batch's writes",
		commands:  [][]string{{"GET", "a"}, {"GET", "b"}, {"GET", "c"}, {"SET", "c", "1"}, {"GET", "c"}},
		answerMax: 1,
		want:      null + null + null + ok + bulk("1"),
		calls:     []string{"getall a b c", "get b", "get c", "putall c=1", "get c"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, fake, addr := startServer(t, Config{})
			fake.answerFullAfter = tc.answerMax
			c := dial(t, addr)
			var pipeline strings.Builder
			for _, args := range tc.commands {
				pipeline.WriteString(encode(args...))
			}
			// One small write of the client's arrives in one read on loopback, as
			// TestPipelinedReadsReachTheBackendTogether relies on too.
			c.send(pipeline.String())
			c.expect(tc.want)
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if !slices.Equal(fake.calls, tc.calls) {
				t.Errorf("backend calls %q, want %q", fake.calls, tc.calls)
			}
		})
	}
}

// The inline commands of a pipeline (as Redis's PIPELINING stresser sends them) are
// batched as the multibulk ones are, and a mixed batch cut short by a protocol error
// answers the commands before it, then the error.
func TestMixedPipelinesOfInlineCommands(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send("SET key:0 00000000\r\nGET key:0\r\nSET key:1 00001000\r\nGET key:1\r\n")
	c.expect("+OK\r\n$8\r\n00000000\r\n+OK\r\n$8\r\n00001000\r\n")
	c.send(encode("SET", "a", "1") + encode("GET", "a") + "*x\r\n")
	c.expect("+OK\r\n$1\r\n1\r\n-ERR Protocol error: invalid multibulk length\r\n")
	c.expectClosed()
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if want := []string{"putall key:0=00000000 key:1=00001000", "getall key:0 key:1", "putall a=1", "get a"}; !slices.Equal(fake.calls, want) {
		t.Errorf("backend calls %q, want %q", fake.calls, want)
	}
}
