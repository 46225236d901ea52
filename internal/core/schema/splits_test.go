package schema

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/storage"
)

func TestSplitsFromSample(t *testing.T) {
	keys := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, k := range s {
			out[i] = []byte(k)
		}
		return out
	}
	long := string(make([]byte, MaxSplitKeyBytes)) + "tail"
	tests := []struct {
		name   string
		sample [][]byte
		n      int
		want   [][]byte
	}{
		{"empty sample", nil, 4, nil},
		{"no splits asked", keys("a", "b"), 0, nil},
		{"fewer distinct keys than asked", keys("c", "a", "c", "", "b"), 8, keys("a", "b", "c")},
		{"one split is the median", keys("e", "a", "c", "b", "d"), 1, keys("c")},
		{"ends and evenly spaced ranks", keys("a", "b", "c", "d", "e", "f", "g"), 4, keys("a", "c", "e", "g")},
		{"long keys are cut", keys(long, "z"), 2, keys(long[:MaxSplitKeyBytes], "z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitsFromSample(tt.sample, tt.n)
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("SplitsFromSample = %q, want %q", got, tt.want)
			}
			if len(got) > 0 {
				if _, err := (Keyspace{Name: "ks", Replication: "simple=1", Partitioner: "ordered", Splits: got}).Compile(); err != nil {
					t.Errorf("the splits do not validate: %v", err)
				}
			}
		})
	}
	many := make([][]byte, 10*MaxSplits)
	for i := range many {
		many[i] = fmt.Appendf(nil, "k%08d", i)
	}
	if got := len(SplitsFromSample(many, 2*MaxSplits)); got != MaxSplits {
		t.Errorf("%d splits from a large sample, want the cap %d", got, MaxSplits)
	}
	sample := keys("b", "a")
	got := SplitsFromSample(sample, 2)
	got[0][0] = 'x'
	if string(sample[1]) != "a" {
		t.Error("the splits share memory with the sample")
	}
}

func TestCompileSplits(t *testing.T) {
	ordered := func(splits ...string) Keyspace {
		k := Keyspace{Name: "ks", Replication: "simple=1", Partitioner: "ordered"}
		for _, s := range splits {
			k.Splits = append(k.Splits, []byte(s))
		}
		return k
	}
	tooMany := ordered()
	for i := range MaxSplits + 1 {
		tooMany.Splits = append(tooMany.Splits, fmt.Appendf(nil, "%05d", i))
	}
	moving := ordered("b")
	moving.Moving, moving.NextSplits = true, [][]byte{[]byte("a"), []byte("c")}
	movingToNone := ordered("b")
	movingToNone.Moving = true
	nextUnsorted := moving
	nextUnsorted.NextSplits = [][]byte{[]byte("c"), []byte("a")}
	nextWithoutMove := ordered("b")
	nextWithoutMove.NextSplits = [][]byte{[]byte("c")}
	hashed := ordered("b")
	hashed.Partitioner = "hash"
	hashMoving := Keyspace{Name: "ks", Replication: "simple=1", Moving: true}
	coded := ordered("b")
	coded.Erasure = Erasure{M: 6, K: 4}
	tests := []struct {
		name    string
		ks      Keyspace
		wantErr bool
	}{
		{"ordered with splits", ordered("a", "b", "user5"), false},
		{"ordered without splits", ordered(), false},
		{"binary split keys", ordered("\x00", "\x00\x00", "\xff"), false},
		{"moving", moving, false},
		{"moving to no splits", movingToNone, false},
		{"unsorted", ordered("b", "a"), true},
		{"duplicate", ordered("a", "a"), true},
		{"empty split key", ordered("", "a"), true},
		{"split key too long", ordered(string(make([]byte, MaxSplitKeyBytes+1))), true},
		{"too many", tooMany, true},
		{"hash partitioner", hashed, true},
		{"hash partitioner moving", hashMoving, true},
		{"erasure-coded", coded, true},
		{"next splits unsorted", nextUnsorted, true},
		{"next splits without a move", nextWithoutMove, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ks.Compile()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Compile() error = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if (got.NextPartition() != nil) != tt.ks.Moving {
				t.Errorf("NextPartition() = %v with Moving %v", got.NextPartition(), tt.ks.Moving)
			}
		})
	}
}

func TestCompileWithoutSplitsKeepsTheOrderedTokens(t *testing.T) {
	k, err := Keyspace{Name: "ks", Replication: "simple=1", Partitioner: "ordered"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"user1234", "a", "\xff\xff\xff\xff\xff\xff\xff\xff"} {
		if got, want := k.Partition().Token([]byte(key)), ring.OrderedPartitioner().Token([]byte(key)); got != want {
			t.Errorf("Token(%q) = %#x, want %#x", key, got, want)
		}
	}
}

