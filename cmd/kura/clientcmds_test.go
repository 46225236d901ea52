package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/io/topology"
)

func TestKeyspaceCreateWithErasure(t *testing.T) {
	c := startThreeDC(t)
	addr := c.Nodes[0].ClientAddr()

	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"keyspace", "create", "coded", "--erasure", "5,3"}, 0, "keyspace coded created"},
		{[]string{"keyspace", "list"}, 0, "coded\treplication=simple=1\tpartitioner=grouped\terasure=5,3"},
		{[]string{"keyspace", "describe", "coded"}, 0, "erasure: 5,3 (5 chunks per value, any 3 rebuild it)"},
		{[]string{"put", "--keyspace", "coded", "--consistency", "QUORUM", "greeting", "hello"}, 0, ""},
		{[]string{"get", "--keyspace", "coded", "greeting"}, 0, "hello"},
		{[]string{"keyspace", "create", "bad", "--erasure", "3,5"}, 1, "want 1 <= k <= m"},
		{[]string{"keyspace", "create", "bad", "--erasure", "5"}, 2, "want M,K"},
		{[]string{"keyspace", "create", "both", "--erasure", "5,3", "--replication", "simple=3"}, 2, "--replication dc1=2,dc2=1 | --erasure M,K"},
		{[]string{"keyspace", "create", "neither"}, 2, "--replication dc1=2,dc2=1 | --erasure M,K"},
	}
	for _, tt := range tests {
		code, out, errOut := kura(append(tt.args, "--addr", addr)...)
		if code != tt.code || !strings.Contains(out+errOut, tt.contains) {
			t.Errorf("kura %v = exit %d, %q %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.contains)
		}
	}
}

// TestPutTTLTruncateAndDrop writes with --ttl, reads the remaining TTL back, truncates,
// and drops keyspaces, the implicit default one included, then creates them again empty.
func TestPutTTLTruncateAndDrop(t *testing.T) {
	c := startExample(t, "lan-3")
	addr := c.Nodes[0].ClientAddr()
	steps := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"keyspace", "create", "app", "--replication", "simple=3"}, 0, "keyspace app created"},
		{[]string{"put", "--keyspace", "app", "--ttl", "1h", "session", "s1"}, 0, ""},
		{[]string{"get", "--keyspace", "app", "session"}, 0, "s1expires in 59m"},
		{[]string{"put", "--keyspace", "app", "--ttl", "-1s", "session", "s2"}, 2, "--ttl -1s is negative"},
		{[]string{"put", "--keyspace", "app", "forever", "f"}, 0, ""},
		{[]string{"keyspace", "truncate", "app"}, 0, "keyspace app truncated at"},
		{[]string{"get", "--keyspace", "app", "session"}, 1, "not found"},
		{[]string{"get", "--keyspace", "app", "forever"}, 1, "not found"},
		{[]string{"put", "--keyspace", "app", "forever", "again"}, 0, ""},
		{[]string{"get", "--keyspace", "app", "forever"}, 0, "again"},
		{[]string{"keyspace", "truncate", "nope"}, 1, "no such keyspace"},
		{[]string{"keyspace", "truncate"}, 2, "keyspace truncate NAME"},
		{[]string{"keyspace", "drop", "app"}, 0, "keyspace app dropped at"},
		{[]string{"get", "--keyspace", "app", "forever"}, 1, "no such keyspace"},
		{[]string{"keyspace", "drop", "app"}, 1, "no such keyspace"},
		{[]string{"keyspace", "create", "app", "--replication", "simple=2"}, 0, "keyspace app created"},
		{[]string{"get", "--keyspace", "app", "forever"}, 1, "not found"},
		{[]string{"put", "k", "in-default"}, 0, ""},
		{[]string{"keyspace", "create", "default", "--replication", "simple=1"}, 1, "drop it first"},
		{[]string{"keyspace", "drop", "default"}, 0, "keyspace default dropped at"},
		{[]string{"keyspace", "create", "default", "--replication", "simple=1"}, 0, "keyspace default created"},
		{[]string{"get", "k"}, 1, "not found"},
		{[]string{"keyspace", "drop"}, 2, "keyspace drop NAME"},
	}
	for _, step := range steps {
		code, out, errOut := kura(append(step.args, "--addr", addr)...)
		if code != step.code || !strings.Contains(out+errOut, step.contains) {
			t.Errorf("kura %v = exit %d, %q %q; want exit %d saying %q", step.args, code, out, errOut, step.code, step.contains)
		}
		if step.args[0] == "get" && step.code == 0 && !strings.Contains(step.contains, "expires") && strings.Contains(errOut, "expires") {
			t.Errorf("kura %v reports an expiry for a value written without one: %q", step.args, errOut)
		}
	}
}

