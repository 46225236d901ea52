package resp

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// infoSections are INFO's sections in the order Redis prints them. Replication describes
// kura's cluster in the place where Redis describes its replicas. Keyspace, last, is
// where Redis counts each database's keys (db0:keys=N,expires=M). Commandstats, as in
// Redis, is not one of the default sections.
var infoSections = []struct {
	name       string
	write      func(b *strings.Builder, c *conn, info Info)
	notDefault bool
}{
	{name: "Server", write: writeServerInfo},
	{name: "Clients", write: writeClientsInfo},
	{name: "Memory", write: writeMemoryInfo},
	{name: "Persistence", write: writePersistenceInfo},
	{name: "Stats", write: writeStatsInfo},
	{name: "Replication", write: writeReplicationInfo},
	{name: "CPU", write: writeCPUInfo},
	{name: "Commandstats", write: writeCommandstatsInfo, notDefault: true},
	{name: "Cluster", write: writeClusterInfo},
	{name: "Keyspace", write: writeKeyspaceInfo},
}

// infoCommand is INFO [section ...]; no section or "default" select the default
// sections, "all" and "everything" every section. The text is a verbatim string in
// RESP3, as Redis sends it.
func infoCommand(c *conn, args [][]byte) {
	wanted := map[string]bool{}
	for _, a := range args[1:] {
		wanted[strings.ToLower(string(a))] = true
	}
	all := wanted["all"] || wanted["everything"]
	defaults := len(wanted) == 0 || wanted["default"]
	info := c.s.cfg.Backend.Info()
	var b strings.Builder
	for _, section := range infoSections {
		if !all && !(defaults && !section.notDefault) && !wanted[strings.ToLower(section.name)] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n", section.name)
		section.write(&b, c, info)
	}
	c.w.Text(b.String())
}

func infoLine(b *strings.Builder, field string, value any) {
	fmt.Fprintf(b, "%s:%v\r\n", field, value)
}

func writeServerInfo(b *strings.Builder, c *conn, info Info) {
	now := time.Now()
	uptime := now.Sub(c.s.started)
	executable, _ := os.Executable()
	infoLine(b, "redis_version", redisVersion)
	infoLine(b, "redis_mode", "standalone")
	infoLine(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	infoLine(b, "arch_bits", strconv.IntSize)
	infoLine(b, "process_id", os.Getpid())
	infoLine(b, "run_id", c.s.runID)
	infoLine(b, "tcp_port", localPort(c))
	infoLine(b, "server_time_usec", now.UnixMicro())
	infoLine(b, "uptime_in_seconds", int64(uptime.Seconds()))
	infoLine(b, "uptime_in_days", int64(uptime.Hours()/24))
	infoLine(b, "executable", executable)
	infoLine(b, "config_file", "")
	infoLine(b, "kura_node_id", info.NodeID)
	infoLine(b, "kura_dc", info.DC)
	infoLine(b, "kura_resp_keyspace", c.s.cfg.DefaultKeyspace)
}

// writeClientsInfo counts the connections, and those blocked on lists (BLPOP and the
// like). kura has no client-side caching or client limit: those fields hold what a Redis
// server without them shows.
func writeClientsInfo(b *strings.Builder, c *conn, _ Info) {
	infoLine(b, "connected_clients", c.s.connectedClients())
	infoLine(b, "cluster_connections", 0)
	infoLine(b, "maxclients", 10000)
	blocked, _ := c.s.lists.blocked()
	infoLine(b, "blocked_clients", blocked)
	infoLine(b, "tracking_clients", 0)
	infoLine(b, "clients_in_timeout_table", 0)
}

// writeMemoryInfo reports the Go heap's live objects as used_memory (what Redis counts of
// its allocator) and the process's resident set as used_memory_rss, where the system
// tells it (Linux). kura sets no memory limit and never evicts.
func writeMemoryInfo(b *strings.Builder, _ *conn, _ Info) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	used := sample[0].Value.Uint64()
	infoLine(b, "used_memory", used)
	infoLine(b, "used_memory_human", humanBytes(used))
	if rss, ok := residentBytes(); ok {
		infoLine(b, "used_memory_rss", rss)
		infoLine(b, "used_memory_rss_human", humanBytes(rss))
	}
	infoLine(b, "maxmemory", 0)
	infoLine(b, "maxmemory_human", humanBytes(0))
	infoLine(b, "maxmemory_policy", "noeviction")
	infoLine(b, "mem_allocator", runtime.Version())
}

