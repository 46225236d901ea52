package schema

import (
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
)

// TestCompileNextReplication: a move may change the replication of a replicated
// keyspace of any partitioner (kura keyspace alter), never of an erasure-coded one, and
// only while it moves; a next replication equal to the current one is no change.
func TestCompileNextReplication(t *testing.T) {
	tests := []struct {
		name      string
		ks        Keyspace
		wantErr   bool
		wantNext  string // the compiled NextReplication
		wantRF    int    // NextStrategy's replication factor; 0: nil
		wantAlter bool   // ChangesReplication
	}{
		{name: "grouped raised", ks: Keyspace{Name: "ks", Replication: "dc1=2", Moving: true, NextReplication: "dc2=1, dc1=3"},
			wantNext: "dc1=3,dc2=1", wantRF: 4, wantAlter: true},
		{name: "hash lowered", ks: Keyspace{Name: "ks", Replication: "simple=3", Partitioner: "hash", Moving: true, NextReplication: "2"},
			wantNext: "simple=2", wantRF: 2, wantAlter: true},
		{name: "ordered keeps its splits", ks: Keyspace{Name: "ks", Replication: "dc1=1", Partitioner: "ordered", Splits: [][]byte{[]byte("m")},
			Moving: true, NextSplits: [][]byte{[]byte("m")}, NextReplication: "dc1=2"}, wantNext: "dc1=2", wantRF: 2, wantAlter: true},
		{name: "rebalance keeps the replication", ks: Keyspace{Name: "ks", Replication: "dc1=2", Partitioner: "ordered", Moving: true},
			wantRF: 2},
		{name: "same replication is no change", ks: Keyspace{Name: "ks", Replication: "dc1=2", Partitioner: "ordered", Moving: true, NextReplication: "dc1=2"},
			wantRF: 2},
		{name: "not moving", ks: Keyspace{Name: "ks", Replication: "dc1=2"}},
		{name: "next replication without a move", ks: Keyspace{Name: "ks", Replication: "dc1=2", NextReplication: "dc1=3"}, wantErr: true},
		{name: "grouped moving without a next replication", ks: Keyspace{Name: "ks", Replication: "dc1=2", Moving: true}, wantErr: true},
		{name: "grouped moving to its own replication", ks: Keyspace{Name: "ks", Replication: "dc1=2", Moving: true, NextReplication: "dc1=2"}, wantErr: true},
		{name: "bad next replication", ks: Keyspace{Name: "ks", Replication: "dc1=2", Moving: true, NextReplication: "dc1=0"}, wantErr: true},
		{name: "erasure-coded", ks: Keyspace{Name: "ks", Erasure: Erasure{M: 6, K: 4}, Moving: true, NextReplication: "simple=2"}, wantErr: true},
		{name: "next split keys on grouped", ks: Keyspace{Name: "ks", Replication: "dc1=2", Moving: true, NextSplits: [][]byte{[]byte("a")},
			NextReplication: "dc1=3"}, wantErr: true},
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
			if got.NextReplication != tt.wantNext {
				t.Errorf("NextReplication = %q, want %q", got.NextReplication, tt.wantNext)
			}
			rf := 0
			if got.NextStrategy() != nil {
				rf = got.NextStrategy().ReplicationFactor()
			}
			if rf != tt.wantRF {
				t.Errorf("NextStrategy() places %d replicas, want %d", rf, tt.wantRF)
			}
			if (got.NextPartition() != nil) != got.Moving {
				t.Errorf("NextPartition() = %v with Moving %v", got.NextPartition(), got.Moving)
			}
			if got.ChangesReplication() != tt.wantAlter {
				t.Errorf("ChangesReplication() = %v, want %v", got.ChangesReplication(), tt.wantAlter)
			}
		})
	}
}

// TestCatalogPersistsNextReplication: a move of the replication survives a reopen, is in
// the digest, and its settling leaves the bytes a keyspace had before alter existed.
func TestCatalogPersistsNextReplication(t *testing.T) {
	c, engine := openCatalog(t)
	tests := []struct {
		name string
		ks   Keyspace
	}{
		{"grouped", Keyspace{Name: "app", Replication: "dc1=2", Timestamp: 10}},
		{"ordered with splits", Keyspace{Name: "logs", Replication: "dc1=2", Partitioner: "ordered", Timestamp: 10,
			Splits: [][]byte{[]byte("k"), []byte("t")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.Apply(tt.ks); err != nil {
				t.Fatal(err)
			}
			created, err := c.Get(tt.ks.Name)
			if err != nil {
				t.Fatal(err)
			}
			settledBytes := string(encode(created).Value)
			before := c.Digest()
			moving := tt.ks
			moving.Timestamp, moving.Moving, moving.NextSplits, moving.NextReplication = 20, true, tt.ks.Splits, "dc1=3,dc2=1"
			if _, err := c.Apply(moving); err != nil {
				t.Fatal(err)
			}
			if c.Digest() == before {
				t.Error("the digest ignores a change of replication in progress")
			}
			reopened, err := Open(engine)
			if err != nil {
				t.Fatal(err)
			}
			if reopened.Digest() != c.Digest() {
				t.Error("the digest changed across a reopen")
			}
			got, err := reopened.Get(tt.ks.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Moving || got.NextReplication != "dc1=3,dc2=1" || !slices.EqualFunc(got.NextSplits, tt.ks.Splits, slices.Equal) ||
				got.NextStrategy() == nil || got.NextStrategy().String() != "dc1=3,dc2=1" {
				t.Errorf("reopened %+v, want the move to dc1=3,dc2=1 with the splits kept", got)
			}
			settled := got
			settled.Timestamp, settled.Moving, settled.NextSplits, settled.NextReplication = 30, false, nil, ""
			settled.Replication = "dc1=3,dc2=1"
			if _, err := c.Apply(settled); err != nil {
				t.Fatal(err)
			}
			now, _ := c.Get(tt.ks.Name)
			if v := string(encode(now).Value); v != "dc1=3,dc2=1"+settledBytes[len("dc1=2"):] {
				t.Errorf("settled entry %q, want the bytes of %q under the new replication", v, settledBytes)
			}
		})
	}
}

// TestDecodeRefusesAStrayNextReplication: a next replication field outside a move is a
// malformed entry, not one silently read without it.
func TestDecodeRefusesAStrayNextReplication(t *testing.T) {
	rec := lww.Record{Key: []byte("app"), Value: []byte("dc1=2\x00grouped\x00\x000000000000000000\x00\x00s\x00rdc1=3"), Timestamp: 10}
	if k, err := decode(rec); err == nil {
		t.Errorf("decode(%q) = %+v, want an error", rec.Value, k)
	}
}
