package main

import (
	"strings"
	"testing"
	"time"
)

// Issue 43, item 8: a node that left or was removed stayed in kura status for ever,
// counted in its header, with its uptime still counting. Three real `kura server`
// processes; n3 is decommissioned with the CLI, and its process keeps running (still
// gossiping, its start time too, as a decommissioned node does until it is stopped).
// Afterwards kura status on each remaining node neither lists nor counts n3; --all lists
// it, left, without an uptime. The decommission leaves dc1 two nodes for the default
// keyspace (each=3): it is refused first, saying so and naming --force, and then forced.
func TestStatusDropsDecommissionedNode(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	n1, n2, n3 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc1")
	c.startAll(n1, n2, n3)

	code, out, errOut := kura("node", "decommission", "--addr", n3.client, "--timeout", "20s")
	if want := "decommissioning n3 would leave dc1 with 2 nodes for keyspace default (each=3)"; code == 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "kura node decommission --force") {
		t.Fatalf("decommission of n3 below the default keyspace's each=3: exit %d, stdout %q, stderr %q; want a refusal saying %q and naming --force", code, out, errOut, want)
	}
	start := time.Now()
	out = kuraOK(t, "node", "decommission", "--force", "--addr", n3.client, "--timeout", "20s")
	t.Logf("kura node decommission of n3 took %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))

	// Gossip takes n3's new status to n1 and n2 within a few rounds of 200 ms; the
	// deadline of 30 s leaves room for CI's loaded 2-core machine, with another test's
	// cluster beside (t.Parallel). Before the fix, n3 stayed listed (left down, with its
	// uptime) and counted ("3 nodes, 2 up") for ever.
	deadline := time.Now().Add(30 * time.Second)
	for _, o := range []*lcNode{n1, n2} {
		for {
			rows, out, err := kuraStatus(o.client)
			why := ""
			switch header := strings.SplitN(out, "\n", 2)[0]; {
			case err != nil:
				why = err.Error()
			case viewMismatch(rows, allNormalUp(n1, n2)) != "":
				why = viewMismatch(rows, allNormalUp(n1, n2))
			case !strings.HasSuffix(header, ": 2 nodes, 2 up"):
				why = "its header counts n3: " + header
			}
			if why == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kura status on %s after n3's decommission: %s\n%s", o.id, why, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
		// n3 is out of o's listing, so o knows it left: --all lists it so, without an
		// uptime, and counts it apart.
		left := map[string]string{"n1": "normal up", "n2": "normal up", "n3": "left down"}
		rows, out, err := kuraStatus(o.client, "--all")
		if err != nil {
			t.Fatal(err)
		}
		if m := viewMismatch(rows, left); m != "" {
			t.Errorf("kura status --all on %s: %s\n%s", o.id, m, out)
		}
		if !strings.Contains(out, ": 2 nodes, 2 up; also 1 node that left or was removed\n") {
			t.Errorf("kura status --all on %s does not count n3 apart:\n%s", o.id, out)
		}
		if up := cellOf(out, "n1", "UPTIME"); up == "" || up == "-" {
			t.Errorf("kura status --all on %s shows n1, up, with an uptime of %q:\n%s", o.id, up, out)
		}
		if up := cellOf(out, "n3", "UPTIME"); up != "-" {
			t.Errorf("kura status --all on %s shows n3 with an uptime of %q, want none:\n%s", o.id, up, out)
		}
	}
}

// cellOf returns node id's cell in column of kura status's table: the table is aligned,
// so each cell starts where its column's heading does (cells such as LOAD's "2.9 KiB"
// hold spaces, so the row's fields cannot be counted); "" when there is no such cell.
func cellOf(out, id, column string) string {
	lines := strings.Split(out, "\n")
	at := -1
	for _, line := range lines {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "NODE":
			at = strings.Index(line, " "+column+" ") + 1
		case at > 0 && len(f) > 0 && f[0] == id && len(line) > at:
			cell, _, _ := strings.Cut(line[at:], " ")
			return cell
		}
	}
	return ""
}
