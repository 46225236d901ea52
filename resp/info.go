package resp

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// infoSections are INFO's sections in the order INFO prints them. Replication describes
// kura's cluster in the place where Redis describes its replicas.
var infoSections = []struct {
	name  string
	write func(b *strings.Builder, c *conn, info Info)
}{
	{"Server", writeServerInfo},
	{"Clients", writeClientsInfo},
	{"Replication", writeReplicationInfo},
	{"Keyspace", writeKeyspaceInfo},
}

// infoCommand is INFO [section ...]; no section, "default", "all" or "everything" select
// every section.
func infoCommand(c *conn, args [][]byte) {
	wanted := map[string]bool{}
	for _, a := range args[1:] {
		wanted[strings.ToLower(string(a))] = true
	}
	all := len(wanted) == 0 || wanted["default"] || wanted["all"] || wanted["everything"]
	info := c.s.cfg.Backend.Info()
	var b strings.Builder
	for _, section := range infoSections {
		if !all && !wanted[strings.ToLower(section.name)] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n", section.name)
		section.write(&b, c, info)
	}
	c.w.BulkString(b.String())
}

func infoLine(b *strings.Builder, field string, value any) {
	fmt.Fprintf(b, "%s:%v\r\n", field, value)
}

func writeServerInfo(b *strings.Builder, c *conn, info Info) {
	uptime := time.Since(c.s.started)
	infoLine(b, "redis_version", redisVersion)
	infoLine(b, "redis_mode", "standalone")
	infoLine(b, "kura_node_id", info.NodeID)
	infoLine(b, "kura_dc", info.DC)
	infoLine(b, "process_id", os.Getpid())
	infoLine(b, "tcp_addr", c.nc.LocalAddr())
	infoLine(b, "uptime_in_seconds", int64(uptime.Seconds()))
	infoLine(b, "uptime_in_days", int64(uptime.Hours()/24))
}

func writeClientsInfo(b *strings.Builder, c *conn, _ Info) {
	infoLine(b, "connected_clients", c.s.connectedClients())
}

func writeReplicationInfo(b *strings.Builder, _ *conn, info Info) {
	alive := 0
	for _, n := range info.Nodes {
		if n.Alive {
			alive++
		}
	}
	infoLine(b, "role", "master")
	infoLine(b, "kura_cluster_size", len(info.Nodes))
	infoLine(b, "kura_alive_nodes", alive)
	infoLine(b, "kura_hints_pending", info.HintsPending)
	infoLine(b, "kura_interdc_bytes", info.InterDCBytes)
	for i, n := range info.Nodes {
		state := "up"
		if !n.Alive {
			state = "down"
		}
		infoLine(b, fmt.Sprintf("node%d", i), fmt.Sprintf("id=%s,dc=%s,addr=%s,state=%s", n.ID, n.DC, n.Addr, state))
	}
}

// writeKeyspaceInfo writes Redis's line for the connection's keyspace, db0, with the
// count DBSIZE makes (each replica walks its live-key index, one replica per range), and
// only when it holds keys, as Redis does; then each keyspace's replication, with ';'
// between datacenters so that ',' still separates fields.
func writeKeyspaceInfo(b *strings.Builder, c *conn, info Info) {
	if n, err := c.countKeys(); err != nil {
		c.s.cfg.Logger.Debug("resp: count keys for INFO", "keyspace", c.keyspace, "err", err)
	} else if n.Keys > 0 {
		infoLine(b, "db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", n.Keys, n.Expiring))
	}
	for _, ks := range info.Keyspaces {
		infoLine(b, ks.Name, fmt.Sprintf("replication=%s,partitioner=%s", strings.ReplaceAll(ks.Replication, ",", ";"), ks.Partitioner))
	}
}
