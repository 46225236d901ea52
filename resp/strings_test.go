package resp

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
)

func TestStringCommands(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"get and set", []step{
			{cmd("GET", "k"), "$-1\r\n"},
			{cmd("SET", "k", "v1"), "+OK\r\n"},
			{cmd("GET", "k"), "$2\r\nv1\r\n"},
			{cmd("SET", "k", ""), "+OK\r\n"},
			{cmd("GET", "k"), "$0\r\n\r\n"},
		}},
		{"set options", []step{
			{cmd("SET", "k", "v1", "XX"), "$-1\r\n"},
			{cmd("GET", "k"), "$-1\r\n"},
			{cmd("SET", "k", "v1", "nx"), "+OK\r\n"},
			{cmd("SET", "k", "v2", "NX"), "$-1\r\n"},
			{cmd("SET", "k", "v2", "NX", "GET"), "$2\r\nv1\r\n"},
			{cmd("SET", "k", "v3", "XX", "GET"), "$2\r\nv1\r\n"},
			{cmd("SET", "k", "v4", "GET", "KEEPTTL"), "$2\r\nv3\r\n"},
			{cmd("SET", "new", "v", "GET"), "$-1\r\n"},
			{cmd("GET", "new"), "$1\r\nv\r\n"},
			{cmd("SET", "k", "v", "NX", "XX"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "SOON"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "EX", "10"), "-ERR kura does not support key expiry yet\r\n"},
			{cmd("SET", "k", "v", "px", "10"), "-ERR kura does not support key expiry yet\r\n"},
			{cmd("GET", "k"), "$2\r\nv4\r\n"},
		}},
		{"getdel", []step{
			{cmd("SET", "k", "v"), "+OK\r\n"},
			{cmd("GETDEL", "k"), "$1\r\nv\r\n"},
			{cmd("GETDEL", "k"), "$-1\r\n"},
		}},
		{"del and exists", []step{
			{cmd("MSET", "a", "1", "b", "2"), "+OK\r\n"},
			{cmd("EXISTS", "a", "a", "b", "c"), ":3\r\n"},
			{cmd("DEL", "a", "a", "c"), ":1\r\n"},
			{cmd("EXISTS", "a", "b"), ":1\r\n"},
		}},
		{"mset and mget", []step{
			{cmd("MSET", "a", "1", "b", "2", "a", "3"), "+OK\r\n"},
			{cmd("MGET", "a", "b", "c"), "*3\r\n$1\r\n3\r\n$1\r\n2\r\n$-1\r\n"},
		}},
		{"expiry", []step{
			{cmd("SET", "k", "v"), "+OK\r\n"},
			{cmd("TTL", "k"), ":-1\r\n"},
			{cmd("PTTL", "missing"), ":-2\r\n"},
			{cmd("EXPIRE", "k", "10"), "-ERR kura does not support key expiry yet\r\n"},
		}},
		{"errors", []step{
			{cmd("SET", "broken", "v"), "-UNAVAILABLE unavailable: QUORUM needs 0 replicas, 1 alive map[dc1:1]\r\n"},
			{cmd("MGET", "a", "broken"), "-UNAVAILABLE unavailable: QUORUM needs 0 replicas, 1 alive map[dc1:1]\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

func TestNoKeyspaceErrorSaysWhatToDo(t *testing.T) {
	_, fake, addr := startServer(t, Config{DefaultKeyspace: "missing"})
	converse(t, addr, []step{
		{cmd("GET", "k"), "-ERR no such keyspace \"missing\": create it (kura keyspace create) or choose another with KURA.KEYSPACE\r\n"},
	})
	if ops := fake.takeOps(); !reflect.DeepEqual(ops, []string{"get missing ONE"}) {
		t.Fatalf("backend saw %q", ops)
	}
}

func TestForEach(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	var releaseOnce sync.Once
	done := make(chan error)
	go func() {
		done <- forEach(100, func(i int) error {
			now := running.Add(1)
			for {
				old := peak.Load()
				if now <= old || peak.CompareAndSwap(old, now) {
					break
				}
			}
			if now == fanoutMax {
				releaseOnce.Do(func() { close(release) })
			}
			<-release
			running.Add(-1)
			if i == 70 || i == 90 {
				return errors.New(string(rune('a' + i%26)))
			}
			return nil
		})
	}()
	err := <-done
	if peak.Load() != fanoutMax {
		t.Errorf("peak concurrency %d, want %d", peak.Load(), fanoutMax)
	}
	if err == nil || err.Error() != string(rune('a'+70%26)) {
		t.Errorf("error %v, want the one of the lowest index", err)
	}
}

func TestDistinct(t *testing.T) {
	in := [][]byte{[]byte("b"), []byte("a"), []byte("b"), []byte("c"), []byte("a")}
	var got []string
	for _, k := range distinct(in) {
		got = append(got, string(k))
	}
	if !reflect.DeepEqual(got, []string{"b", "a", "c"}) {
		t.Fatalf("distinct = %q", got)
	}
	if n := countTrue([]bool{true, false, true}); n != 2 {
		t.Fatalf("countTrue = %d, want 2", n)
	}
}
