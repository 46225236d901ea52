package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
)

// Issue 47: with one of six nodes asleep (n6; RF 3, n1 the only tier-0 node, in every
// replica set), a second sleeper sharing ranges with it would leave them with one awake
// replica, too few for QUORUM, the level a keyspace nobody declared is kept for
// (EACH_QUORUM, in one DC). kura power sleep must refuse it and say why, and QUORUM reads
// and writes must go on. n5 is the node asked: n6's holders are the four awake nodes
// first by tier and id, n1 to n4, and a holder keeps the sleeper's writes, so it is not
// put to sleep whatever the levels.
func TestPowerSleepRefusesWhatQuorumNeeds(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	n1 := c.add("n1", "dc1")
	var tier1 []*lcNode
	for _, id := range []string{"n2", "n3", "n4", "n5", "n6"} {
		tier1 = append(tier1, c.add(id, "dc1", "--power-tier", "1"))
	}
	c.startAll(append([]*lcNode{n1}, tier1...)...)
	c.createKeyspace(n1, "simple=3")
	keys := putKeys(t, mustDialPinned(t, n1), "n1", "a", 50, consistency.Quorum)

	if out := kuraOK(t, "power", "sleep", "n6", "--addr", n1.client, "--timeout", "1m"); !strings.Contains(out, "n6 is asleep") {
		t.Fatalf("kura power sleep n6: %q", out)
	}
	views := allNormalUp(append([]*lcNode{n1}, tier1...)...)
	views["n6"] = "normal asleep"
	waitViews(t, "n6 asleep", 30*time.Second, []*lcNode{n1, tier1[3]}, views)

	code, out, errOut := kura("power", "sleep", "n5", "--addr", n1.client, "--timeout", "1m")
	want := "1 of its 3 replicas in dc1 would be awake, EACH_QUORUM needs 2"
	named := regexp.MustCompile(`node n5 may not sleep: keyspace \S+, [1-9][0-9]* of its [1-9][0-9]* ranges would be short of awake replicas`)
	if code == 0 || !named.MatchString(errOut) || !strings.Contains(errOut, want) {
		t.Fatalf("kura power sleep n5: exit %d, %s%s; want a refusal saying %q", code, out, errOut, want)
	}
	t.Logf("refused: %s", strings.TrimSpace(errOut))

	more := putKeys(t, mustDialPinned(t, n1), "n1", "b", 50, consistency.Quorum)
	readKeys(t, mustDialPinned(t, n1), "n1", append(keys, more...), consistency.Quorum)
}
