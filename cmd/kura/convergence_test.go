package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisTypeCase is one Redis type written from both sides of a cut between two DCs: the
// writes of each side, what each side reads of the key during the cut, and the merged
// value docs/redis-types.md gives, which every replica must hold after the heal.
type redisTypeCase struct {
	name, key string
	// setup writes the key at ALL before the cut.
	setup func(ctx context.Context, c *redis.Client) error
	// sideA and sideB write during the cut through the side's two nodes, at LOCAL_QUORUM.
	sideA, sideB func(ctx context.Context, first, second *redis.Client) error
	read         func(ctx context.Context, c *redis.Client) (string, error)
	// viewA and viewB are what each side's second node reads at LOCAL_QUORUM during the
	// cut: its own side's writes only.
	viewA, viewB, merged string
}

// redisTypeCases mirror internal/tools/sim/datapath/testdata/{hash,set,zset,list,counter}-two-dcs on
// real processes: side A (dc1) writes first, side B (dc2) after it, each stamp later.
var redisTypeCases = []redisTypeCase{
	{
		name: "hash", key: "{u}:h",
		setup: func(ctx context.Context, c *redis.Client) error { return c.HSet(ctx, "{u}:h", "name", "ann").Err() },
		sideA: func(ctx context.Context, c, _ *redis.Client) error {
			return c.HSet(ctx, "{u}:h", "city", "oslo", "both", "from-a").Err()
		},
		sideB: func(ctx context.Context, c, _ *redis.Client) error {
			return c.HSet(ctx, "{u}:h", "mail", "ann@b", "both", "from-b").Err()
		},
		read: func(ctx context.Context, c *redis.Client) (string, error) {
			fields, err := c.HGetAll(ctx, "{u}:h").Result()
			var pairs []string
			for f, v := range fields {
				pairs = append(pairs, f+"="+v)
			}
			slices.Sort(pairs)
			return strings.Join(pairs, " "), err
		},
		// Each field is a record of its own: both sides' fields survive, and the field
		// both wrote holds the later write.
		viewA: "both=from-a city=oslo name=ann", viewB: "both=from-b mail=ann@b name=ann",
		merged: "both=from-b city=oslo mail=ann@b name=ann",
	},
	{
		name: "set", key: "{u}:s",
		setup: func(ctx context.Context, c *redis.Client) error { return c.SAdd(ctx, "{u}:s", "m", "x", "y").Err() },
		// A removes every member it sees; B removes m and adds it again (a fresh add A's
		// SREM never saw), adds n, and adds y, which it finds present, so that SADD writes
		// nothing and A's SREM removes y. Add wins: m and n stay.
		sideA: func(ctx context.Context, c, _ *redis.Client) error { return c.SRem(ctx, "{u}:s", "m", "x", "y").Err() },
		sideB: func(ctx context.Context, c, _ *redis.Client) error {
			if err := c.SRem(ctx, "{u}:s", "m").Err(); err != nil {
				return err
			}
			return expectInt(c.SAdd(ctx, "{u}:s", "m", "n", "y"), 2)
		},
		read: func(ctx context.Context, c *redis.Client) (string, error) {
			members, err := c.SMembers(ctx, "{u}:s").Result()
			slices.Sort(members)
			return strings.Join(members, " "), err
		},
		viewA: "", viewB: "m n x y", merged: "m n",
	},
	{
		name: "sorted set", key: "{u}:z",
		setup: func(ctx context.Context, c *redis.Client) error {
			return c.ZAdd(ctx, "{u}:z", redis.Z{Score: 1, Member: "ann"}, redis.Z{Score: 2, Member: "bob"}).Err()
		},
		sideA: func(ctx context.Context, c, _ *redis.Client) error {
			return c.ZAdd(ctx, "{u}:z", redis.Z{Score: 10, Member: "ann"}, redis.Z{Score: 3, Member: "cy"}).Err()
		},
		sideB: func(ctx context.Context, c, _ *redis.Client) error {
			return c.Do(ctx, "ZADD", "{u}:z", "-inf", "ann", "4", "dee").Err()
		},
		read: func(ctx context.Context, c *redis.Client) (string, error) {
			members, err := c.ZRangeWithScores(ctx, "{u}:z", 0, -1).Result()
			var out []string
			for _, m := range members {
				out = append(out, fmt.Sprintf("%v:%s", m.Member, strconv.FormatFloat(m.Score, 'g', -1, 64)))
			}
			return strings.Join(out, " "), err
		},
		// Both sides set ann's score: the later member record wins everywhere, and ann is
		// listed once.
		viewA: "bob:2 cy:3 ann:10", viewB: "ann:-Inf bob:2 dee:4", merged: "ann:-Inf bob:2 cy:3 dee:4",
	},
	{
		name: "list", key: "{u}:l",
		setup: func(ctx context.Context, c *redis.Client) error { return c.RPush(ctx, "{u}:l", "x0").Err() },
		sideA: func(ctx context.Context, c, _ *redis.Client) error {
			if err := c.RPush(ctx, "{u}:l", "a1", "a2").Err(); err != nil {
				return err
			}
			return c.LPush(ctx, "{u}:l", "ah").Err()
		},
		sideB: func(ctx context.Context, c, _ *redis.Client) error {
			if err := c.RPush(ctx, "{u}:l", "b1", "b2").Err(); err != nil {
				return err
			}
			return c.LPush(ctx, "{u}:l", "bh").Err()
		},
		read: func(ctx context.Context, c *redis.Client) (string, error) {
			items, err := c.LRange(ctx, "{u}:l", 0, -1).Result()
			return strings.Join(items, " "), err
		},
		// At each index the pushes of both sides, by their stamps: a later RPUSH nearer the
		// tail, a later LPUSH nearer the head.
		viewA: "ah x0 a1 a2", viewB: "bh x0 b1 b2", merged: "bh ah x0 a1 b1 a2 b2",
	},
	{
		name: "PN counter", key: "{u}:n",
		setup: func(ctx context.Context, c *redis.Client) error { return expectInt(c.IncrBy(ctx, "{u}:n", 5), 5) },
		// Each node writes its own shard; INCR answers its own shard and the others as its
		// read found them, so each side counts only its own side's steps during the cut.
		sideA: func(ctx context.Context, first, second *redis.Client) error {
			if err := expectInt(first.IncrBy(ctx, "{u}:n", 3), 8); err != nil {
				return err
			}
			return expectInt(second.DecrBy(ctx, "{u}:n", 1), 7)
		},
		sideB: func(ctx context.Context, first, second *redis.Client) error {
			if err := expectInt(first.IncrBy(ctx, "{u}:n", 10), 15); err != nil {
				return err
			}
			return expectInt(second.DecrBy(ctx, "{u}:n", 4), 11)
		},
		read: func(ctx context.Context, c *redis.Client) (string, error) { return c.Get(ctx, "{u}:n").Result() },
		// The sum of every acknowledged step: 5 + 3 - 1 + 10 - 4.
		viewA: "7", viewB: "11", merged: "13",
	},
}