// residentBytes reads the process's resident set size from /proc/self/statm.
func residentBytes() (uint64, bool) {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(statm))
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}

// humanBytes writes a byte count as Redis's INFO does: 1023B, 1.50K, 2.00M, 3.25G.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	value, suffix := float64(n)/unit, 'K'
	for _, next := range "MGTPE" {
		if value < unit {
			break
		}
		value, suffix = value/unit, next
	}
	return fmt.Sprintf("%.2f%c", value, suffix)
}

// writePersistenceInfo: kura neither loads a snapshot at start nor forks to write one;
// aof_enabled says whether acknowledged writes are in a write-ahead log on disk.
func writePersistenceInfo(b *strings.Builder, _ *conn, info Info) {
	aof := 0
	if info.Durable {
		aof = 1
	}
	infoLine(b, "loading", 0)
	infoLine(b, "async_loading", 0)
	infoLine(b, "rdb_bgsave_in_progress", 0)
	infoLine(b, "aof_enabled", aof)
	infoLine(b, "aof_rewrite_in_progress", 0)
}

// writeStatsInfo reports the front end's counters since the start or CONFIG RESETSTAT.
// kura refuses no connection for a limit, evicts nothing, and has no publish/subscribe
// and no MIGRATE (whose connections to other servers Redis keeps for a while).
func writeStatsInfo(b *strings.Builder, c *conn, _ Info) {
	st := &c.s.stats
	infoLine(b, "total_connections_received", st.connectionsReceived.Load())
	infoLine(b, "total_commands_processed", st.commandsProcessed.Load())
	infoLine(b, "total_net_input_bytes", st.netInputBytes.Load())
	infoLine(b, "total_net_output_bytes", st.netOutputBytes.Load())
	infoLine(b, "rejected_connections", 0)
	infoLine(b, "evicted_keys", 0)
	infoLine(b, "keyspace_hits", st.keyspaceHits.Load())
	infoLine(b, "keyspace_misses", st.keyspaceMisses.Load())
	infoLine(b, "pubsub_channels", 0)
	infoLine(b, "pubsub_patterns", 0)
	infoLine(b, "migrate_cached_sockets", 0)
	infoLine(b, "total_error_replies", st.errorReplies.Load())
}

func writeReplicationInfo(b *strings.Builder, _ *conn, info Info) {
	alive := 0
	for _, n := range info.Nodes {
		if n.Alive {
			alive++
		}
	}
	infoLine(b, "role", "master")
	infoLine(b, "connected_slaves", 0)
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

// writeCPUInfo reports the process's CPU time, its own and its children's, in seconds
// with microseconds as Redis prints them.
func writeCPUInfo(b *strings.Builder, _ *conn, _ Info) {
	sys, user, childrenSys, childrenUser, ok := processCPU()
	if !ok {
		return
	}
	seconds := func(d time.Duration) string {
		return fmt.Sprintf("%d.%06d", d/time.Second, d%time.Second/time.Microsecond)
	}
	infoLine(b, "used_cpu_sys", seconds(sys))
	infoLine(b, "used_cpu_user", seconds(user))
	infoLine(b, "used_cpu_sys_children", seconds(childrenSys))
	infoLine(b, "used_cpu_user_children", seconds(childrenUser))
}

// writeClusterInfo: kura's cluster is not a Redis Cluster, so clients must not look for
// slots; every node serves every key.
func writeClusterInfo(b *strings.Builder, _ *conn, _ Info) {
	infoLine(b, "cluster_enabled", 0)
}

// writeKeyspaceInfo writes Redis's line for the connection's keyspace, db0, with the
// count DBSIZE makes (each replica walks its live-key index, one replica per range), and
// only when it holds keys, as Redis does; then each keyspace's replication, with ';'
// between datacenters so that ',' still separates fields.
func writeKeyspaceInfo(b *strings.Builder, c *conn, info Info) {
	if n, err := c.countKeys(); err != nil {
		c.s.cfg.Logger.Debug("resp: count keys for INFO", "keyspace", c.keyspace, "err", err)
	} else if n.Keys > 0 {
		infoLine(b, "db0", fmt.Sprintf("keys=%d,expires=%d", n.Keys, n.Expiring))
	}
	for _, ks := range info.Keyspaces {
		infoLine(b, ks.Name, fmt.Sprintf("replication=%s,partitioner=%s", strings.ReplaceAll(ks.Replication, ",", ";"), ks.Partitioner))
	}
}
