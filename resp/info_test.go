package resp

import (
	"strings"
	"testing"
)

func TestInfo(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	dial(t, addr).call("PING") // a second client

	all := c.call("INFO").(string)
	for _, want := range []string{
		"# Server\r\n", "redis_version:7.0.0\r\n", "kura_node_id:n1\r\n", "kura_dc:dc1\r\n",
		"\r\n\r\n# Clients\r\nconnected_clients:2\r\n",
		"# Replication\r\nrole:master\r\nkura_cluster_size:2\r\nkura_alive_nodes:1\r\nkura_hints_pending:3\r\nkura_interdc_bytes:12345\r\n",
		"node0:id=n1,dc=dc1,addr=127.0.0.1:1,state=up\r\n", "node1:id=n2,dc=dc2,addr=127.0.0.1:2,state=down\r\n",
		"# Keyspace\r\ndefault:replication=dc1=2;dc2=1,partitioner=hash\r\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("INFO lacks %q:\n%s", want, all)
		}
	}

	tests := []struct {
		sections []string
		want     []string // section titles, in order
	}{
		{[]string{"everything"}, []string{"Server", "Clients", "Replication", "Keyspace"}},
		{[]string{"keyspace", "SERVER"}, []string{"Server", "Keyspace"}},
		{[]string{"replication"}, []string{"Replication"}},
		{[]string{"nosuch"}, nil},
	}
	for _, tt := range tests {
		text := c.call(append([]string{"INFO"}, tt.sections...)...).(string)
		var titles []string
		for _, line := range strings.Split(text, "\r\n") {
			if title, ok := strings.CutPrefix(line, "# "); ok {
				titles = append(titles, title)
			}
		}
		if strings.Join(titles, ",") != strings.Join(tt.want, ",") {
			t.Errorf("INFO %v has sections %v, want %v", tt.sections, titles, tt.want)
		}
	}
}