// expectInt checks an integer reply.
func expectInt(cmd *redis.IntCmd, want int64) error {
	got, err := cmd.Result()
	if err == nil && got != want {
		err = fmt.Errorf("%v answered %d, want %d", cmd.Args(), got, want)
	}
	return err
}

// TestRedisTypesConvergeAcrossACutBetweenDCs is issue 46's real-process check: four
// `kura server` processes, two per DC, every node a replica of every key (each=2). DC2
// is cut off from DC1 with `kura faults`; both sides write the same hash, set, sorted
// set, list and PN counter at LOCAL_QUORUM; after the heal, every node's own copy
// (read at ONE through it) converges to the merged value, with no acknowledged element
// lost. The replicas across the cut catch up by hints; the wait for it has a generous
// deadline and no fixed sleep.
func TestRedisTypesConvergeAcrossACutBetweenDCs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process test: runs four servers")
	}
	dir := t.TempDir()
	type server struct {
		serverProcess
		resp string
	}
	var servers []*server
	var seed string
	for i, dc := range []string{"dc1", "dc1", "dc2", "dc2"} {
		id := fmt.Sprintf("n%d", i+1)
		s := &server{resp: freeAddr(t)}
		listen := freeAddr(t)
		s.client = freeAddr(t)
		s.args = []string{"--id", id, "--dc", dc, "--listen", listen, "--client", s.client, "--resp", s.resp,
			"--data-dir", filepath.Join(dir, id), "--log-level", "warn", "--enable-faults",
			"--default-replication", "each=2", "--resp-counters", "pn",
			// The three joins, one after another before any write, wait a second each
			// rather than the default five gossip rounds of 1 s; gossip, and with it failure
			// detection across the cut, keeps its default round.
			"--ring-delay", "1s"}
		if seed == "" {
			seed = listen
		} else {
			s.args = append(s.args, "--seeds", seed)
		}
		startServer(t, &s.serverProcess)
		servers = append(servers, s)
	}
	deadline := time.Now().Add(60 * time.Second)
	for status := ""; strings.Count(status, " up ") < len(servers); status = waitFor(t, "n1 answers", "status", "--addr", servers[0].client) {
		if time.Now().After(deadline) {
			t.Fatalf("the four nodes never saw each other:\n%s", status)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Each client has one connection at one level; no retries, so that nothing is
	// written twice.
	connect := func(s *server, level string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.resp, Protocol: 2, DisableIdentity: true, PoolSize: 1, MaxRetries: -1,
			ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "KURA.CONSISTENCY", level).Err() }})
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	all := connect(servers[0], "ALL")
	local := make([]*redis.Client, len(servers))
	one := make([]*redis.Client, len(servers))
	for i, s := range servers {
		local[i], one[i] = connect(s, "LOCAL_QUORUM"), connect(s, "ONE")
	}
	// The default keyspace appears on every node with its first start, but a write at
	// ALL needs every node up in every node's view: retry the first until it is.
	for _, tc := range redisTypeCases {
		for err := tc.setup(ctx, all); err != nil; err = tc.setup(ctx, all) {
			if tc.name != redisTypeCases[0].name || time.Now().After(deadline) {
				t.Fatalf("%s: setup at ALL: %v", tc.name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	dc2 := servers[2].client + "," + servers[3].client
	if code, out, errOut := kura("faults", "set", "--addr", dc2, "--partition", "dc:dc1"); code != 0 {
		t.Fatalf("kura faults set: exit %d: %s%s", code, out, errOut)
	}
	for _, tc := range redisTypeCases {
		if err := tc.sideA(ctx, local[0], local[1]); err != nil {
			t.Fatalf("%s: side A during the cut: %v", tc.name, err)
		}
	}
	// Both processes stamp from one wall clock in whole milliseconds: past a millisecond
	// boundary, every stamp of side B is later than every stamp of side A.
	time.Sleep(2 * time.Millisecond)
	for _, tc := range redisTypeCases {
		if err := tc.sideB(ctx, local[2], local[3]); err != nil {
			t.Fatalf("%s: side B during the cut: %v", tc.name, err)
		}
	}
	// Each side reads only its own writes: the cut is real.
	for _, tc := range redisTypeCases {
		for _, side := range []struct {
			c    *redis.Client
			want string
		}{{local[1], tc.viewA}, {local[3], tc.viewB}} {
			if got, err := tc.read(ctx, side.c); err != nil || got != side.want {
				t.Errorf("%s during the cut through %s: %q (%v), want %q", tc.name, side.c.Options().Addr, got, err, side.want)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	if code, out, errOut := kura("faults", "clear", "--addr", dc2); code != 0 {
		t.Fatalf("kura faults clear: exit %d: %s%s", code, out, errOut)
	}
	// Every node is a replica of every key and reads its own copy first at ONE.
	deadline = time.Now().Add(90 * time.Second)
	converge := func(what string, read func(context.Context, *redis.Client) (string, error), want string) {
		t.Helper()
		for i, c := range one {
			got, err := read(ctx, c)
			for ; err != nil || got != want; got, err = read(ctx, c) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: n%d's copy is %q (%v), want %q", what, i+1, got, err, want)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	for _, tc := range redisTypeCases {
		converge(tc.name+" after the heal", tc.read, tc.merged)
	}

	// A pop is a transaction on the item's record, at SERIAL with every node back. Its
	// coordinator reads the pop at once; the other replicas once its commit, sent after
	// the answer, reaches them (docs/lwt.md).
	list := redisTypeCases[3]
	if got, err := local[2].LPop(ctx, list.key).Result(); err != nil || got != "bh" {
		t.Fatalf("LPOP after the heal: %q (%v), want bh", got, err)
	}
	const popped = "ah x0 a1 b1 a2 b2"
	if got, err := list.read(ctx, local[2]); err != nil || got != popped {
		t.Fatalf("the list through the pop's coordinator: %q (%v), want %q", got, err, popped)
	}
	converge("list after the pop", list.read, popped)
}
