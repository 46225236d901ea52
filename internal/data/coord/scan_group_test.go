package coord

import (
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/placement"
)

func member(id, dc string, state cluster.State, pending bool) placement.Member {
	return placement.Member{ID: id, DC: dc, State: state, Pending: pending}
}

// differentKeys fails when two of the cases give the same key.
func differentKeys(t *testing.T, keys map[string]string) {
	t.Helper()
	seen := map[string]string{}
	for name, k := range keys {
		if other, ok := seen[k]; ok {
			t.Errorf("%s gives the same key as %s: %s", name, other, k)
		}
		seen[k] = name
	}
}

// Ranges share the work of their requirement and candidates when they share their
// replica list: a list is named by its memory, so equal lists laid out apart are two.
func TestScanReplicaListIsTheSharedSlice(t *testing.T) {
	replicas := []placement.Member{member("n1", "dc1", cluster.StateUp, false), member("n2", "dc1", cluster.StateUp, false), member("n3", "dc2", cluster.StateUp, false)}
	copied := append([]placement.Member(nil), replicas...)
	if listOf(replicas) != listOf(replicas[:3:3]) {
		t.Error("one list named twice")
	}
	if listOf(replicas) == listOf(copied) || listOf(replicas) == listOf(replicas[:2]) {
		t.Error("lists apart, or a shorter one, named as the same")
	}
	if listOf(nil) != listOf([]placement.Member{}) {
		t.Error("empty lists named apart")
	}
}

// Two ranges share a gatherer group only when every input of the gathering is the same:
// the requirement and the candidates, in the order they would be asked.
func TestScanCandidatesKeySeparatesWhatTheGathererReads(t *testing.T) {
	up := func(id, dc string) target { return target{Member: member(id, dc, cluster.StateUp, false)} }
	base := []target{up("n1", "dc1"), up("n2", "dc1"), up("n3", "dc2")}
	quorum := consistency.Requirement{Total: 2}
	key := func(r consistency.Requirement, ts []target) string { return string(appendCandidatesKey(nil, r, ts)) }
	same := append([]target(nil), base...)
	for i := range same {
		same[i].group, same[i].slot = 7, i+3 // the range's own indices, not the gathering's
	}
	if key(quorum, base) != key(quorum, same) {
		t.Fatal("the same candidates and requirement give different keys")
	}
	differentKeys(t, map[string]string{
		"base":      key(quorum, base),
		"order":     key(quorum, []target{base[1], base[0], base[2]}),
		"fewer":     key(quorum, base[:2]),
		"total":     key(consistency.Requirement{Total: 3}, base),
		"per DC":    key(consistency.Requirement{Total: 2, PerDC: map[string]int{"dc1": 2}}, base),
		"per DC n":  key(consistency.Requirement{Total: 2, PerDC: map[string]int{"dc1": 1}}, base),
		"two DCs":   key(consistency.Requirement{Total: 2, PerDC: map[string]int{"dc1": 1, "dc2": 1}}, base),
		"hinted":    key(consistency.Requirement{Total: 2, Hinted: true}, base),
		"candidate": key(quorum, []target{base[0], base[1], up("n4", "dc2")}),
	})
}
