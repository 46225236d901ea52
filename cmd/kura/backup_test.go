package main

// Issue 45: backups. A keyspace dropped by mistake comes back from a snapshot taken on
// every node, with real `kura server` processes and the CLI's commands.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
)

// TestRestoreBringsBackADroppedKeyspace: 3 nodes in 2 DCs, keyspace app dc1=2,dc2=1, 200
// keys written at QUORUM; kura snapshot create --all; kura keyspace drop app; kura
// restore keyspace app. Every acknowledged key must read at QUORUM with its value, and a
// second restore must write nothing anew (the keys it finds are its own).
func TestRestoreBringsBackADroppedKeyspace(t *testing.T) {
	t.Parallel()
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

// TestClusterSnapshotIsACut: writes go on at QUORUM, through two nodes, while kura
// snapshot create --all runs. Every write acknowledged before the command began must be
// stamped at or below the snapshot's cut, and every write at or below the cut must come
// back from a restore of the snapshot after a drop, and none above it. The writers go
// on until each has had writes acknowledged after the command returned, so the test
// sees writes on both sides of the cut.
func TestClusterSnapshotIsACut(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	n1, n2, n3 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc2")
	c.startAll(n1, n2, n3)
	c.createKeyspace(n1, "dc1=2,dc2=1")

	type ack struct {
		key  string
		ts   hlc.Timestamp
		when time.Time // when the acknowledgement came
	}
	var mu sync.Mutex
	var acks []ack
	var snapshotDone time.Time // set when the command returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range []*lcNode{n1, n3} {
		cl := mustDialPinned(t, n)
		wg.Go(func() {
			afterDone := 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("%s-%06d", n.id, i)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				ts, err := cl.Put(ctx, "app", []byte(key), []byte("v-"+key), consistency.Quorum)
				cancel()
				if err != nil {
					continue // not acknowledged: the snapshot may hold it or not
				}
				now := time.Now()
				mu.Lock()
				acks = append(acks, ack{key: key, ts: ts, when: now})
				if !snapshotDone.IsZero() && now.After(snapshotDone) {
					afterDone++
				}
				mu.Unlock()
				if afterDone >= 20 {
					return
				}
			}
		})
	}
	waitAcks := func(n int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			got := len(acks)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d writes acknowledged in 30 s, want %d", got, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAcks(100)
	began := time.Now()
	out := kuraOK(t, "snapshot", "create", "cut", "--all", "--addr", n2.client)
	mu.Lock()
	snapshotDone = time.Now()
	mu.Unlock()
	t.Logf("kura snapshot create --all took %v:\n%s", snapshotDone.Sub(began).Round(time.Millisecond), out)
	wg.Wait()
	close(stop)

	cut := snapshotCut(t, n2.client, "cut")
	var below, above []string
	for _, a := range acks {
		if a.when.Before(began) && a.ts > cut {
			t.Errorf("%s was acknowledged before the snapshot began, stamped %s, above the cut %s", a.key, a.ts, cut)
		}
		if a.ts <= cut {
			below = append(below, a.key)
		} else {
			above = append(above, a.key)
		}
	}
	t.Logf("%d writes acknowledged: %d at or below the cut %s, %d above", len(acks), len(below), cut, len(above))

	kuraOK(t, "keyspace", "drop", "app", "--addr", n1.client)
	out = kuraOK(t, "restore", "keyspace", "app", "--snapshot", "cut", "--all", "--addr", n1.client, "--timeout", "2m")
	t.Logf("kura restore keyspace: %s", out)
	waitKeyspaceEverywhere(t, "app", crashNodes(n1, n2, n3))
	reader := mustDialPinned(t, n2)
	readKeys(t, reader, "n2", below, consistency.Quorum)
	for _, key := range above {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		item, found, err := reader.Get(ctx, "app", []byte(key), consistency.All)
		cancel()
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		if found {
			t.Errorf("%s, stamped above the cut, came back from the snapshot (value %q)", key, item.Value)
		}
	}
}

// snapshotCut returns the cut of cluster snapshot name as the node at addr has it.
func snapshotCut(t *testing.T, addr, name string) hlc.Timestamp {
	t.Helper()
	conn, err := client.DialNode(addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kurav1.NewAdminClient(conn).ListSnapshots(ctx, &kurav1.ListSnapshotsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range resp.GetSnapshots() {
		if s.GetName() == name && s.GetCut() != 0 {
			return hlc.Timestamp(s.GetCut())
		}
	}
	t.Fatalf("%s has no cluster snapshot %s: %v", addr, name, resp.GetSnapshots())
	return 0
}
