package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/kuradb/kura/hlc"
)

func TestSettleAtStart(t *testing.T) {
	tests := []struct {
		name                    string
		fresh, founding, seeded bool
		want                    bool
	}{
		{"first node of a new cluster", true, false, false, true},
		{"one of a founding list", true, true, true, true},
		{"a new node with seeds", true, false, true, false},
		{"a restarted node", false, false, false, false},
		{"a restarted node with seeds", false, false, true, false},
	}
	for _, tt := range tests {
		if got := SettleAtStart(tt.fresh, tt.founding, tt.seeded); got != tt.want {
			t.Errorf("%s: SettleAtStart = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSettleOwn(t *testing.T) {
	proposal, err := Keyspace{Name: DefaultKeyspace, Replication: "each=3", Transactions: TransactionsPartition, Timestamp: ImplicitTimestamp}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	const digest = 7
	up := func(id string, digest uint64) Peer {
		return Peer{ID: id, Up: true, Digest: digest, DigestKnown: true, PartitionTransactions: true}
	}
	older := up("n3", digest)
	older.PartitionTransactions = false
	proposer := up("n1", digest)
	proposer.Proposes = true
	later := up("n3", digest)
	later.Proposes = true
	downProposer := Peer{ID: "n1", Proposes: true, PartitionTransactions: true}
	tests := []struct {
		name      string
		ringKnown bool
		peers     []Peer
		want      string // the transactions settled on, or a part of why not
	}{
		{"alone", true, nil, TransactionsPartition},
		{"the ring not learned yet", false, nil, "not learned the ring"},
		{"a member of a smaller id proposes", true, []Peer{proposer, up("n3", digest)}, "n1 proposes a definition too"},
		{"a member of a larger id proposes", true, []Peer{later}, TransactionsPartition},
		{"the member of a smaller id that proposes is down", true, []Peer{downProposer, later}, TransactionsPartition},
		{"founding together, every member agreeing", true, []Peer{up("n2", digest), up("n3", digest)}, TransactionsPartition},
		{"a member holds another catalog", true, []Peer{up("n2", digest), up("n3", 9)}, "n3 holds another catalog"},
		{"a member not heard yet", true, []Peer{{ID: "n2", Up: true, PartitionTransactions: true}}, "n2 has not gossiped"},
		{"a member down says nothing", true, []Peer{up("n2", digest), {ID: "n3", PartitionTransactions: true}}, TransactionsPartition},
		{"a member that runs no partition instances", true, []Peer{up("n2", digest), older}, TransactionsKey},
		{"a member down that runs none", true, []Peer{{ID: "n3"}}, TransactionsKey},
	}
	for _, tt := range tests {
		got, why := SettleOwn("n2", proposal, tt.ringKnown, digest, tt.peers)
		switch {
		case why == "" && got.Transactions != tt.want:
			t.Errorf("%s: settles %s, want %s", tt.name, got.Transactions, tt.want)
		case why != "" && !strings.Contains(why, tt.want):
			t.Errorf("%s: not settled: %s; want %s", tt.name, why, tt.want)
		case why == "" && (got.Replication != proposal.Replication || got.Name != proposal.Name):
			t.Errorf("%s: settles %+v, not the proposal", tt.name, got)
		}
	}
}

func TestMerge(t *testing.T) {
	def := func(ts uint64, replication, transactions string) Keyspace {
		k, err := Keyspace{Name: DefaultKeyspace, Replication: replication, Transactions: transactions, Timestamp: hlc.Timestamp(ts)}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	proposal := def(1, "each=3", TransactionsPartition)
	settledKey := def(2, "each=3", TransactionsKey)
	settledPartition := def(2, "each=3", TransactionsPartition)
	settledOther := def(2, "simple=3", TransactionsKey)
	created := def(100, "dc1=2", TransactionsKey)
	tests := []struct {
		name         string
		old, in      Keyspace
		want         Keyspace
		wantConflict bool
	}{
		{"a proposal yields to a settled definition", proposal, settledKey, settledKey, false},
		{"a proposal yields to a created one", proposal, created, created, false},
		{"settled is not replaced by a proposal", settledKey, proposal, settledKey, false},
		{"settled meets itself", settledKey, settledKey, settledKey, false},
		{"settled per key is kept against partition, and wins", settledKey, settledPartition, settledKey, false},
		{"settled partition is kept against per key, and loses", settledPartition, settledKey, settledPartition, true},
		{"of one transactions, the larger encoding wins", settledKey, settledOther, settledKey, true},
		{"and the smaller loses", settledOther, settledKey, settledOther, false},
		{"a created definition replaces a settled one", settledPartition, created, created, false},
		{"a settled one does not replace a created one", created, settledKey, created, false},
	}
	for _, tt := range tests {
		got, conflict := Merge(tt.old, tt.in)
		if !sameDefinition(got, tt.want) || conflict != tt.wantConflict {
			t.Errorf("%s: Merge = %s at %d, conflict %v; want %s at %d, conflict %v", tt.name,
				DescribeImplicit(got), got.Timestamp, conflict, DescribeImplicit(tt.want), tt.want.Timestamp, tt.wantConflict)
		}
	}
}

// TestCatalogSettles checks Settle and a conflict's refusal through the catalog: a
// proposal settled is persisted and travels, a settle of what is settled changes
// nothing, and a node whose settled definition loses to another node's keeps its own
// and refuses transactions until an operator's definition ends the conflict.
func TestCatalogSettles(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	c, err := Open(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Settle(Keyspace{Name: DefaultKeyspace, Replication: "each=3"}); ok || err != nil {
		t.Fatalf("Settle without a proposal: %v, %v", ok, err)
	}
	if err := c.EnsureDefault(Keyspace{Replication: "each=3", Transactions: TransactionsPartition}); err != nil {
		t.Fatal(err)
	}
	proposal, ok := c.Proposal(DefaultKeyspace)
	if !ok {
		t.Fatal("no proposal")
	}
	settled, ok, err := c.Settle(proposal)
	if !ok || err != nil || settled.Timestamp != SettledTimestamp || c.TransactionsReady(DefaultKeyspace) != nil || len(c.Definitions()) != 1 {
		t.Fatalf("Settle = %+v, %v, %v; ready %v, definitions %v", settled, ok, err, c.TransactionsReady(DefaultKeyspace), c.Definitions())
	}
	if _, ok := c.Proposal(DefaultKeyspace); ok {
		t.Fatal("a settled definition reads as a proposal")
	}
	if _, ok, _ := c.Settle(proposal); ok {
		t.Fatal("Settle settled twice")
	}
	e.Close()
	e = openEngine(t, dir)
	defer func() { e.Close() }()
	if c, err = Open(e); err != nil {
		t.Fatal(err)
	}
	if ks, err := c.Get(DefaultKeyspace); err != nil || !sameDefinition(ks, settled) {
		t.Fatalf("after a restart: %+v, %v; want the settled definition", ks, err)
	}
	// The cluster settled it per key: this node keeps its own, and refuses.
	cluster := Keyspace{Name: DefaultKeyspace, Replication: "each=3", Timestamp: SettledTimestamp}
	if changed, err := c.Apply(cluster); changed || err != nil {
		t.Fatalf("a settled definition was replaced by another: %v, %v", changed, err)
	}
	reopen := func() {
		t.Helper()
		e.Close()
		e = openEngine(t, dir)
		if c, err = Open(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, when := range []string{"met", "after a restart"} {
		if err := c.TransactionsReady(DefaultKeyspace); !errors.Is(err, ErrNotSettled) || !strings.Contains(err.Error(), "transactions key, which wins") {
			t.Fatalf("TransactionsReady once a conflict lost was %s = %v", when, err)
		}
		reopen()
	}
	if _, err := c.Apply(Keyspace{Name: DefaultKeyspace, Replication: "each=3", Timestamp: 100}); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"created", "after a restart"} {
		if err := c.TransactionsReady(DefaultKeyspace); err != nil {
			t.Fatalf("a created definition did not end the conflict (%s): %v", when, err)
		}
		reopen()
	}
}
