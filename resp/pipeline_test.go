package resp

import (
	"context"
	"errors"
	"fmt"
	"github.com/kuradb/kura/lww"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
)

// gatedBackend holds every Get until want Gets are in flight together, so that only
// concurrent reads get through.
type gatedBackend struct {
	*fakeBackend
	want    int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func (g *gatedBackend) Get(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (lww.Record, bool, error) {
	g.mu.Lock()
	if g.waiting++; g.waiting == g.want {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
		return g.fakeBackend.Get(ctx, keyspace, key, cl)
	case <-time.After(2 * time.Second):
		return lww.Record{}, false, errors.New("reads were not concurrent")
	}
}

func TestPipelinedReadsRunConcurrently(t *testing.T) {
	const reads = 20
	gated := &gatedBackend{fakeBackend: newFakeBackend(), want: reads, open: make(chan struct{})}
	for i := range reads {
		gated.data["default"][fmt.Sprint(i)] = []byte(fmt.Sprintf("v%d", i))
	}
	_, _, addr := startServer(t, Config{Backend: gated})
	c := dial(t, addr)
	var batch, want strings.Builder
	for i := range reads {
		batch.WriteString(encode("get", fmt.Sprint(i)))
		v := fmt.Sprintf("v%d", i)
		fmt.Fprintf(&want, "$%d\r\n%s\r\n", len(v), v)
	}
	c.send(batch.String())
	c.expect(want.String())
}

func TestPipelinedWritesKeepTheirOrder(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send(encode("GET", "a") + encode("GET", "b") + encode("SET", "a", "1") + encode("GET", "a") +
		encode("SET", "a", "2") + encode("GET", "a") + encode("GET", "a") + encode("KURA.CONSISTENCY") + encode("GET", "a"))
	c.expect("$-1\r\n$-1\r\n+OK\r\n$1\r\n1\r\n+OK\r\n$1\r\n2\r\n$1\r\n2\r\n+ONE\r\n$1\r\n2\r\n")
}

func TestReadsBeforeAProtocolErrorAreAnswered(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send(encode("GET", "a") + encode("GET", "b") + "*x\r\n")
	c.expect("$-1\r\n$-1\r\n-ERR Protocol error: invalid multibulk length \"x\"\r\n")
	c.expectClosed()
}

func TestLongPipelinesOfReadsSpanBatches(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	c := dial(t, addr)
	var batch, want strings.Builder
	for range 3*readBatchMax + 1 {
		batch.WriteString(encode("GET", "k"))
		want.WriteString("$-1\r\n")
	}
	c.send(batch.String())
	c.expect(want.String())
	if ops := fake.takeOps(); len(ops) != 3*readBatchMax+1 {
		t.Fatalf("%d reads reached the backend", len(ops))
	}
}
