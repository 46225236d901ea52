package schema

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

func TestCompileCollectionInstances(t *testing.T) {
	tests := []struct {
		name string
		ks   Keyspace
		want error
	}{
		{"partition transactions", Keyspace{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition, CollectionInstances: true}, nil},
		{"per-key transactions", Keyspace{Name: "tx", Replication: "simple=3", Transactions: TransactionsKey, CollectionInstances: true}, ErrInvalidKeyspace},
		{"transactions unsaid, so per key", Keyspace{Name: "tx", Replication: "simple=3", CollectionInstances: true}, ErrInvalidKeyspace},
	}
	for _, tt := range tests {
		got, err := tt.ks.Compile()
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Compile error = %v, want %v", tt.name, err, tt.want)
		}
		if err == nil && !got.CollectionInstances {
			t.Errorf("%s: Compile dropped CollectionInstances", tt.name)
		}
	}
}

// TestCatalogKeepsCollectionInstances checks that the option survives the catalog's
// encoding with every other field, that a keyspace of partition transactions without it
// keeps the bytes (and so the element instances) of the builds before it, that it tells
// two catalogs' digests apart, and that decode refuses a malformed field.
func TestCatalogKeepsCollectionInstances(t *testing.T) {
	const zero = "0000000000000000"
	tests := []struct {
		name string
		ks   Keyspace
		want string // the encoded value
	}{
		{"partition, element records on their collection's instance",
			Keyspace{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition, CollectionInstances: true, Timestamp: 10},
			"simple=3\x00grouped\x00\x00" + zero + "\x00\x00tpartition\x00ecollection"},
		{"truncated and dropped",
			Keyspace{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition, CollectionInstances: true, Timestamp: 10, TruncatedAt: 12, Dropped: true},
			"simple=3\x00grouped\x00\x00000000000000000c\x00dropped\x00tpartition\x00ecollection"},
		{"partition, element records on their own instances, as builds before the option wrote it",
			Keyspace{Name: "tx", Replication: "simple=3", Transactions: TransactionsPartition, Timestamp: 10},
			"simple=3\x00grouped\x00\x00" + zero + "\x00\x00tpartition"},
	}
	for _, tt := range tests {
		k, err := tt.ks.Compile()
		if err != nil {
			t.Fatal(err)
		}
		rec := encode(k)
		if string(rec.Value) != tt.want {
			t.Errorf("%s: encodes as %q, want %q", tt.name, rec.Value, tt.want)
		}
		got, err := decode(rec)
		if err != nil {
			t.Fatalf("%s: decode: %v", tt.name, err)
		}
		if !sameDefinition(got, k) || got.CollectionInstances != k.CollectionInstances || got.Dropped != k.Dropped {
			t.Errorf("%s: decode(encode(%+v)) = %+v", tt.name, k, got)
		}
	}
	own, err := tests[2].ks.Compile()
	if err != nil {
		t.Fatal(err)
	}
	collection := own
	collection.CollectionInstances = true
	if catalogDigest(t, own) == catalogDigest(t, collection) {
		t.Error("catalogs differing only in the element records' instances have the same digest")
	}
	for _, value := range []string{
		"simple=3\x00grouped\x00\x00" + zero + "\x00\x00tpartition\x00eown",
		"simple=3\x00grouped\x00\x00" + zero + "\x00\x00tpartition\x00ecollection\x00x",
		"simple=3\x00grouped\x00\x00" + zero + "\x00\x00ecollection",
	} {
		if k, err := decode(lww.Record{Key: []byte("tx"), Value: []byte(value), Timestamp: 10}); err == nil {
			t.Errorf("decode(%q) = %+v, want refused", value, k)
		}
	}
}

