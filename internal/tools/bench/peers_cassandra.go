package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/kuradb/kura/consistency"
)

// This file sets up Apache Cassandra for `kura bench peers`: its jars from Maven Central
// (cached between runs), one JVM per node on 127.0.0.1, .2 and .3, each with a small
// generated configuration in the scratch dir, and gocql as the client. Nothing of
// Cassandra is part of kura.

// cassandraVersion is the release the bench runs.
const cassandraVersion = "5.0.9"

// cassandraNativePort is the CQL port; every node has its own loopback address, so all
// use the same port, as a real cluster does.
const cassandraNativePort = 9042

// cassandraStartTimeout bounds one node's start, up to its CQL port accepting: a node
// takes about half a minute on a quiet machine.
const cassandraStartTimeout = 5 * time.Minute

// cassandraJars is a directory holding cassandra-all and its runtime dependencies.
type cassandraJars struct {
	dir  string
	java string
}

// cassandraPOM is the project whose dependencies Maven copies: cassandra-all alone.
const cassandraPOM = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kura.bench</groupId>
  <artifactId>cassandra-peer</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>%s</version>
    </dependency>
  </dependencies>
</project>
`

// prepareCassandra finds Java and Cassandra's jars in cache, fetching them with Maven
// the first time; its errors say what is missing.
func prepareCassandra(ctx context.Context, env Env, cache string) (cassandraJars, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return cassandraJars{}, errors.New("java not found: Cassandra needs a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)")
	}
	home := filepath.Join(cache, "cassandra-"+cassandraVersion)
	jars := cassandraJars{dir: filepath.Join(home, "lib"), java: java}
	complete := filepath.Join(home, "complete")
	if _, err := os.Stat(complete); err == nil {
		return jars, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return cassandraJars{}, errors.New("mvn not found: the bench fetches Cassandra's jars with Maven (Debian: apt-get install maven)")
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return cassandraJars{}, err
	}
	if err := os.WriteFile(filepath.Join(home, "pom.xml"), fmt.Appendf(nil, cassandraPOM, cassandraVersion), 0o644); err != nil {
		return cassandraJars{}, err
	}
	env.Progressf("fetching Cassandra %s's jars with Maven into %s (once; later runs reuse them)", cassandraVersion, jars.dir)
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "dependency:copy-dependencies",
		"-DoutputDirectory="+jars.dir, "-DincludeScope=runtime")
	cmd.Dir = home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return cassandraJars{}, fmt.Errorf("mvn dependency:copy-dependencies for cassandra-all %s: %w\n%s", cassandraVersion, err, lastLines(out.String(), 20))
	}
	if err := os.WriteFile(complete, nil, 0o644); err != nil {
		return cassandraJars{}, err
	}
	return jars, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cassandraJVMFlags are upstream's conf/jvm-server.options and conf/jvm17-server.options
// of Cassandra 5.0, every flag they set, with one change: -XX:-UseBiasedLocking is left
// out, as Java 17 deprecates it and has biased locking off by default already. So:
// assertions on (upstream's default), thread priorities, a heap dump on OOM, pre-touched
// heap, TLABs, NUMA, no shared perf memory, IPv4; G1 with upstream's pause and
// occupancy targets; the modules Cassandra reaches into (JPMS exports and opens) and
// Netty's direct buffers. The heap is added per run (--cassandra-heap).
var cassandraJVMFlags = []string{
	"-ea", "-da:net.openhft...", "-XX:+UseThreadPriorities", "-XX:+HeapDumpOnOutOfMemoryError", "-Xss256k",
	"-XX:+AlwaysPreTouch", "-XX:+UseTLAB", "-XX:+ResizeTLAB", "-XX:+UseNUMA", "-XX:+PerfDisableSharedMem",
	"-Djava.net.preferIPv4Stack=true",
	"-XX:+UseG1GC", "-XX:+ParallelRefProcEnabled", "-XX:MaxTenuringThreshold=1", "-XX:G1HeapRegionSize=16m",
	"-XX:G1RSetUpdatingPauseTimePercent=5", "-XX:MaxGCPauseMillis=300", "-XX:InitiatingHeapOccupancyPercent=70",
	"-Djdk.attach.allowAttachSelf=true",
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
	"--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
	"--add-exports", "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-exports", "jdk.attach/sun.tools.attach=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"-Dio.netty.tryReflectionSetAccessible=true",
	"-Dio.netty.allocator.useCacheForAllThreads=true",
	"-Dio.netty.allocator.maxOrder=11",
}

// cassandraYAML is one node's configuration: the cluster's name and seed, the node's
// address and directories, the snitch that reads its DC from cassandra-rackdc.properties,
// and commitlog_sync batch, under which a write is acknowledged only once its commit log
// entry is synced (kura's WAL does the same). auto_bootstrap is off because the cluster
// starts empty: a joining node has nothing to stream. num_tokens 16 with
// allocate_tokens_for_local_replication_factor set to the keyspace's replicas in the
// node's DC, as upstream's cassandra.yaml recommends, so that 16 tokens balance the
// ring. concurrent_reads and concurrent_writes are 32, as kura's read stage has 32
// workers (sched.DefaultWorkers); they are upstream's defaults too.
const cassandraYAML = `cluster_name: kura-peers
num_tokens: 16
allocate_tokens_for_local_replication_factor: %[4]d
concurrent_reads: 32
concurrent_writes: 32
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories: [%[1]s/data]
commitlog_directory: %[1]s/commitlog
saved_caches_directory: %[1]s/saved_caches
hints_directory: %[1]s/hints
cdc_raw_directory: %[1]s/cdc_raw
commitlog_sync: batch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:7000"
listen_address: %[2]s
rpc_address: %[2]s
storage_port: 7000
native_transport_port: %[3]d
start_native_transport: true
endpoint_snitch: GossipingPropertyFileSnitch
auto_bootstrap: false
`

// cassandraLogback sends the node's log to a file at INFO, rather than logback's
// default of everything to the console.
const cassandraLogback = `<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>%s</file>
    <encoder><pattern>%%-5level %%date{ISO8601} %%F:%%L - %%msg%%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
