package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
)

// Issue 47: with one of four nodes asleep (RF 3, n1 the only tier-0 node, in every
// replica set), a second sleeper would leave ranges with one awake replica, too few for
// QUORUM, the level a keyspace nobody declared is kept for (EACH_QUORUM, in one DC). kura
// power sleep must refuse it and say why, and QUORUM reads and writes must go on.
func TestPowerSleepRefusesWhatQuorumNeeds(t *testing.T) {
	c := newLifecycleCluster(t)
	n1 := c.add("n1", "dc1")
	var tier1 []*lcNode
	for _, id := range []string{"n2", "n3", "n4"} {
		tier1 = append(tier1, c.add(id, "dc1", "--power-tier", "1"))
	}
	c.startAll(append([]*lcNode{n1}, tier1...)...)
	c.createKeyspace(n1, "simple=3")
	keys := putKeys(t, mustDialPinned(t, n1), "n1", "a", 50, consistency.Quorum)

	if out := kuraOK(t, "power", "sleep", "n4", "--addr", n1.client, "--timeout", "1m"); !strings.Contains(out, "n4 is asleep") {
		t.Fatalf("kura power sleep n4: %q", out)
	}
	waitViews(t, "n4 asleep", 30*time.Second, []*lcNode{n1, tier1[0], tier1[1]},
		map[string]string{"n1": "normal up", "n2": "normal up", "n3": "normal up", "n4": "normal asleep"})

	code, out, errOut := kura("power", "sleep", "n3", "--addr", n1.client, "--timeout", "1m")
	want := "1 of its 3 replicas in dc1 would be awake, EACH_QUORUM needs 2"
	if code == 0 || !strings.Contains(errOut, "node n3 may not sleep: keyspace ") || !strings.Contains(errOut, want) {
		t.Fatalf("kura power sleep n3: exit %d, %s%s; want a refusal saying %q", code, out, errOut, want)
	}
	t.Logf("refused: %s", strings.TrimSpace(errOut))

	more := putKeys(t, mustDialPinned(t, n1), "n1", "b", 50, consistency.Quorum)
	readKeys(t, mustDialPinned(t, n1), "n1", append(keys, more...), consistency.Quorum)
}
