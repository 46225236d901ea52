package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/consistency"
)

// redisCLI runs redis-cli against addr with args (and stdin, for -x) and returns its output.
func redisCLI(t *testing.T, addr string, stdin []byte, args ...string) []byte {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redis-cli %q: %v: %s", args, err, out)
	}
	return out
}

func TestRedisCLISetsAndGets(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed (Debian: apt-get install redis-tools); .ci/run installs it")
	}
	n := startFrontEndCluster(t, "simple=1", "dc1")[0]
	addr := n.RESPAddr()
	if out := redisCLI(t, addr, nil, "PING"); string(out) != "PONG\n" {
		t.Fatalf("PING: %q", out)
	}

	binary := []byte("\x00\x01\xff\r\nbinary\x00 tail")
	tests := []struct {
		name  string
		key   string
		value []byte
		stdin bool // pass the value on stdin (-x), so that it may hold any byte
	}{
		{"plain", "greeting", []byte("hello, world"), false},
		{"empty value", "empty", []byte{}, false},
		{"key with spaces", "key with spaces", []byte("v1"), false},
		{"key with newlines", "key\nwith\r\nnewlines", []byte("v2"), false},
		{"binary value", "bin", binary, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out []byte
			if tt.stdin {
				out = redisCLI(t, addr, tt.value, "-x", "SET", tt.key)
			} else {
				out = redisCLI(t, addr, nil, "SET", tt.key, string(tt.value))
			}
			if string(out) != "OK\n" {
				t.Fatalf("SET: %q", out)
			}
			// Without a terminal redis-cli prints the raw value and a newline.
			if got := redisCLI(t, addr, nil, "GET", tt.key); !bytes.Equal(got, append(append([]byte{}, tt.value...), '\n')) {
				t.Fatalf("GET printed %q, want %q", got, tt.value)
			}
			rec, found, err := n.Coordinator().Get(context.Background(), "default", []byte(tt.key), consistency.One)
			if err != nil || !found || !bytes.Equal(rec.Value, tt.value) {
				t.Fatalf("the coordinator reads %q (found %v, %v), want %q", rec.Value, found, err, tt.value)
			}
		})
	}
	if out := redisCLI(t, addr, nil, "DBSIZE"); string(out) != fmt.Sprintf("%d\n", len(tests)) {
		t.Fatalf("DBSIZE: %q", out)
	}
	if out := redisCLI(t, addr, nil, "GET", "missing"); string(out) != "\n" {
		t.Fatalf("GET of a missing key printed %q", out)
	}
	if out := redisCLI(t, addr, nil, "INFO", "replication"); !strings.Contains(string(out), "kura_cluster_size:1") {
		t.Fatalf("INFO replication: %s", out)
	}
	// The port reaches the socket under the power gate, as the hang-up watch of KEYS and
	// SCAN must: CLIENT INFO names its descriptor.
	if out := redisCLI(t, addr, nil, "CLIENT", "INFO"); !strings.Contains(string(out), " fd=") || strings.Contains(string(out), " fd=-1 ") {
		t.Fatalf("CLIENT INFO shows no descriptor: %s", out)
	}
}