func TestCatalogPersistsSplitsAndDigestsThem(t *testing.T) {
	c, engine := openCatalog(t)
	plain := Keyspace{Name: "plain", Replication: "simple=1", Partitioner: "ordered", Timestamp: 10}
	if _, err := c.Apply(plain); err != nil {
		t.Fatal(err)
	}
	before := c.Digest()
	// Split keys may hold the separator, commas and any byte.
	split := Keyspace{Name: "split", Replication: "simple=1", Partitioner: "ordered", Timestamp: 10,
		Splits: [][]byte{[]byte("a\x00b"), []byte("a,c"), []byte("\xff")}}
	if _, err := c.Apply(split); err != nil {
		t.Fatal(err)
	}
	withSplits := c.Digest()
	if withSplits == before {
		t.Error("the digest ignores a keyspace with splits")
	}
	moving := split
	moving.Timestamp, moving.Moving, moving.NextSplits = 20, true, [][]byte{[]byte("b")}
	if _, err := c.Apply(moving); err != nil {
		t.Fatal(err)
	}
	if c.Digest() == withSplits {
		t.Error("the digest ignores a rebalance in progress")
	}
	truncated, err := c.Truncate("split", 30)
	if err != nil {
		t.Fatal(err)
	}
	dropped := plain
	dropped.Name, dropped.Splits = "gone", [][]byte{[]byte("m")}
	if _, err := c.Apply(dropped); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drop("gone", 40); err != nil {
		t.Fatal(err)
	}

	reopened, err := Open(engine)
	if err != nil {
		t.Fatal(err)
	}
	if reopened.Digest() != c.Digest() {
		t.Error("the digest changed across a reopen")
	}
	got, err := reopened.Get("split")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got.Splits, split.Splits, slices.Equal) || !got.Moving ||
		!slices.EqualFunc(got.NextSplits, moving.NextSplits, slices.Equal) || got.TruncatedAt != truncated.TruncatedAt {
		t.Errorf("reopened %+v, want the splits, the move and the truncation of %+v", got, truncated)
	}
	if got.NextPartition() == nil {
		t.Error("the reopened move has no next partitioner")
	}
	if _, err := reopened.Get("gone"); err == nil {
		t.Error("the dropped keyspace with splits reappeared")
	}
	if got, _ := reopened.Get("plain"); len(got.Splits) != 0 || got.Moving {
		t.Errorf("plain keyspace reopened as %+v", got)
	}
	// An entry without splits keeps the bytes it had before splits existed.
	if v := string(encode(plain).Value); v != "simple=1\x00ordered" {
		t.Errorf("entry of a keyspace without splits = %q", v)
	}
}

// ycsbKey is a key of YCSB's shape: "user" and a 64-bit FNV-1a hash of the record's
// number, positive, in decimal (CoreWorkload's hashed insert order): mostly 19 digits.
func ycsbKey(i uint64) []byte {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], i)
	h.Write(b[:])
	return strconv.AppendUint([]byte("user"), h.Sum64()&math.MaxInt64, 10)
}

// spread returns the largest node's row count over the mean when every key is counted
// at its primary replica on r.
func spread(r *ring.Ring, p ring.Partitioner, keys [][]byte) float64 {
	counts := map[string]int{}
	for _, k := range keys {
		r.Walk(p.Token(k), func(m ring.Member) bool {
			counts[m.ID]++
			return false
		})
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	return float64(most) / (float64(len(keys)) / float64(r.Len()))
}

// TestSplitsBalanceYCSBKeys: 12 nodes and 120k keys of YCSB's shape. Without splits
// every key shares the token prefix "user" and one node holds them all. Splits from a 10%
// sample spread them as the tokens do: on nodes with hash-derived tokens (16 vnodes
// each), as unevenly as the hash partitioner, which is the ring's own unevenness; on
// evenly spaced tokens (one per node, the paper's layout), about evenly.
func TestSplitsBalanceYCSBKeys(t *testing.T) {
	const nodes, keyCount = 12, 120_000
	var vnodes, even []ring.Member
	for i, token := range ring.EvenTokens(nodes) {
		id := fmt.Sprintf("node%02d", i)
		vnodes = append(vnodes, ring.Member{ID: id, DC: "dc1", Tokens: ring.TokensFor(id, ring.DefaultVnodes)})
		even = append(even, ring.Member{ID: id, DC: "dc1", Tokens: []ring.Token{token}})
	}
	keys := make([][]byte, keyCount)
	var sample [][]byte
	for i := range keys {
		keys[i] = ycsbKey(uint64(i))
		if i%10 == 0 {
			sample = append(sample, keys[i])
		}
	}
	ordered, err := Keyspace{Name: "ks", Replication: "simple=1", Partitioner: "ordered"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	balanced := ordered
	balanced.Splits = SplitsFromSample(sample, 1024)
	if balanced, err = balanced.Compile(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		members []ring.Member
		bound   float64 // on max/mean with splits, besides the hash partitioner's
	}{
		{"16 hash-derived vnodes per node", vnodes, 2},
		{"one evenly spaced token per node", even, 1.1},
	} {
		r, err := ring.New(tt.members)
		if err != nil {
			t.Fatal(err)
		}
		without := spread(r, ordered.Partition(), keys)
		with := spread(r, balanced.Partition(), keys)
		hashed := spread(r, ring.HashPartitioner(), keys)
		t.Logf("%s: max/mean rows per node: ordered without splits %.2f, with %d splits %.2f, hash %.2f",
			tt.name, without, len(balanced.Splits), with, hashed)
		if without < nodes-0.01 {
			t.Errorf("%s: without splits max/mean = %.2f, expected every key on one node (%d)", tt.name, without, nodes)
		}
		if with > 1.1*hashed || with > tt.bound {
			t.Errorf("%s: with splits max/mean = %.2f, want within 10%% of the hash partitioner's %.2f and at most %.2f", tt.name, with, hashed, tt.bound)
		}
	}
}

// openCatalog opens a catalog on a new in-memory engine, closed when the test ends; the
// engine is returned for the tests that open the catalog again.
func openCatalog(t *testing.T) (*Catalog, *storage.Engine) {
	t.Helper()
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	c, err := Open(engine)
	if err != nil {
		t.Fatal(err)
	}
	return c, engine
}