// TestCas runs kura cas: each condition, both serial levels, and the usage errors.
func TestCas(t *testing.T) {
	c := startThreeDC(t)
	addr := c.Nodes[0].ClientAddr()
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"keyspace", "create", "app", "--replication", "simple=3"}, 0, "keyspace app created"},
		{[]string{"cas", "--keyspace", "app", "lock", "alice", "--if-absent"}, 0, "applied (was (none))"},
		{[]string{"cas", "--keyspace", "app", "lock", "bob", "--if-absent"}, 1, "not applied (is alice)"},
		{[]string{"cas", "--keyspace", "app", "lock", "bob", "--if-equals", "alice", "--consistency", "LOCAL_SERIAL"}, 0, "applied (was alice)"},
		{[]string{"get", "--keyspace", "app", "--consistency", "SERIAL", "lock"}, 0, "bob"},
		{[]string{"cas", "--keyspace", "app", "lock", "--delete", "--if-equals", "alice"}, 1, "not applied (is bob)"},
		{[]string{"cas", "--keyspace", "app", "lock", "--delete", "--if-present"}, 0, "applied (was bob)"},
		{[]string{"get", "--keyspace", "app", "--consistency", "SERIAL", "lock"}, 1, "not found"},
		{[]string{"cas", "--keyspace", "app", "lock", "v", "--if-absent", "--consistency", "QUORUM"}, 1, "SERIAL or LOCAL_SERIAL, not QUORUM"},
		{[]string{"put", "--keyspace", "app", "--consistency", "SERIAL", "lock", "v"}, 1, "level of lightweight transactions"},
		{[]string{"cas", "--keyspace", "app", "lock", "v"}, 2, "one condition"},
		{[]string{"cas", "--keyspace", "app", "lock", "v", "--if-absent", "--if-present"}, 2, "one condition"},
		{[]string{"cas", "--keyspace", "app", "lock", "v", "--delete", "--if-present"}, 2, "--delete deletes the key"},
		{[]string{"cas", "--keyspace", "app", "lock", "--if-present"}, 2, "--delete deletes the key"},
	}
	for _, tt := range tests {
		code, out, errOut := kura(append(tt.args, "--addr", addr)...)
		if code != tt.code || !strings.Contains(out+errOut, tt.contains) {
			t.Errorf("kura %v = exit %d, %q %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.contains)
		}
	}
}

// startThreeDC starts the three-dc example in this process with client APIs, converged,
// and closes it when the test ends.
func startThreeDC(t *testing.T) *embedded.Cluster { return startExample(t, "three-dc") }

// startExample starts a shipped topology example in this process with client APIs,
// converged, and closes it when the test ends.
func startExample(t *testing.T, name string) *embedded.Cluster {
	t.Helper()
	return startExampleWith(t, name, node.Config{})
}

