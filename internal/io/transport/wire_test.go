package transport_test

import (
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/io/transport"
)

// TestWireKinds pins the kind numbers of the internode wire to the table in kinds.go: a
// node misreads every frame of a peer that numbers kinds differently, so this list changes
// only by lines added for new kinds.
func TestWireKinds(t *testing.T) {
	wire := []struct {
		number   uint8
		name     string
		reserved bool // not registered yet; if it is, with this number
	}{
		{1, "hello", false},
		{2, "mutate", false},
		{3, "read", false},
		{4, "scan", false},
		{5, "chunk_read", false},
		{6, "gossip", false},
		{7, "gossip_whois", false},
		{8, "schema", false},
		{9, "schema_pull", false},
		{10, "chord", false},
		{11, "latency_probe", false},
		{12, "stream_range", false},
		{13, "tree_digest", false},
		{14, "stream_gains", false},
		{15, "ring_pull", false},
		{16, "clock_ping", false},
		{17, "paxos_prepare", false},
		{18, "paxos_propose", false},
		{19, "paxos_commit", false},
		{20, "scan_keys", false},
		{21, "offload", false},
		{22, "hints_flush", false},
		{23, "power", false},
		{24, "scan_progress", false},
		{25, "rebalance", false},
		{26, "read_many", false},
	}
	inTable := make(map[uint8]bool)
	for _, k := range wire {
		inTable[k.number] = true
		t.Run(k.name, func(t *testing.T) {
			kind, ok := transport.KindByName(k.name)
			if !ok && k.reserved {
				if got := transport.Kind(k.number).String(); got != fmt.Sprintf("kind(%d)", k.number) {
					t.Errorf("kind %d, reserved for %q, is registered as %q", k.number, k.name, got)
				}
				return
			}
			if !ok || kind != transport.Kind(k.number) {
				t.Errorf("KindByName(%q) = %d, %v; want %d, true", k.name, kind, ok, k.number)
			}
			if got := transport.Kind(k.number).String(); got != k.name {
				t.Errorf("Kind(%d).String() = %q, want %q", k.number, got, k.name)
			}
		})
	}
	// Below 200, where tests' own kinds start, every kind must be in the table.
	for number := range uint8(200) {
		name := transport.Kind(number).String()
		if !inTable[number] && name != fmt.Sprintf("kind(%d)", number) {
			t.Errorf("kind %d %q is missing from the table", number, name)
		}
	}
}