// TestRedisCLIPrintsWhatRedisPrints runs redis-cli against a node: each output here is
// what redis-cli 7.0 printed for the same command against redis-server 7.0.15 (errors
// included), except where the comment says kura differs.
func TestRedisCLIPrintsWhatRedisPrints(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed (Debian: apt-get install redis-tools); .ci/run installs it")
	}
	addr := startFrontEndCluster(t, "simple=1", "dc1")[0].RESPAddr()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"SET", "greeting", "hello"}, "OK\n"},
		{[]string{"STRLEN", "greeting"}, "5\n"},
		{[]string{"STRLEN", "nokey"}, "0\n"},
		{[]string{"GETRANGE", "greeting", "1", "3"}, "ell\n"},
		{[]string{"GETRANGE", "greeting", "-3", "-1"}, "llo\n"},
		{[]string{"SUBSTR", "greeting", "0", "0"}, "h\n"},
		{[]string{"GETRANGE", "nokey", "0", "-1"}, "\n"},
		{[]string{"TYPE", "greeting"}, "string\n"},
		{[]string{"TYPE", "nokey"}, "none\n"},
		{[]string{"UNLINK", "greeting", "nokey"}, "1\n"},
		{[]string{"EXISTS", "greeting"}, "0\n"},
		{[]string{"SET", "k", "v", "EX", "0"}, "ERR invalid expire time in 'set' command\n\n"},
		{[]string{"SET", "k", "v", "EX", "soon"}, "ERR value is not an integer or out of range\n\n"},
		{[]string{"SET", "k", "v", "NX", "XX"}, "ERR syntax error\n\n"},
		{[]string{"GETRANGE", "k", "a", "1"}, "ERR value is not an integer or out of range\n\n"},
		{[]string{"STRLEN"}, "ERR wrong number of arguments for 'strlen' command\n\n"},
		{[]string{"TIME", "x"}, "ERR wrong number of arguments for 'time' command\n\n"},
		{[]string{"SET", "lock", "owner1", "NX", "EX", "30"}, "OK\n"},
		{[]string{"SET", "lock", "owner2", "NX", "EX", "30"}, "\n"},
		{[]string{"GET", "lock"}, "owner1\n"},
		{[]string{"SETNX", "lock", "owner3"}, "0\n"},
		{[]string{"INCR", "hits"}, "1\n"},
		{[]string{"INCRBY", "hits", "10"}, "11\n"},
		{[]string{"INCR", "lock"}, "ERR value is not an integer or out of range\n\n"},
		{[]string{"INCRBYFLOAT", "price", "1.5"}, "1.5\n"},
		{[]string{"APPEND", "hits", "0"}, "3\n"},
		{[]string{"GETDEL", "hits"}, "110\n"},
		{[]string{"GETDEL", "hits"}, "\n"},
		{[]string{"EXPIRE", "lock", "10", "GT"}, "0\n"},
		{[]string{"EXPIREAT", "lock", "4102444800"}, "1\n"},
		{[]string{"EXPIRETIME", "lock"}, "4102444800\n"},
		{[]string{"PERSIST", "lock"}, "1\n"},
		{[]string{"TTL", "lock"}, "-1\n"},
		{[]string{"RENAME", "lock", "mutex"}, "OK\n"},
		{[]string{"RENAME", "lock", "mutex"}, "ERR no such key\n\n"},
		{[]string{"GETSET", "mutex", "owner4"}, "owner1\n"},
		{[]string{"SETEX", "session", "0", "v"}, "ERR invalid expire time in 'setex' command\n\n"},
		{[]string{"MSETNX", "a", "1", "b", "2"}, "1\n"},
		{[]string{"MSETNX", "b", "3", "c", "4"}, "0\n"},
		{[]string{"DEL", "a", "b", "c"}, "2\n"},
		{[]string{"FLUSHDB"}, "OK\n"},
		{[]string{"EXISTS", "mutex"}, "0\n"},
		{[]string{"CONFIG", "GET", "maxmemory"}, "maxmemory\n0\n"},
		{[]string{"CONFIG", "GET", "maxmemory-policy"}, "maxmemory-policy\nnoeviction\n"},
		{[]string{"CONFIG", "GET", "databases"}, "databases\n1\n"}, // Redis: 16
		{[]string{"CONFIG", "SET", "nosuch", "1"}, "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\n\n"},
		{[]string{"CONFIG", "SET", "timeout", "abc"}, "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer\n\n"},
		{[]string{"CONFIG", "SET", "timeout", "5", "timeout", "6"}, "ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter\n\n"},
		{[]string{"CONFIG", "GET"}, "ERR wrong number of arguments for 'config|get' command\n\n"},
		{[]string{"CONFIG", "FOO"}, "ERR unknown subcommand 'FOO'. Try CONFIG HELP.\n\n"},
		{[]string{"CONFIG", "RESETSTAT"}, "OK\n"},
		{[]string{"CONFIG", "REWRITE"}, "ERR The server is running without a config file\n\n"},
		{[]string{"CLIENT", "NOSUCH"}, "ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\n\n"},
		{[]string{"CLIENT", "LIST", "TYPE", "bogus"}, "ERR Unknown client type 'bogus'\n"},
		{[]string{"CLIENT", "LIST", "ID", "abc"}, "ERR Invalid client ID\n"},
		{[]string{"HELLO", "3", "BOGUS"}, "ERR Syntax error in HELLO option 'BOGUS'\n\n"},
		{[]string{"SELECT", "+0"}, "ERR value is not an integer or out of range\n\n"},
		{[]string{"NOSUCH", "a", "b"}, "ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \n\n"},
	}
	for _, tt := range tests {
		if got := redisCLI(t, addr, nil, tt.args...); string(got) != tt.want {
			t.Errorf("redis-cli %q printed %q, want %q", tt.args, got, tt.want)
		}
	}
	// A connection's name, and its fields in CLIENT LIST, as redis-cli shows them.
	if got := string(redisCLI(t, addr, nil, "CLIENT", "INFO")); !strings.Contains(got, " cmd=client|info ") || !strings.HasPrefix(got, "id=") {
		t.Errorf("redis-cli CLIENT INFO printed %q", got)
	}
	if got := string(redisCLI(t, addr, nil, "INFO", "cpu")); !strings.HasPrefix(got, "# CPU\r\nused_cpu_sys:") {
		t.Errorf("redis-cli INFO cpu printed %q", got)
	}
}

