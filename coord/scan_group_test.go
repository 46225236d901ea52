package coord

import (
	"testing"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/placement"
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

// Two ranges of a scan share their requirement and candidates, worked out once, only
// when their replicas are the same, in the same order, with the same DCs and states.
func TestScanReplicasKeySeparatesDifferentReplicas(t *testing.T) {
	base := []placement.Member{member("n1", "dc1", cluster.StateUp, false), member("n2", "dc1", cluster.StateUp, false), member("n3", "dc2", cluster.StateUp, false)}
	key := func(ms []placement.Member) string { return string(appendReplicasKey(nil, ms)) }
	if key(base) != key(append([]placement.Member(nil), base...)) {
		t.Fatal("the same replicas give different keys")
	}
	differentKeys(t, map[string]string{
		"base":    key(base),
		"order":   key([]placement.Member{base[1], base[0], base[2]}),
		"fewer":   key(base[:2]),
		"state":   key([]placement.Member{base[0], member("n2", "dc1", cluster.StateDown, false), base[2]}),
		"pending": key([]placement.Member{base[0], base[1], member("n3", "dc2", cluster.StateUp, true)}),
		"dc":      key([]placement.Member{base[0], base[1], member("n3", "dc1", cluster.StateUp, false)}),
		"quoting": key([]placement.Member{member("n1\" \"dc1", "x", cluster.StateUp, false), base[1], base[2]}),
	})
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
