package schema

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/storage"
)

func TestCompile(t *testing.T) {
	tests := []struct {
		ks   Keyspace
		want error
	}{
		{Keyspace{Name: "app", Replication: "dc1=2,dc2=1"}, nil},
		{Keyspace{Name: "App_2", Replication: "simple=3", Partitioner: "ordered"}, nil},
		{Keyspace{Name: "", Replication: "simple=1"}, ErrInvalidKeyspace},
		{Keyspace{Name: "9lives", Replication: "simple=1"}, ErrInvalidKeyspace},
		{Keyspace{Name: "has space", Replication: "simple=1"}, ErrInvalidKeyspace},
		{Keyspace{Name: "system_x", Replication: "simple=1"}, ErrInvalidKeyspace},
		{Keyspace{Name: "app", Replication: "dc1=0"}, ErrInvalidKeyspace},
		{Keyspace{Name: "app", Replication: ""}, ErrInvalidKeyspace},
		{Keyspace{Name: "app", Replication: "simple=1", Partitioner: "random"}, ErrInvalidKeyspace},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 4}}, nil},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 4}, Replication: "simple=1", Partitioner: "ordered"}, nil},
		{Keyspace{Name: "striped", Erasure: Erasure{M: 4, K: 4}}, nil},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 255, K: 1}}, nil},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 4}, Replication: "simple=2"}, ErrInvalidKeyspace},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 4}, Replication: "dc1=1"}, ErrInvalidKeyspace},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 4, K: 6}}, ErrInvalidKeyspace},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 0}}, ErrInvalidKeyspace},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 1, K: 1}}, ErrInvalidKeyspace},
		{Keyspace{Name: "coded", Erasure: Erasure{M: 256, K: 4}}, ErrInvalidKeyspace},
		{Keyspace{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition}, nil},
		{Keyspace{Name: "tx", Replication: "simple=3", Transactions: TransactionsKey}, nil},
		{Keyspace{Name: "tx", Replication: "simple=3", Transactions: "row"}, ErrInvalidKeyspace},
		{Keyspace{Name: "tx", Replication: "simple=3", Partitioner: "hash", Transactions: TransactionsPartition}, ErrInvalidKeyspace},
		{Keyspace{Name: "tx", Erasure: Erasure{M: 6, K: 4}, Partitioner: "grouped", Transactions: TransactionsPartition}, ErrInvalidKeyspace},
	}
	for _, tt := range tests {
		got, err := tt.ks.Compile()
		if !errors.Is(err, tt.want) {
			t.Errorf("Compile(%+v) error = %v, want %v", tt.ks, err, tt.want)
			continue
		}
		if err == nil && (got.Strategy() == nil || got.Partition() == nil || got.Partitioner == "") {
			t.Errorf("Compile(%+v) left the keyspace unprepared: %+v", tt.ks, got)
		}
	}
}

func TestCompileGivesErasureCodedKeyspacesSingleChunkPlacement(t *testing.T) {
	ks, err := Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 4}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if ks.Replication != "simple=1" || ks.Strategy().ReplicationFactor() != 1 {
		t.Fatalf("erasure-coded keyspace compiled with replication %q", ks.Replication)
	}
}