// TestTransactionPartition: with CollectionInstances an element record's transactions
// run on its collection key's partition, whether that key has a hash tag or not; without
// it, on its own hash tag's, as builds before the option ran them, which for a key
// without a tag is the element record's own instance.
func TestTransactionPartition(t *testing.T) {
	item := func(collection string) []byte { return element.Key([]byte(collection), element.ListItem, []byte{0x80}) }
	long := "{t}" + strings.Repeat("x", 120) // 123 bytes: its length's varint is '{'
	tests := []struct {
		name             string
		key              []byte
		own, collection  string
		ownIsElementsKey bool
	}{
		{"a key without a tag", []byte("xlist"), "xlist", "xlist", false},
		{"a key with a tag", []byte("{t}l"), "t", "t", false},
		{"an item of a list without a tag", item("xlist"), "", "xlist", true},
		{"an item of a list with a tag", item("{t}l"), "t", "t", false},
		{"an item of a list whose length prefix reads as a brace", item(long), "{t", "t", false},
		{"a field of a hash without a tag", element.Key([]byte("h"), element.HashField, []byte("f")), "", "h", true},
	}
	own, err := Keyspace{Name: "own", Replication: "simple=3", Transactions: TransactionsPartition}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	collection := own
	collection.CollectionInstances = true
	for _, tt := range tests {
		wantOwn := []byte(tt.own)
		if tt.ownIsElementsKey {
			wantOwn = tt.key
		}
		if got := own.TransactionPartition(tt.key); !bytes.Equal(got, wantOwn) {
			t.Errorf("%s: on their own instances: %q, want %q", tt.name, got, wantOwn)
		}
		if got := collection.TransactionPartition(tt.key); string(got) != tt.collection {
			t.Errorf("%s: on their collection's instance: %q, want %q", tt.name, got, tt.collection)
		}
	}
}

// TestSettleOwnCollectionInstances: the default keyspace settles with element records on
// their collection's instance only when every member runs them there; a member of a
// build that does not, up or down, settles it on their own instances, and one that runs
// no partition instances on per-key ones.
func TestSettleOwnCollectionInstances(t *testing.T) {
	proposal, err := Keyspace{Name: DefaultKeyspace, Replication: "each=3", Transactions: TransactionsPartition, CollectionInstances: true, Timestamp: ImplicitTimestamp}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	const digest = 7
	peer := func(id string, up bool, version int) Peer {
		return Peer{ID: id, Up: up, Digest: digest, DigestKnown: up, PartitionTransactions: version >= 1, CollectionInstances: version >= 2}
	}
	tests := []struct {
		name             string
		peers            []Peer
		wantTransactions string
		wantCollection   bool
	}{
		{"alone", nil, TransactionsPartition, true},
		{"every member runs them", []Peer{peer("n1", true, 2), peer("n3", true, 2)}, TransactionsPartition, true},
		{"a member runs partition instances only", []Peer{peer("n1", true, 2), peer("n3", true, 1)}, TransactionsPartition, false},
		{"such a member is down", []Peer{peer("n3", false, 1)}, TransactionsPartition, false},
		{"a member runs no partition instances", []Peer{peer("n3", true, 0)}, TransactionsKey, false},
	}
	for _, tt := range tests {
		got, why := SettleOwn("n2", proposal, true, digest, tt.peers)
		if why != "" {
			t.Errorf("%s: not settled: %s", tt.name, why)
			continue
		}
		if got.Transactions != tt.wantTransactions || got.CollectionInstances != tt.wantCollection {
			t.Errorf("%s: settles %s", tt.name, DescribeImplicit(got))
		}
		if _, err := got.Compile(); err != nil {
			t.Errorf("%s: settles an invalid definition: %v", tt.name, err)
		}
	}
}

// TestMergeCollectionInstances: of two settled default definitions differing only in
// their element records' instances, the one of their own instances (every cluster's
// before the option) wins, whatever the order they meet in.
func TestMergeCollectionInstances(t *testing.T) {
	own, err := Keyspace{Name: DefaultKeyspace, Replication: "each=3", Transactions: TransactionsPartition, Timestamp: SettledTimestamp}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	collection := own
	collection.CollectionInstances = true
	if got, conflict := Merge(own, collection); !sameDefinition(got, own) || conflict {
		t.Errorf("own meets collection: keeps %s, conflict %v; want own kept, no conflict", DescribeImplicit(got), conflict)
	}
	if got, conflict := Merge(collection, own); !sameDefinition(got, collection) || !conflict {
		t.Errorf("collection meets own: keeps %s, conflict %v; want collection kept, losing", DescribeImplicit(got), conflict)
	}
	if DescribeImplicit(own) == DescribeImplicit(collection) {
		t.Errorf("the conflict's message cannot tell %q apart", DescribeImplicit(own))
	}
}