`

// cassandraNode is one running node.
type cassandraNode struct {
	host   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// kill ends the node's JVM at once, by its PID, and waits for it.
func (n *cassandraNode) kill() {
	n.cmd.Process.Kill()
	<-n.exited
}

// startCassandraNode writes node i's configuration under dir and starts its JVM.
func startCassandraNode(jars cassandraJars, heap, dir string, i int, dc string, localRF int) (*cassandraNode, error) {
	host := fmt.Sprintf("127.0.0.%d", i+1)
	if nc, err := net.DialTimeout("tcp", net.JoinHostPort(host, fmt.Sprint(cassandraNativePort)), time.Second); err == nil {
		nc.Close()
		return nil, fmt.Errorf("%s:%d is in use already (another Cassandra?)", host, cassandraNativePort)
	}
	nodeDir := filepath.Join(dir, fmt.Sprintf("n%d", i+1))
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{
		"cassandra.yaml":              fmt.Sprintf(cassandraYAML, nodeDir, host, cassandraNativePort, localRF),
		"cassandra-rackdc.properties": fmt.Sprintf("dc=%s\nrack=rack1\n", dc),
		"logback.xml":                 fmt.Sprintf(cassandraLogback, filepath.Join(nodeDir, "system.log")),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(nodeDir, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	args := append([]string{"-Xms" + heap, "-Xmx" + heap}, cassandraJVMFlags...)
	args = append(args,
		"-Dcassandra.config=file://"+filepath.Join(nodeDir, "cassandra.yaml"),
		"-Dcassandra-rackdc.properties=file://"+filepath.Join(nodeDir, "cassandra-rackdc.properties"),
		"-Dlogback.configurationFile="+filepath.Join(nodeDir, "logback.xml"),
		"-Dcassandra.storagedir="+nodeDir,
		"-Dcassandra.logdir="+nodeDir,
		"-Dcassandra-foreground=yes",
		// A new, empty cluster: no gossip to wait for before serving.
		"-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-cp", filepath.Join(jars.dir, "*"),
		"org.apache.cassandra.service.CassandraDaemon")
	out, err := os.Create(filepath.Join(nodeDir, "stdout.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(jars.java, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start Cassandra: %w", err)
	}
	n := &cassandraNode{host: host, cmd: cmd, exited: make(chan struct{}), log: filepath.Join(nodeDir, "system.log")}
	go func() {
		cmd.Wait()
		out.Close()
		close(n.exited)
	}()
	return n, nil
}

// tuningFlags are the JVM flags that tune (-XX, -Xss), not those that open Java's
// modules to Cassandra.
func tuningFlags(flags []string) []string {
	var tuning []string
	for _, f := range flags {
		if strings.HasPrefix(f, "-XX") || strings.HasPrefix(f, "-Xss") || f == "-ea" {
			tuning = append(tuning, f)
		}
	}
	return tuning
}

// waitCQL waits until the node's CQL port accepts connections, which Cassandra opens
// once it has joined the ring.
func (n *cassandraNode) waitCQL(ctx context.Context) error {
	addr := net.JoinHostPort(n.host, fmt.Sprint(cassandraNativePort))
	deadline := time.Now().Add(cassandraStartTimeout)
	for {
		if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			return nc.Close()
		}
		select {
		case <-n.exited:
			return fmt.Errorf("Cassandra on %s exited while starting (log %s)", n.host, n.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Cassandra on %s did not open its CQL port in %v (log %s)", n.host, cassandraStartTimeout, n.log)
		}
	}
}

// startCassandraPeer starts nodes Cassandra nodes one after another (node i on
// 127.0.0.(i+1); of three, two in dc1 and one in dc2), creates the keyspace with
// NetworkTopologyStrategy, one replica per node, and the table, YCSB's usertable with one
// field.
func startCassandraPeer(ctx context.Context, env Env, o peersOptions, jars cassandraJars, dir string, nodes int) (*peerDeployment, error) {
	var started []*cassandraNode
	d := &peerDeployment{stop: func() {
		for _, n := range started {
			n.kill()
		}
	}, build: PeerBuild{Name: "cassandra", Version: "Apache Cassandra " + cassandraVersion + " (cassandra-all jars), " + commandVersion(jars.java, "-version"),
		Config: "heap " + o.heap + ", JVM flags " + strings.Join(tuningFlags(cassandraJVMFlags), " ") + " and Java 17's module exports; cassandra.yaml in internal/tools/bench/peers_cassandra.go (num_tokens 16, commitlog_sync batch)"}}
	began := time.Now()
	var hosts []string
	for i := range nodes {
		dc := fmt.Sprintf("dc%d", i*min(nodes, 2)/nodes+1) // as the nemesis harness places kura's nodes
		n, err := startCassandraNode(jars, o.heap, dir, i, dc, layoutReplicas[nodes][dc])
		if err != nil {
			d.close()
			return nil, err
		}
		started = append(started, n)
		d.pids = append(d.pids, n.cmd.Process.Pid)
		if err := n.waitCQL(ctx); err != nil {
			d.close()
			return nil, err
		}
		env.Progressf("Cassandra on %s (%s) up after %.0f s", n.host, dc, time.Since(began).Seconds())
		hosts = append(hosts, n.host)
	}
	var replicas []string
	for _, dc := range slices.Sorted(maps.Keys(layoutReplicas[nodes])) {
		replicas = append(replicas, fmt.Sprintf("'%s': %d", dc, layoutReplicas[nodes][dc]))
	}
	replication := strings.Join(replicas, ", ")
	sessions := map[bool]*gocql.Session{}
	for _, coalescing := range o.coalescing {
		session, err := gocqlSession(hosts, o.opTimeout, coalescing)
		if err != nil {
			d.close() // closes the sessions of its clients too
			return nil, err
		}
		sessions[coalescing] = session
		system := sysCassandra
		if coalescing {
			system = sysCassandraCoalescing
		}
		d.clients = append(d.clients, namedClient{system: system, c: &gocqlClient{s: session, level: gocql.One}, scans: true})
	}
	session := sessions[o.coalescing[0]]
	for _, stmt := range []string{
		fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'NetworkTopologyStrategy', %s}", peersKeyspace, replication),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.usertable (y_id text PRIMARY KEY, field0 blob)", peersKeyspace),
	} {
		if err := execUntilAccepted(ctx, session, stmt); err != nil {
			d.close()
			return nil, err
		}
	}
	d.startup = time.Since(began)
	return d, nil
}

// gocqlSession connects to the Cassandra nodes at hosts with gocqlCluster's settings.
func gocqlSession(hosts []string, timeout time.Duration, coalescing bool) (*gocql.Session, error) {
	session, err := gocqlCluster(hosts, timeout, coalescing).CreateSession()
	if err != nil {
		return nil, fmt.Errorf("gocql: connect to %v: %w", hosts, err)
	}
	return session, nil
}

// gocqlCluster is the driver configuration of the bench's rows: token-aware over dc1,
// protocol v4, no retries (the bench counts a failed operation as an error: no retry
// hides one). Without coalescing, gocql writes each request to its connection at once;
// with it, gocql's default, a connection waits up to 200 µs to send several requests in
// one write. Apart from the import path, these are the settings the rows had under
// github.com/gocql/gocql v1.7.0, with the same defaults (the tests check).
func gocqlCluster(hosts []string, timeout time.Duration, coalescing bool) *gocql.ClusterConfig {
	cluster := gocql.NewCluster(hosts...)
	cluster.Port = cassandraNativePort
	cluster.ProtoVersion = 4
	cluster.Timeout = timeout
	cluster.ConnectTimeout = 10 * time.Second
	cluster.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy("dc1"))
	cluster.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	if !coalescing {
		cluster.WriteCoalesceWaitTime = 0
	}
	return cluster
}

// cassandraSchemaTimeout bounds the retries of a schema statement: a node that has just
// opened its CQL port may not have learned the other nodes' DCs from gossip yet, and
// refuses a keyspace that names them until it has.
const cassandraSchemaTimeout = time.Minute

// execUntilAccepted runs a schema statement, again each second while it is refused, for
// up to cassandraSchemaTimeout.
func execUntilAccepted(ctx context.Context, session *gocql.Session, stmt string) error {
	deadline := time.Now().Add(cassandraSchemaTimeout)
	for {
		err := session.Query(stmt).Consistency(gocql.All).ExecContext(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("cql %q: %w", stmt, err)
		}
		time.Sleep(time.Second)
	}
}

// gocqlClient runs the operations through gocql, token-aware: each request goes to a
// replica of its key in dc1.
type gocqlClient struct {
	s     *gocql.Session
	level gocql.Consistency
}

func (g *gocqlClient) setLevel(cl consistency.Level) error {
	level, err := gocql.ParseConsistencyWrapper(cl.String())
	if err != nil {
		return fmt.Errorf("consistency %s for Cassandra: %w", cl, err)
	}
	g.level = level
	return nil
}

func (g *gocqlClient) read(ctx context.Context, key []byte) error {
	var value []byte
	err := g.s.Query("SELECT field0 FROM "+peersKeyspace+".usertable WHERE y_id = ?", string(key)).
		Consistency(g.level).ScanContext(ctx, &value)
	if errors.Is(err, gocql.ErrNotFound) {
		return errNotFound
	}
	return err
}

func (g *gocqlClient) update(ctx context.Context, key, value []byte) error {
	return g.s.Query("INSERT INTO "+peersKeyspace+".usertable (y_id, field0) VALUES (?, ?)", string(key), value).
		Consistency(g.level).ExecContext(ctx)
}

// scan reads in token order from start's token, as YCSB's Cassandra binding does.
func (g *gocqlClient) scan(ctx context.Context, start []byte, n int) error {
	iter := g.s.Query("SELECT y_id, field0 FROM "+peersKeyspace+".usertable WHERE token(y_id) >= token(?) LIMIT ?", string(start), n).
		Consistency(g.level).IterContext(ctx)
	var key string
	var value []byte
	for iter.Scan(&key, &value) {
	}
	return iter.Close()
}

func (g *gocqlClient) close() { g.s.Close() }