func TestParseErasure(t *testing.T) {
	tests := []struct {
		in   string
		want Erasure
		ok   bool
	}{
		{"6,4", Erasure{M: 6, K: 4}, true},
		{" 8 , 2 ", Erasure{M: 8, K: 2}, true},
		{"", Erasure{}, true},
		{"6", Erasure{}, false},
		{"6;4", Erasure{}, false},
		{"six,four", Erasure{}, false},
	}
	for _, tt := range tests {
		got, err := ParseErasure(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseErasure(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidKeyspace) {
			t.Errorf("ParseErasure(%q) error %v does not wrap ErrInvalidKeyspace", tt.in, err)
		}
		if tt.ok && got.String() != strings.ReplaceAll(strings.TrimSpace(tt.in), " ", "") {
			t.Errorf("ParseErasure(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestCatalogPersistsErasureAndDigestsIt(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 4}, Timestamp: 10}); err != nil {
		t.Fatal(err)
	}
	digest := c.Digest()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	defer e.Close()
	c, err = Open(e)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := c.Get("coded")
	if err != nil || ks.Erasure != (Erasure{M: 6, K: 4}) || ks.Replication != "simple=1" {
		t.Fatalf("after reopen Get(coded) = %+v, %v; want erasure 6,4", ks, err)
	}
	if c.Digest() != digest {
		t.Fatal("digest differs after reopen")
	}
	// Another code under the same name and timestamp must not look like the same catalog.
	otherEngine := openEngine(t, t.TempDir())
	defer otherEngine.Close()
	other, err := Open(otherEngine)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Apply(Keyspace{Name: "coded", Erasure: Erasure{M: 6, K: 3}, Timestamp: 10}); err != nil {
		t.Fatal(err)
	}
	if other.Digest() == digest {
		t.Fatal("catalogs differing only in the erasure code have the same digest")
	}
}

// TestCatalogKeepsTransactions checks that a keyspace's transactions option survives the
// catalog's encoding with every other field, that a keyspace without it keeps the bytes
// and digest of builds before the option (which read neither), and that the option
// tells two definitions apart.
func TestCatalogKeepsTransactions(t *testing.T) {
	tests := []Keyspace{
		{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition, Timestamp: 10},
		{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition, Timestamp: 10, TruncatedAt: 12},
		{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition, Timestamp: 10, TruncatedAt: 12, Dropped: true},
		{Name: "tx", Replication: "simple=3", Timestamp: 10},
	}
	for _, tt := range tests {
		k, err := tt.Compile()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(encode(k))
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", tt, err)
		}
		if got.Transactions != k.Transactions || got.TruncatedAt != k.TruncatedAt || got.Dropped != k.Dropped || got.Replication != k.Replication {
			t.Errorf("decode(encode(%+v)) = %+v", k, got)
		}
	}
	perKey, err := Keyspace{Name: "tx", Replication: "simple=3", Timestamp: 10}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if v := string(encode(perKey).Value); v != "simple=3\x00grouped" {
		t.Errorf("a keyspace of per-key transactions encodes as %q, want the bytes of builds before the option", v)
	}
	partition := perKey
	partition.Transactions = TransactionsPartition
	if catalogDigest(t, perKey) == catalogDigest(t, partition) {
		t.Error("catalogs differing only in the transactions option have the same digest")
	}
	if _, err := decode(lww.Record{Key: []byte("tx"), Value: []byte("simple=3\x00grouped\x00\x00" + "0000000000000000" + "\x00\x00tpartition\x00x"), Timestamp: 10}); err == nil {
		t.Error("decode accepted a field after the transactions option")
	}
}

func openEngine(t *testing.T, dir string) *storage.Engine {
	t.Helper()
	e, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCatalogMergesNewestAndPersists(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	empty := c.Digest()
	if changed, err := c.Apply(Keyspace{Name: "app", Replication: "simple=1", Timestamp: 10}); err != nil || !changed {
		t.Fatalf("first Apply = %v, %v", changed, err)
	}
	if changed, _ := c.Apply(Keyspace{Name: "app", Replication: "simple=3", Timestamp: 5}); changed {
		t.Fatal("an older definition replaced a newer one")
	}
	if changed, _ := c.Apply(Keyspace{Name: "app", Replication: "simple=2", Timestamp: 20}); !changed {
		t.Fatal("a newer definition was not applied")
	}
	if _, err := c.Apply(Keyspace{Name: "bad name", Replication: "simple=2", Timestamp: 30}); !errors.Is(err, ErrInvalidKeyspace) {
		t.Fatalf("invalid definition: err = %v", err)
	}
	if c.Digest() == empty {
		t.Fatal("digest did not change")
	}
	digest := c.Digest()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openEngine(t, dir)
	defer e.Close()
	c, err = Open(e)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := c.Get("app")
	if err != nil || ks.Replication != "simple=2" || ks.Strategy().ReplicationFactor() != 2 {
		t.Fatalf("after reopen Get(app) = %+v, %v; want simple=2", ks, err)
	}
	if c.Digest() != digest {
		t.Fatal("digest differs after reopen")
	}
	if _, err := c.Get("nope"); !errors.Is(err, ErrNoKeyspace) {
		t.Fatalf("Get(nope) error = %v", err)
	}
	if list := c.List(); len(list) != 1 || list[0].Name != "app" {
		t.Fatalf("List() = %+v", list)
	}
}

// TestDefaultKeyspaceIsImplicitAndYields checks the default keyspace a node proposes:
// served at once, kept across EnsureDefault calls, neither persisted nor sent (nor in
// the digest) until settled, replaced by a settled definition another node sends, and
// by any created one.
func TestDefaultKeyspaceIsImplicitAndYields(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	a, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	empty := a.Digest()
	if err := a.EnsureDefault(Keyspace{Replication: "each=3", Transactions: TransactionsPartition}); err != nil {
		t.Fatal(err)
	}
	if err := a.EnsureDefault(Keyspace{Replication: "simple=1"}); err != nil {
		t.Fatal(err)
	}
	if ks, err := a.Get(DefaultKeyspace); err != nil || ks.Replication != "each=3" || ks.Timestamp != ImplicitTimestamp {
		t.Fatalf("default keyspace = %+v, %v; want the first proposal, each=3", ks, err)
	}
	if len(a.Definitions()) != 0 || a.Digest() != empty || !errors.Is(a.TransactionsReady(DefaultKeyspace), ErrNotSettled) {
		t.Fatalf("a proposal travels (definitions %v, digest changed %t) or is ready (%v)", a.Definitions(), a.Digest() != empty, a.TransactionsReady(DefaultKeyspace))
	}
	if _, err := a.Truncate(DefaultKeyspace, 50); !errors.Is(err, ErrNotSettled) {
		t.Fatalf("truncating a proposal: %v, want ErrNotSettled", err)
	}
	e.Close()
	e = openEngine(t, dir)
	defer func() { e.Close() }()
	if a, err = Open(e); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(DefaultKeyspace); err == nil {
		t.Fatal("a proposal was persisted")
	}
	if err := a.EnsureDefault(Keyspace{Replication: "each=3", Transactions: TransactionsPartition}); err != nil {
		t.Fatal(err)
	}
	// The cluster's settled definition replaces the proposal.
	cluster := Keyspace{Name: DefaultKeyspace, Replication: "simple=1", Timestamp: SettledTimestamp}
	if changed, err := a.Apply(cluster); err != nil || !changed {
		t.Fatalf("the cluster's settled definition did not replace the proposal: %v, %v", changed, err)
	}
	if ks, _ := a.Get(DefaultKeyspace); ks.Replication != "simple=1" || ks.PartitionTransactions() || a.TransactionsReady(DefaultKeyspace) != nil {
		t.Fatalf("after adoption: %+v, ready %v", ks, a.TransactionsReady(DefaultKeyspace))
	}
	if changed, err := a.Apply(Keyspace{Name: DefaultKeyspace, Replication: "dc1=2", Timestamp: 100}); err != nil || !changed {
		t.Fatalf("a created default keyspace did not replace the implicit one: %v, %v", changed, err)
	}
	if err := a.EnsureDefault(Keyspace{Replication: "each=3"}); err != nil {
		t.Fatal(err)
	}
	if ks, _ := a.Get(DefaultKeyspace); ks.Replication != "dc1=2" {
		t.Fatalf("EnsureDefault replaced a created default keyspace: %+v", ks)
	}
	if _, err := a.Apply(Keyspace{Name: DefaultKeyspace, Replication: "bad", Timestamp: ImplicitTimestamp}); err == nil {
		t.Fatal("an invalid definition was accepted")
	}
	if err := a.EnsureDefault(Keyspace{Replication: "bad"}); err == nil {
		t.Fatal("an invalid proposal was accepted")
	}
}

// TestOlderBuildsDefaultIsSettled checks the upgrade of a node whose default keyspace
// an older build persisted at ImplicitTimestamp, as it ran transactions in it: it reads
// as settled, keeps its per-key transactions against this build's proposal, and a
// definition at ImplicitTimestamp another node (an older build) sends settles a
// proposal as well.
func TestOlderBuildsDefaultIsSettled(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	older := Keyspace{Name: DefaultKeyspace, Replication: "each=3", Timestamp: ImplicitTimestamp}
	older, err := older.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(catalogKeyspace, encode(older)); err != nil {
		t.Fatal(err)
	}
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureDefault(Keyspace{Replication: "each=3", Transactions: TransactionsPartition}); err != nil {
		t.Fatal(err)
	}
	ks, _ := c.Get(DefaultKeyspace)
	if ks.Timestamp != SettledTimestamp || ks.PartitionTransactions() || c.TransactionsReady(DefaultKeyspace) != nil || len(c.Definitions()) != 1 {
		t.Fatalf("an older build's default reads as %+v, ready %v, definitions %v; want it settled, per key", ks, c.TransactionsReady(DefaultKeyspace), c.Definitions())
	}
	e.Close()

	e = openEngine(t, t.TempDir())
	defer e.Close()
	if c, err = Open(e); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureDefault(Keyspace{Replication: "each=3", Transactions: TransactionsPartition}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(older); err != nil {
		t.Fatal(err)
	}
	if ks, _ := c.Get(DefaultKeyspace); ks.Timestamp != SettledTimestamp || ks.PartitionTransactions() || c.TransactionsReady(DefaultKeyspace) != nil {
		t.Fatalf("after an older build's definition: %+v, ready %v; want it adopted, settled", ks, c.TransactionsReady(DefaultKeyspace))
	}
}

// TestTruncationMerges checks that the later truncation wins whichever definition does,
// in any order, and survives a restart.
func TestTruncationMerges(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Truncate("app", 5); !errors.Is(err, ErrNoKeyspace) {
		t.Fatalf("Truncate of an unknown keyspace: err = %v, want ErrNoKeyspace", err)
	}
	mustApply := func(k Keyspace, wantChanged bool) {
		t.Helper()
		changed, err := c.Apply(k)
		if err != nil || changed != wantChanged {
			t.Fatalf("Apply(%+v) = %t, %v; want changed %t", k, changed, err, wantChanged)
		}
	}
	mustApply(Keyspace{Name: "app", Replication: "simple=1", Timestamp: 10}, true)
	mustApply(Keyspace{Name: "coded", Erasure: Erasure{M: 3, K: 2}, Timestamp: 10}, true)
	before := c.Digest()
	ks, err := c.Truncate("app", 15)
	if err != nil || ks.TruncatedAt != 15 || ks.Timestamp != 10 {
		t.Fatalf("Truncate(app, 15) = %+v, %v; want truncated at 15, definition of 10", ks, err)
	}
	if c.Digest() == before {
		t.Error("a truncation left the digest unchanged: peers would never pull it")
	}
	steps := []struct {
		name        string
		apply       Keyspace
		wantChanged bool
		want        string // replication@timestamp/truncatedAt
	}{
		{"an earlier truncation is ignored", Keyspace{Name: "app", Replication: "simple=1", Timestamp: 10, TruncatedAt: 12}, false, "simple=1@10/15"},
		{"the same truncation is no change", Keyspace{Name: "app", Replication: "simple=1", Timestamp: 10, TruncatedAt: 15}, false, "simple=1@10/15"},
		{"a newer definition keeps the truncation", Keyspace{Name: "app", Replication: "simple=2", Timestamp: 20}, true, "simple=2@20/15"},
		{"a later truncation on an older definition", Keyspace{Name: "app", Replication: "simple=1", Timestamp: 10, TruncatedAt: 30}, true, "simple=2@20/30"},
		{"a newer definition with an older truncation", Keyspace{Name: "app", Replication: "simple=3", Timestamp: 40, TruncatedAt: 25}, true, "simple=3@40/30"},
		{"an erasure-coded keyspace truncated", Keyspace{Name: "coded", Erasure: Erasure{M: 3, K: 2}, Timestamp: 10, TruncatedAt: 0xabcdef}, true, "simple=1@10/11259375"},
	}
	describe := func(k Keyspace) string {
		return fmt.Sprintf("%s@%d/%d", k.Replication, k.Timestamp, k.TruncatedAt)
	}
	for _, step := range steps {
		mustApply(step.apply, step.wantChanged)
		if ks, err := c.Get(step.apply.Name); err != nil || describe(ks) != step.want {
			t.Errorf("%s: %s = %s, %v; want %s", step.name, step.apply.Name, describe(ks), err, step.want)
		}
	}
	want := map[string]hlc.Timestamp{"app": 30, "coded": 0xabcdef}
	if got := c.Truncations(); !maps.Equal(got, want) {
		t.Errorf("Truncations() = %v, want %v", got, want)
	}
	digest := c.Digest()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	defer e.Close()
	if c, err = Open(e); err != nil {
		t.Fatal(err)
	}
	if got := c.Truncations(); !maps.Equal(got, want) || c.Digest() != digest {
		t.Errorf("after reopen Truncations() = %v (digest changed: %t), want %v", got, c.Digest() != digest, want)
	}
	if ks, err := c.Get("coded"); err != nil || ks.Erasure != (Erasure{M: 3, K: 2}) {
		t.Errorf("after reopen coded = %+v, %v; want erasure 3,2", ks, err)
	}
}

// TestDropHidesAndRecreateStartsEmpty checks a drop: hidden from Get and List, kept in
// Definitions and the digest, persisted, and a later create keeps the drop's truncation
// (so the dropped keyspace's records stay hidden), while an older create loses to it.
func TestDropHidesAndRecreateStartsEmpty(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(Keyspace{Name: "app", Replication: "simple=1", Timestamp: 10}); err != nil {
		t.Fatal(err)
	}
	before := c.Digest()
	if _, err := c.Drop("app", 20); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("app"); !errors.Is(err, ErrNoKeyspace) {
		t.Fatalf("Get after drop: %v, want ErrNoKeyspace", err)
	}
	if len(c.List()) != 0 || len(c.Definitions()) != 1 || c.Digest() == before {
		t.Fatalf("after drop: List %v, Definitions %v, digest changed %t", c.List(), c.Definitions(), c.Digest() != before)
	}
	if _, err := c.Drop("app", 30); !errors.Is(err, ErrNoKeyspace) {
		t.Fatalf("second drop: %v, want ErrNoKeyspace", err)
	}
	if changed, _ := c.Apply(Keyspace{Name: "app", Replication: "simple=3", Timestamp: 15}); changed {
		t.Fatal("a create older than the drop undid it")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	defer e.Close()
	if c, err = Open(e); err != nil {
		t.Fatal(err)
	}
	if defs := c.Definitions(); len(defs) != 1 || !defs[0].Dropped || defs[0].TruncatedAt != 20 {
		t.Fatalf("after reopen: %+v, want app dropped and truncated at 20", defs)
	}
	if _, err := c.Apply(Keyspace{Name: "app", Replication: "simple=2", Timestamp: 40}); err != nil {
		t.Fatal(err)
	}
	if ks, err := c.Get("app"); err != nil || ks.Replication != "simple=2" || ks.TruncatedAt != 20 || ks.Dropped {
		t.Fatalf("created again: %+v, %v; want simple=2, truncated at the drop", ks, err)
	}
}

// TestPartitionerOfNewAndOldKeyspaces checks that a keyspace created without a
// partitioner gets DefaultPartitioner, and that one an older build stored keeps "hash"
// after an upgrade: its catalog entry, in the bytes that build wrote, decodes as hash.
func TestPartitionerOfNewAndOldKeyspaces(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	old := map[string]string{
		"legacy":   "simple=3\x00hash",                           // what every earlier build wrote
		"unnamed":  "simple=3\x00",                               // a partitioner field left empty
		"truncold": "dc1=2\x00hash\x00\x00" + "00000000000000ff", // a truncated one
	}
	for name, value := range old {
		if _, err := e.Apply(catalogKeyspace, lww.Record{Key: []byte(name), Value: []byte(value), Timestamp: 7}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(Keyspace{Name: "fresh", Replication: "simple=3", Timestamp: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(Keyspace{Name: "chosen", Replication: "simple=3", Partitioner: "hash", Timestamp: 8}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	defer e.Close()
	if c, err = Open(e); err != nil {
		t.Fatal(err)
	}
	tagged := []byte("{user42}:cart")
	tests := []struct {
		name, want string
	}{
		{"legacy", "hash"},
		{"unnamed", "hash"},
		{"truncold", "hash"},
		{"chosen", "hash"},
		{"fresh", DefaultPartitioner},
	}
	for _, tt := range tests {
		ks, err := c.Get(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ring.PartitionerByName(tt.want)
		if ks.Partitioner != tt.want || ks.Partition().Token(tagged) != want.Token(tagged) {
			t.Errorf("keyspace %s: partitioner %q, token of %q %#x; want %q, %#x",
				tt.name, ks.Partitioner, tagged, ks.Partition().Token(tagged), tt.want, want.Token(tagged))
		}
	}
}

// TestImplicitDefaultKeepsAClustersHashPartitioner checks the upgrade of a cluster
// whose implicit default keyspace an older build defined with "hash": a node of this
// build, which defines its own with DefaultPartitioner, adopts the cluster's, and the
// cluster keeps it, in whichever order the two definitions meet.
func TestImplicitDefaultKeepsAClustersHashPartitioner(t *testing.T) {
	for _, newFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("newFirst=%v", newFirst), func(t *testing.T) {
			e := openEngine(t, t.TempDir())
			defer e.Close()
			c, err := Open(e)
			if err != nil {
				t.Fatal(err)
			}
			cluster := Keyspace{Name: DefaultKeyspace, Replication: "each=3", Partitioner: "hash", Timestamp: ImplicitTimestamp}
			if newFirst {
				if err := c.EnsureDefault(Keyspace{Replication: "each=3"}); err != nil {
					t.Fatal(err)
				}
				if ks, _ := c.Get(DefaultKeyspace); ks.Partitioner != DefaultPartitioner {
					t.Fatalf("a fresh node's default keyspace has partitioner %q, want %q", ks.Partitioner, DefaultPartitioner)
				}
				if _, err := c.Apply(cluster); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := c.Apply(cluster); err != nil {
					t.Fatal(err)
				}
				mine := Keyspace{Name: DefaultKeyspace, Replication: "each=3", Timestamp: ImplicitTimestamp}
				if _, err := c.Apply(mine); err != nil {
					t.Fatal(err)
				}
			}
			if ks, _ := c.Get(DefaultKeyspace); ks.Partitioner != "hash" {
				t.Fatalf("default keyspace partitioner %q after meeting the cluster's; want hash", ks.Partitioner)
			}
		})
	}
}

// catalogDigest is the digest of a catalog that holds k alone.
func catalogDigest(t *testing.T, k Keyspace) uint64 {
	t.Helper()
	e := openEngine(t, t.TempDir())
	t.Cleanup(func() { e.Close() })
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(k); err != nil {
		t.Fatal(err)
	}
	return c.Digest()
}