// startExampleWith is startExample with every node's settings from cfg.
func startExampleWith(t *testing.T, name string, cfg node.Config) *embedded.Cluster {
	t.Helper()
	topo, err := topology.Example(name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{ClientAPI: true, Node: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOperatorCommands runs the commands an operator reaches for first, each against the
// node it names, and the errors that must say what to do.
func TestOperatorCommands(t *testing.T) {
	c := startExample(t, "lan-3")
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.ClientAddr()
	}
	tests := []struct {
		args     []string
		code     int
		contains []string
	}{
		{[]string{"status", "--addr", addrs[1]}, 0, []string{"as seen by " + c.Nodes[1].ID(), "3 nodes, 3 up", "LOAD", "OWNS", "UPTIME"}},
		{[]string{"status", "--addr", addrs[2], "--json"}, 0, []string{`"self": "` + c.Nodes[2].ID() + `"`}},
		// No node left: --all lists the same three, and says of no other.
		{[]string{"status", "--all", "--addr", addrs[0]}, 0, []string{"as seen by " + c.Nodes[0].ID(), "3 nodes, 3 up\n", "UPTIME"}},
		{[]string{"info", "--addr", addrs[2]}, 0, []string{c.Nodes[2].ID(), "version", "kura ", "hints pending", "gossip"}},
		{[]string{"keyspace", "create", "app", "--replication", "simple=2", "--addr", addrs[0]}, 0, []string{"keyspace app created"}},
		{[]string{"keyspace", "create", "big", "--replication", "simple=5", "--addr", addrs[0]}, 1, []string{"5 replicas, but the cluster has 3 node(s)"}},
		{[]string{"ring", "--keyspace", "app", "--addr", addrs[0]}, 0, []string{"replication simple=2", "REPLICA OF"}},
		{[]string{"ring", "--tokens", "--addr", addrs[0]}, 0, []string{"TOKEN", c.Nodes[0].ID()}},
		{[]string{"ring", "--keyspace", "nope", "--addr", addrs[0]}, 1, []string{"no such keyspace"}},
		// Written at ALL: the scans read at ONE, from either of the two replicas. (At ONE
		// a scan could ask the replica the write had not reached yet, and miss the key.)
		{[]string{"put", "--keyspace", "app", "--consistency", "ALL", "k1", "v1", "--addr", addrs[0]}, 0, nil},
		{[]string{"put", "--keyspace", "app", "--consistency", "ALL", "k2", "v\x002", "--addr", addrs[0]}, 0, nil},
		{[]string{"scan", "--keyspace", "app", "--addr", addrs[0]}, 0, []string{"k1\tv1\n", "k2\tv\x002\n"}},
		{[]string{"scan", "--keyspace", "app", "--keys-only", "--addr", addrs[0]}, 0, []string{"k1\nk2\n"}},
		{[]string{"scan", "--keyspace", "app", "--hex", "--addr", addrs[0]}, 0, []string{"6b32\t760032\n"}},
		// Issue 45, item 2: --json gave keys as text (bytes that are not UTF-8 mangled)
		// and every value in base64.
		{[]string{"put", "--keyspace", "app", "--consistency", "ALL", "k3", "\xffz", "--addr", addrs[0]}, 0, nil},
		{[]string{"scan", "--keyspace", "app", "--json", "--addr", addrs[0]}, 0,
			[]string{`[{"key":"k1","value":"v1"},{"key":"k2","value":"v\u00002"},{"key":"k3","value_base64":"/3o="}]`}},
		{[]string{"scan", "--keyspace", "app", "--json", "--keys-only", "--addr", addrs[0]}, 0, []string{`[{"key":"k1"},{"key":"k2"},{"key":"k3"}]`}},
		{[]string{"scan", "--keyspace", "app", "--json", "--hex", "--addr", addrs[0]}, 2, []string{"--hex and --json contradict each other"}},
		{[]string{"keyspace", "describe", "nosuch", "--addr", addrs[0]}, 1, []string{`no such keyspace "nosuch": kura keyspace list`}},
		{[]string{"version"}, 0, []string{"kura "}},
		// Nothing listens on port 1: these must not dial, or must say what to check.
		{[]string{"keyspace", "--help", "--addr", "127.0.0.1:1"}, 0, []string{"keyspace create NAME"}},
		{[]string{"keyspace", "nosuch", "--addr", "127.0.0.1:1"}, 2, []string{"unknown keyspace subcommand"}},
		{[]string{"status", "--addr", "127.0.0.1:1"}, 1, []string{"cannot reach 127.0.0.1:1", "--client"}},
		// Issue 45, item 1: a node's internode address in place of its client API's was
		// "the node closed the connection before answering: if it serves TLS, ...".
		{[]string{"status", "--addr", c.Nodes[0].Addr()}, 1, []string{c.Nodes[0].Addr() + " closes gRPC and TLS connections without answering, as a node's internode port (its --listen) does", "(its --client)"}},
		{[]string{"get", "k1", "--addr", c.Nodes[0].Addr()}, 1, []string{"as a node's internode port (its --listen) does"}},
	}
	for _, tt := range tests {
		code, out, errOut := kura(tt.args...)
		missing := slices.ContainsFunc(tt.contains, func(s string) bool { return !strings.Contains(out+errOut, s) })
		if code != tt.code || missing {
			t.Errorf("kura %q = exit %d, %q %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.contains)
		}
	}
	if _, out, _ := kura("scan", "--keyspace", "app", "--addr", addrs[0]); strings.Contains(out, `"`) {
		t.Errorf("kura scan quotes values: %q", out)
	}
}

// TestScanJSON: each key and value of kura scan --json is text when it is UTF-8 and
// base64, under the field named so, when it is not, and never both.
func TestScanJSON(t *testing.T) {
	tests := []struct {
		name       string
		key, value string
		withValues bool
		want       string
	}{
		{"text", "k", "v", true, `[{"key":"k","value":"v"}]`},
		{"empty value", "k", "", true, `[{"key":"k","value":""}]`},
		{"binary value", "k", "\x00\xff", true, `[{"key":"k","value_base64":"AP8="}]`},
		{"binary key", "\xc3\x28", "v", true, `[{"key_base64":"wyg=","value":"v"}]`},
		{"multi-byte text", "clé", "naïve", true, `[{"key":"clé","value":"naïve"}]`},
		{"keys only", "k", "v", false, `[{"key":"k"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(scanJSON([]client.KeyValue{{Key: []byte(tt.key), Value: []byte(tt.value)}}, tt.withValues))
			if err != nil || string(got) != tt.want {
				t.Errorf("scanJSON = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestFormatCountAndUptime(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
	now := time.UnixMilli(10 * 24 * 3600 * 1000)
	for ago, want := range map[time.Duration]string{
		0: "0s", 59 * time.Second: "59s", 61 * time.Second: "1m1s", 3*time.Hour + 5*time.Minute: "3h5m", 50 * time.Hour: "2d2h",
	} {
		if got := formatUptime(now.Add(-ago).UnixMilli(), now); got != want {
			t.Errorf("formatUptime(%v ago) = %q, want %q", ago, got, want)
		}
	}
	if got := formatUptime(0, now); got != "-" {
		t.Errorf("formatUptime of an unknown start = %q, want -", got)
	}
}

// TestStatusListsMembersOnly runs kura status's table on answers a node could give: the
// nodes that left or were removed stay in every node's directory for good, and must be
// neither counted nor listed, nor name a replacement's "(replacing ...)", unless --all
// asks for them, and then without an uptime (issue 43, item 8).
func TestStatusListsMembersOnly(t *testing.T) {
	now := time.UnixMilli(10 * 24 * 3600 * 1000)
	started := now.Add(-90 * time.Second).UnixMilli() // an uptime of 1m30s
	node := func(id, status, state string, replaces string) *kurav1.NodeStatus {
		return &kurav1.NodeStatus{Id: id, Dc: "dc1", Status: status, State: state, Alive: state != "down",
			Replaces: replaces, StartedAtUnixMs: started}
	}
	// A cluster that lived: n3 was decommissioned, n5 died and n4 replaced it, n7 died
	// and n6 is replacing it (normal already, n7 not removed yet), n8 to n11 are moving
	// onto or off the ring, and n12 has a status a newer server sent. The departed nodes
	// carry a start time, as a server sent it before it stopped reporting one for them.
	lived := []*kurav1.NodeStatus{
		node("n1", "normal", "up", ""), node("n2", "normal", "down", ""), node("n3", "left", "down", ""),
		node("n4", "normal", "up", "n5"), node("n5", "removed", "down", ""),
		node("n6", "normal", "up", "n7"), node("n7", "normal", "down", ""),
		node("n8", "joining", "joining", ""), node("n9", "leaving", "leaving", ""), node("n10", "rebuilding", "rebuilding", ""),
		node("n11", "booting", "down", ""), node("n12", "retired", "up", ""),
	}
	members := []string{"n1", "n2", "n4", "n6", "n7", "n8", "n9", "n10", "n11", "n12"}
	tests := []struct {
		name   string
		self   string
		nodes  []*kurav1.NodeStatus
		all    bool
		header string
		listed []string
		// rows holds what a node's row must contain (its STATUS column and uptime, with
		// the separators around them), and lacks what it must not.
		rows, lacks map[string]string
	}{
		{
			name: "members only", self: "n1", nodes: lived,
			header: "as seen by n1 (at addr): 10 nodes, 7 up\n", listed: members,
			rows: map[string]string{"n1": " normal ", "n4": " normal ", "n6": " normal (replacing n7) ", "n8": " joining ",
				"n9": " leaving ", "n10": " rebuilding ", "n11": " booting ", "n12": " retired "},
			lacks: map[string]string{"n4": "replacing"},
		},
		{
			name: "--all", self: "n1", nodes: lived, all: true,
			header: "as seen by n1 (at addr): 10 nodes, 7 up; also 2 nodes that left or were removed\n",
			listed: append([]string{"n3", "n5"}, members...),
			rows:   map[string]string{"n3": " left ", "n5": " removed ", "n6": " normal (replacing n7) ", "n1": " 1m30s "},
			lacks:  map[string]string{"n3": "1m30s", "n5": "1m30s", "n4": "replacing"},
		},
		{
			name: "a replacement under way", self: "n1", nodes: []*kurav1.NodeStatus{node("n1", "normal", "up", ""),
				node("n4", "joining", "joining", "n5"), node("n5", "normal", "down", "")},
			header: "as seen by n1 (at addr): 3 nodes, 2 up\n", listed: []string{"n1", "n4", "n5"},
			rows: map[string]string{"n4": " joining (replacing n5) "},
		},
		{
			name: "asked of a node that left", self: "n3", nodes: lived[:3],
			header: "as seen by n3 (at addr): 2 nodes, 1 up\nWARNING: n3 itself is left: it is no longer a member of the cluster",
			listed: []string{"n1", "n2"},
		},
		{
			name: "one departed node under --all", self: "n1", nodes: lived[:3], all: true,
			header: "as seen by n1 (at addr): 2 nodes, 1 up; also 1 node that left or was removed\n",
			listed: []string{"n1", "n2", "n3"},
		},
	}
	for _, tt := range tests {
		var out strings.Builder
		if err := printStatus(&out, &kurav1.ClusterStatusResponse{Self: tt.self, Nodes: tt.nodes}, "addr", tt.all, now); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !strings.HasPrefix(out.String(), tt.header) {
			t.Errorf("%s: kura status starts %q, want %q", tt.name, out.String(), tt.header)
		}
		rows := map[string]string{}
		for _, line := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "n") && len(f) > 2 && f[1] == "dc1" {
				rows[f[0]] = line
			}
		}
		var listed []string
		for id := range rows {
			listed = append(listed, id)
		}
		slices.Sort(listed)
		want := slices.Sorted(slices.Values(tt.listed))
		if !slices.Equal(listed, want) {
			t.Errorf("%s: kura status lists %v, want %v:\n%s", tt.name, listed, want, out.String())
		}
		for id, s := range tt.rows {
			if !strings.Contains(rows[id], s) {
				t.Errorf("%s: %s's row is %q, want it to contain %q", tt.name, id, rows[id], s)
			}
		}
		for id, s := range tt.lacks {
			if strings.Contains(rows[id], s) {
				t.Errorf("%s: %s's row is %q, want no %q", tt.name, id, rows[id], s)
			}
		}
	}
}

func TestPrintProtocols(t *testing.T) {
	node := func(id, status string, version int32) *kurav1.NodeStatus {
		return &kurav1.NodeStatus{Id: id, Status: status, ProtocolVersion: version}
	}
	tests := []struct {
		name string
		st   *kurav1.ClusterStatusResponse
		want string
	}{
		{"a node of protocol 3 answers", &kurav1.ClusterStatusResponse{Nodes: []*kurav1.NodeStatus{node("n1", "normal", 0)}}, ""},
		{"mid-upgrade", &kurav1.ClusterStatusResponse{ProtocolVersion: 3, Nodes: []*kurav1.NodeStatus{
			node("n1", "normal", 4), node("n2", "normal", 3), node("n3", "joining", 3), node("n4", "left", 0)}},
			"protocol versions: 3 (2 nodes), 4 (1 node); cluster protocol 3\n"},
		{"upgraded", &kurav1.ClusterStatusResponse{ProtocolVersion: 4, Nodes: []*kurav1.NodeStatus{node("n1", "normal", 4), node("n2", "removed", 0)}},
			"protocol versions: 4 (1 node); cluster protocol 4\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			printProtocols(&out, tt.st)
			if out.String() != tt.want {
				t.Errorf("printProtocols printed %q, want %q", out.String(), tt.want)
			}
		})
	}
}
