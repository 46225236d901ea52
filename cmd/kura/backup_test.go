package main

// Issue 45: backups. A keyspace dropped by mistake comes back from a snapshot taken on
// every node, with real `kura server` processes and the CLI's commands.

import (
	"strings"
	"testing"

	"github.com/kuradb/kura/consistency"
)

// TestRestoreBringsBackADroppedKeyspace: 3 nodes in 2 DCs, keyspace app dc1=2,dc2=1, 200
// keys written at QUORUM; kura snapshot create --all; kura keyspace drop app; kura
// restore keyspace app. Every acknowledged key must read at QUORUM with its value, and a
// second restore must write nothing anew (the keys it finds are its own).
func TestRestoreBringsBackADroppedKeyspace(t *testing.T) {
	c := newLifecycleCluster(t)
	n1, n2, n3 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc2")
	c.startAll(n1, n2, n3)
	c.createKeyspace(n1, "dc1=2,dc2=1")
	keys := putKeys(t, mustDialPinned(t, n1), "n1", "k", 200, consistency.Quorum)

	out := kuraOK(t, "snapshot", "create", "nightly", "--all", "--addr", n1.client)
	for _, n := range []*lcNode{n1, n2, n3} {
		if !strings.Contains(out, n.id+" ") {
			t.Fatalf("kura snapshot create --all did not list %s:\n%s", n.id, out)
		}
	}
	list := kuraOK(t, "snapshot", "list", "--addr", strings.Join([]string{n1.client, n2.client, n3.client}, ","))
	if got := strings.Count(list, "nightly"); got != 3 {
		t.Fatalf("kura snapshot list shows %d snapshots named nightly, want 3:\n%s", got, list)
	}

	kuraOK(t, "keyspace", "drop", "app", "--addr", n2.client)
	if code, _, errOut := kura("get", "k-0000", "--keyspace", "app", "--addr", n1.client); code == 0 {
		t.Fatalf("app still reads after the drop: %s", errOut)
	}

	out = kuraOK(t, "restore", "keyspace", "app", "--snapshot", "nightly", "--all", "--addr", n3.client, "--timeout", "2m")
	t.Logf("kura restore keyspace: %s", out)
	if !strings.Contains(out, "created keyspace app again") || !strings.Contains(out, "200 keys read") || !strings.Contains(out, "200 written anew") {
		t.Fatalf("kura restore keyspace should create app again and write its 200 keys anew:\n%s", out)
	}
	waitKeyspaceEverywhere(t, "app", crashNodes(n1, n2, n3))
	readKeys(t, mustDialPinned(t, n2), "n2", keys, consistency.Quorum)

	// Run again, it finds every key written since the drop (by the first run): nothing
	// is written anew, so a restore repeated after a failure undoes no write.
	out = kuraOK(t, "restore", "keyspace", "app", "--snapshot", "nightly", "--all", "--addr", n1.client, "--timeout", "2m")
	if !strings.Contains(out, "0 written anew") || !strings.Contains(out, "200 left to a newer write") {
		t.Fatalf("a second restore should leave every key to the first one's writes:\n%s", out)
	}

	kuraOK(t, "snapshot", "delete", "nightly", "--all", "--addr", n1.client)
	if list := kuraOK(t, "snapshot", "list", "--all", "--addr", n1.client); strings.Contains(list, "nightly") {
		t.Fatalf("snapshot nightly still listed after its delete:\n%s", list)
	}
}