func TestGoRedisPipelinesAndScansAThreeNodeCluster(t *testing.T) {
	t.Parallel()
	nodes := startFrontEndCluster(t, "simple=3", "dc1", "dc1", "dc1")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(&redis.Options{
			Addr: n.RESPAddr(),
			// At ALL, every replica holds a write once it is acknowledged: the walks
			// below through one replica (SCAN at ONE, DBSIZE) then count every key. At
			// QUORUM, the one replica a write has not reached yet on a loaded machine
			// may be the one walked.
			OnConnect: func(ctx context.Context, cn *redis.Conn) error {
				return cn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err()
			},
		})
		defer clients[i].Close()
	}

	const keys, batch = 600, 50
	want := map[string]string{}
	pipe := clients[0].Pipeline()
	for i := 0; i < keys; i += batch {
		var pairs []any
		for j := i; j < i+batch; j++ {
			k, v := fmt.Sprintf("user:%04d", j), fmt.Sprintf("value %d\x00\n", j)
			want[k] = v
			pairs = append(pairs, k, v)
		}
		pipe.MSet(ctx, pairs...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipelined MSET: %v", err)
	}

	// Read back through another node, pipelined as well.
	pipe = clients[1].Pipeline()
	var gets []*redis.SliceCmd
	for i := 0; i < keys; i += batch {
		var names []string
		for j := i; j < i+batch; j++ {
			names = append(names, fmt.Sprintf("user:%04d", j))
		}
		gets = append(gets, pipe.MGet(ctx, append(names, "missing")...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipelined MGET: %v", err)
	}
	for i, cmd := range gets {
		values := cmd.Val()
		for j, v := range values[:batch] {
			k := fmt.Sprintf("user:%04d", i*batch+j)
			if v != want[k] {
				t.Fatalf("MGET %s = %q, want %q", k, v, want[k])
			}
		}
		if values[batch] != nil {
			t.Fatalf("MGET of a missing key = %q", values[batch])
		}
	}

	// SCAN through the third node walks the whole cluster: every key exactly once.
	if err := clients[2].Set(ctx, "other:1", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var cursor uint64
	calls := 0
	for {
		page, next, err := clients[2].Scan(ctx, cursor, "user:*", 64).Result()
		if err != nil {
			t.Fatalf("SCAN: %v", err)
		}
		for _, k := range page {
			seen[k]++
		}
		calls++
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(seen) != keys {
		t.Fatalf("SCAN found %d keys, want %d", len(seen), keys)
	}
	for k, count := range seen {
		if count != 1 || want[k] == "" {
			t.Fatalf("SCAN returned %q %d times", k, count)
		}
	}
	if want := (keys + 1 + 63) / 64; calls != want { // 64 keys a call, of which MATCH keeps the users
		t.Errorf("SCAN took %d calls for %d keys at COUNT 64, want %d", calls, keys+1, want)
	}
	// The iterator helper and RESP2 clients agree.
	resp2 := redis.NewClient(&redis.Options{Addr: nodes[0].RESPAddr(), Protocol: 2})
	defer resp2.Close()
	var all []string
	iter := resp2.Scan(ctx, 0, "", 100).Iterator()
	for iter.Next(ctx) {
		all = append(all, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(all)
	if len(all) != keys+1 || len(slices.Compact(all)) != keys+1 {
		t.Fatalf("SCAN over RESP2 returned %d keys, want %d, each once", len(all), keys+1)
	}
	if size, err := resp2.DBSize(ctx).Result(); err != nil || size != keys+1 {
		t.Fatalf("DBSIZE = %d, %v; want %d", size, err, keys+1)
	}
}

// A pipeline that interleaves SETs and GETs of the same keys, through a node's real
// coordinator and storage, answers every GET with the value the latest SET before it
// wrote: on one node (the writes of a batch committed together) and on three at QUORUM
// (the writes one after the other).
func TestRedisMixedPipelinesReadTheirWrites(t *testing.T) {
	for _, tc := range []struct {
		name, replication, level string
		dcs                      []string
	}{
		{"one node", "simple=1", "ONE", []string{"dc1"}},
		{"three nodes at QUORUM", "simple=3", "QUORUM", []string{"dc1", "dc1", "dc1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := startFrontEndCluster(t, tc.replication, tc.dcs...)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			client := redis.NewClient(&redis.Options{Addr: nodes[0].RESPAddr(),
				OnConnect: func(ctx context.Context, cn *redis.Conn) error {
					return cn.Do(ctx, "KURA.CONSISTENCY", tc.level).Err()
				}})
			defer client.Close()
			const keys, rounds = 40, 3
			pipe := client.Pipeline()
			type read struct {
				cmd  *redis.StringCmd
				want string // "" for a key not written yet
			}
			var reads []read
			latest := map[string]string{}
			for r := range rounds {
				for i := range keys {
					k := fmt.Sprintf("mixed:%d", (i*7+r)%keys)
					reads = append(reads, read{pipe.Get(ctx, k), latest[k]})
					v := fmt.Sprintf("v%d-%d", r, i)
					pipe.Set(ctx, k, v, 0)
					latest[k] = v
					reads = append(reads, read{pipe.Get(ctx, k), v})
				}
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("pipeline: %v", err)
			}
			for i, r := range reads {
				got, err := r.cmd.Result()
				if errors.Is(err, redis.Nil) {
					err, got = nil, ""
				}
				if err != nil || got != r.want {
					t.Fatalf("read %d (%s) = %q, %v; want %q", i, r.cmd.Args()[1], got, err, r.want)
				}
			}
		})
	}
}

func TestMalformedRESPLeavesTheNodeServing(t *testing.T) {
	n := startFrontEndCluster(t, "simple=1", "dc1")[0]
	ctx := context.Background()
	healthy := redis.NewClient(&redis.Options{Addr: n.RESPAddr()})
	defer healthy.Close()
	if err := healthy.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		reply string // the error line's start; "" when the frame is cut short and no reply comes
	}{
		{"bad array length", "*zz\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"bad bulk length", "*2\r\n$3\r\nGET\r\n$-7\r\n", "-ERR Protocol error: invalid bulk length"},
		{"huge declared length", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9999999999\r\n", "-ERR Protocol error: invalid bulk length"},
		{"bulk length with a sign", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$+3\r\nabc\r\n", "-ERR Protocol error: invalid bulk length"},
		{"too many arguments", "*9999999999\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"truncated frame", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", n.RESPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(nc, tt.input)
			if tt.reply == "" {
				nc.(*net.TCPConn).CloseWrite() // the client gives up mid-frame
			}
			r := bufio.NewReader(nc)
			line, _ := r.ReadString('\n')
			if !strings.HasPrefix(line, tt.reply) || (tt.reply == "" && line != "") {
				t.Fatalf("reply %q, want one starting with %q", line, tt.reply)
			}
			if rest, err := r.ReadByte(); err == nil {
				t.Fatalf("the connection stayed open (read %q)", rest)
			}
			if v, err := healthy.Get(ctx, "k").Result(); err != nil || v != "v" {
				t.Fatalf("another client then reads %q, %v", v, err)
			}
		})
	}
}

// TestRedisScanAmongDeletedKeysResumesOnAnyNode keeps ten live keys among thousands of
// deleted ones: SCAN pages hand their cursor from node to node, go-redis's iterator, KEYS,
// DBSIZE and INFO all see exactly the ten.
func TestRedisScanAmongDeletedKeysResumesOnAnyNode(t *testing.T) {
	t.Parallel()
	nodes := startFrontEndCluster(t, "simple=2", "dc1", "dc1", "dc1")
	// The deadline bounds a hang, never a speed: the 6,000 writes at QUORUM below took
	// more than 30 s under the race detector on a machine at load 16.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := quorumClients(t, nodes)
	const deleted, batch = 3000, 500
	for _, write := range []func(redis.Pipeliner, string){
		func(p redis.Pipeliner, k string) { p.Set(ctx, k, "x", 0) },
		func(p redis.Pipeliner, k string) { p.Del(ctx, k) },
	} {
		for start := 0; start < deleted; start += batch {
			execUntilAvailable(ctx, t, nodes, clients[0], func(pipe redis.Pipeliner) {
				for i := start; i < start+batch; i++ {
					write(pipe, fmt.Sprintf("gone:%05d", i))
				}
			})
		}
	}
	want := map[string]bool{}
	execUntilAvailable(ctx, t, nodes, clients[0], func(pipe redis.Pipeliner) {
		for i := range 10 {
			k := fmt.Sprintf("live:%d", i)
			want[k] = true
			pipe.Set(ctx, k, "v", 0)
		}
	})

	scanEachOnce(t, clients, 3, 20, want)
	var iterated []string
	iter := clients[2].Scan(ctx, 0, "live:*", 10).Iterator()
	for iter.Next(ctx) {
		iterated = append(iterated, iter.Val())
	}
	if err := iter.Err(); err != nil || len(iterated) != len(want) {
		t.Errorf("ScanIterator: %q, %v", iterated, err)
	}
	if keys, err := clients[1].Keys(ctx, "*").Result(); err != nil || len(keys) != len(want) {
		t.Errorf("KEYS * = %q, %v", keys, err)
	}
	if size, err := clients[1].DBSize(ctx).Result(); err != nil || size != int64(len(want)) {
		t.Errorf("DBSIZE = %d, %v", size, err)
	}
	if info, err := clients[0].Info(ctx, "keyspace").Result(); err != nil || !strings.Contains(info, "db0:keys=10,expires=0") {
		t.Errorf("INFO keyspace = %q, %v", info, err)
	}
}

// TestRedisScanOverHashTags writes 1,000 keys in ten hash tags to a fresh cluster,
// whose default keyspace has the grouped partitioner, so each tag's keys share a token:
// SCAN pages handed from node to node return each key once, and KEYS and DBSIZE agree.
func TestRedisScanOverHashTags(t *testing.T) {
	t.Parallel()
	nodes := startFrontEndCluster(t, "simple=2", "dc1", "dc1", "dc1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := quorumClients(t, nodes)
	if info, err := clients[0].Info(ctx, "keyspace").Result(); err != nil || !strings.Contains(info, "default:replication=simple=2,partitioner=grouped") {
		t.Fatalf("INFO keyspace = %q, %v; want the default keyspace grouped", info, err)
	}
	const keys, tags = 1000, 10
	want := map[string]bool{}
	pipe := clients[0].Pipeline()
	for i := range keys {
		k := fmt.Sprintf("{user%d}:item%04d", i%tags, i)
		want[k] = true
		pipe.Set(ctx, k, "v", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	scanEachOnce(t, clients, 37, keys, want)
	if tagged, err := clients[1].Keys(ctx, "{user3}:*").Result(); err != nil || len(tagged) != keys/tags {
		t.Errorf("KEYS {user3}:* = %d keys, %v; want %d", len(tagged), err, keys/tags)
	}
	if size, err := clients[2].DBSize(ctx).Result(); err != nil || size != keys {
		t.Errorf("DBSIZE = %d, %v; want %d", size, err, keys)
	}
}

// retryContended runs do again, up to 20 times in all, while it fails with a lightweight
// transaction's contention error: such a transaction wrote nothing
// (coord.ContentionError), so a client retries it as an application would. Six clients
// on one key, under the race detector on a busy machine, lose all their rounds now and
// then; an outcome left unknown is not retried, and fails the test.
func retryContended(do func() error) error {
	var err error
	for range 20 {
		if err = do(); err == nil || !strings.Contains(err.Error(), "under contention") {
			return err
		}
	}
	return err
}

// TestRedisConditionalWritesRaceThroughEveryNode races go-redis clients, one per node of
// a three-node cluster, on Redis's conditional writes: exactly one SET NX wins a lock,
// exactly one GETDEL takes a value, no INCR is lost, and a key's deadline set through
// one node is the one every node reports.
func TestRedisConditionalWritesRaceThroughEveryNode(t *testing.T) {
	t.Parallel()
	nodes := startFrontEndCluster(t, "simple=3", "dc1", "dc1", "dc1")
	ctx := context.Background()
	var clients []*redis.Client
	for i := range 6 {
		// At QUORUM, a plain read meets a quorum of every write acknowledged at QUORUM.
		c := redis.NewClient(&redis.Options{Addr: nodes[i%len(nodes)].RESPAddr(), MaxRetries: -1, ReadTimeout: 20 * time.Second,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "KURA.CONSISTENCY", "QUORUM").Err() }})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	race := func(fn func(i int, c *redis.Client) error) {
		t.Helper()
		errs := make([]error, len(clients))
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = fn(i, c) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	// The counter is read at SERIAL: a transaction's commit follows its answer, so a
	// QUORUM read through another node than the last INCR's may miss it for a round trip
	// (docs/lwt.md).
	serial := redis.NewClient(&redis.Options{Addr: nodes[1].RESPAddr(), MaxRetries: -1, ReadTimeout: 20 * time.Second,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "KURA.CONSISTENCY", "SERIAL").Err() }})
	t.Cleanup(func() { serial.Close() })
	const trials, increments = 5, 5
	for trial := range trials {
		lock, prize, counter := fmt.Sprint("lock", trial), fmt.Sprint("prize", trial), fmt.Sprint("counter", trial)
		if err := clients[0].Set(ctx, prize, "gold", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var winners, takers atomic.Int32
		race(func(i int, c *redis.Client) error {
			var won bool
			err := retryContended(func() (err error) {
				won, err = c.SetNX(ctx, lock, i, time.Minute).Result()
				return err
			})
			if won {
				winners.Add(1)
			}
			if err != nil {
				return err
			}
			var v string
			err = retryContended(func() (err error) {
				v, err = c.GetDel(ctx, prize).Result()
				return err
			})
			if v == "gold" {
				takers.Add(1)
			}
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			for range increments {
				if err := retryContended(func() error { return c.Incr(ctx, counter).Err() }); err != nil {
					return err
				}
			}
			return nil
		})
		if winners.Load() != 1 || takers.Load() != 1 {
			t.Errorf("trial %d: %d SET NX winners, %d GETDEL takers; want one each", trial, winners.Load(), takers.Load())
		}
		if got, err := serial.Get(ctx, counter).Int(); err != nil || got != len(clients)*increments {
			t.Errorf("trial %d: counter %d (%v) after %d INCRs", trial, got, err, len(clients)*increments)
		}
	}
	deadline := time.Unix(4102444800, 0)
	if err := clients[0].ExpireAt(ctx, "lock0", deadline).Err(); err != nil {
		t.Fatal(err)
	}
	// Through another node than EXPIREAT's, a QUORUM read sees its commit once it
	// landed, a round trip at most after the answer (docs/lwt.md): wait for it.
	for _, c := range clients[:len(nodes)] {
		want := time.Duration(deadline.Unix()) * time.Second
		got, err := c.ExpireTime(ctx, "lock0").Result()
		for wait := time.Now().Add(10 * time.Second); err == nil && got != want && time.Now().Before(wait); {
			got, err = c.ExpireTime(ctx, "lock0").Result()
		}
		if err != nil || got != want {
			t.Errorf("EXPIRETIME through %s = %v, %v; want %v", c.Options().Addr, got, err, deadline.Unix())
		}
	}
}

// scanEachOnce walks SCAN to its end with pages of count, each call through the next of
// clients in turn (so that every node resumes another's cursor), and checks that it
// returns each key of want exactly once within callsMax calls.
func scanEachOnce(t *testing.T, clients []*redis.Client, count int64, callsMax int, want map[string]bool) {
	t.Helper()
	ctx := context.Background()
	seen := map[string]int{}
	var cursor uint64
	for call := 0; ; call++ {
		page, next, err := clients[call%len(clients)].Scan(ctx, cursor, "", count).Result()
		if err != nil {
			t.Fatalf("SCAN %d on node %d: %v", cursor, call%len(clients), err)
		}
		for _, k := range page {
			seen[k]++
		}
		if cursor = next; cursor == 0 {
			break
		}
		if call > callsMax {
			t.Fatal("SCAN does not end")
		}
	}
	if len(seen) != len(want) {
		t.Errorf("SCAN across nodes saw %d keys, want %d", len(seen), len(want))
	}
	for k, n := range seen {
		if !want[k] || n != 1 {
			t.Errorf("SCAN returned %q %d times", k, n)
		}
	}
}

// execUntilAvailable sends the pipeline fill makes through c, and sends it again after
// an UNAVAILABLE reply once every node sees every other alive, at most 5 times in all:
// on a loaded machine a node may judge a peer down for a moment (CI saw it in
// TestRedisScanAmongDeletedKeysResumesOnAnyNode), and its coordinator then refuses at
// once, as it should. Only for pipelines of idempotent writes (SET of a fixed value, DEL),
// which may run twice.
func execUntilAvailable(ctx context.Context, t *testing.T, nodes []*Node, c *redis.Client, fill func(redis.Pipeliner)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		pipe := c.Pipeline()
		fill(pipe)
		_, err := pipe.Exec(ctx)
		if err == nil {
			return
		}
		if !strings.HasPrefix(err.Error(), "UNAVAILABLE") || attempt == 5 {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; sending it again once every node sees every other alive", attempt, err)
		waitAllReachable(t, nodes)
	}
}

// quorumClients returns a Redis client of each node, at QUORUM (both replicas of
// simple=2: at ONE a scan may ask a replica a write has not reached yet), with a read
// timeout long enough for a long pipeline of writes on a busy machine.
func quorumClients(t *testing.T, nodes []*Node) []*redis.Client {
	t.Helper()
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.RESPAddr(), ReadTimeout: 20 * time.Second,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "KURA.CONSISTENCY", "QUORUM").Err() }})
		t.Cleanup(func() { clients[i].Close() })
	}
	return clients
}
