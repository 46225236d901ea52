package resp

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
)

func TestPipelinedRepliesComeInOrder(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	var batch, want strings.Builder
	for i := range 200 {
		key, value := fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%d", i)
		batch.WriteString(encode("SET", key, value))
		batch.WriteString(encode("GET", key))
		fmt.Fprintf(&want, "+OK\r\n$%d\r\n%s\r\n", len(value), value)
	}
	c.send(batch.String())
	c.expect(want.String())
}

func TestMalformedInputClosesOnlyThatConnection(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		errPart string
	}{
		{"bad array length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"bad bulk length", "*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length"},
		{"huge declared length", "*2\r\n$3\r\nSET\r\n$999999999999\r\n", "-ERR Protocol error: bulk length 999999999999 exceeds the limit"},
		{"bulk longer than declared", "*1\r\n$1\r\nPING\r\n", "-ERR Protocol error: bulk string not terminated by CRLF"},
	}
	_, _, addr := startServer(t, Config{Limits: coord.Limits{KeyBytesMax: 1 << 10, ValueBytesMax: 1 << 20}})
	other := dial(t, addr)
	other.do("+OK\r\n", "SET", "survivor", "yes")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := dial(t, addr)
			// The header alone must be refused: the server may not wait for a body it
			// would refuse anyway.
			bad.send(tt.input)
			if line := bad.line(); !strings.HasPrefix(line, tt.errPart) {
				t.Fatalf("reply %q, want it to start with %q", line, tt.errPart)
			}
			bad.expectClosed()
			other.do("$3\r\nyes\r\n", "GET", "survivor")
		})
	}
}

func TestTruncatedFrameLeavesServerServing(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	for _, partial := range []string{"*3\r\n$3\r\nSET\r\n$1\r\nk", "*2\r\n$3\r\nGET", "*1"} {
		bad := dial(t, addr)
		bad.send(partial)
		bad.nc.Close()
	}
	dial(t, addr).do("+PONG\r\n", "PING")
}

func TestQuitRepliesThenCloses(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send(encode("QUIT") + encode("PING"))
	c.expect("+OK\r\n")
	c.expectClosed()
}

func TestObserveSeesEveryOperationAtTheConnectionLevel(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	observe := func(op string, cl consistency.Level, elapsed time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s %v %v", op, cl, err != nil))
	}
	_, _, addr := startServer(t, Config{Observe: observe, DefaultLevel: consistency.Quorum})
	c := dial(t, addr)
	c.do("+OK\r\n", "SET", "k", "v")
	c.do("$1\r\nv\r\n", "GET", "k")
	c.do("+OK\r\n", "KURA.CONSISTENCY", "all")
	c.do(":1\r\n", "DEL", "k")
	c.send(encode("GET", "broken"))
	if line := c.line(); !strings.HasPrefix(line, "-UNAVAILABLE unavailable: ") {
		t.Fatalf("GET of a key without live replicas: %q, want an UNAVAILABLE error", line)
	}
	want := []string{"put QUORUM false", "get QUORUM false", "get ALL false", "delete ALL false", "get ALL true"}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("observed %q, want %q", seen, want)
	}
}
