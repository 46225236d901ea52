package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
)

func runCluster(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster", stderr)
	topologyArg := fs.String("topology", "three-dc", "topology file or example name")
	emulate := fs.Bool("emulate-wan", true, "shape traffic between DCs by the topology's latency and bandwidth")
	dataDir := fs.String("data-dir", "", "durable storage under DIR/<node id> (default: in memory)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	basePort := fs.Int("base-port", 0, "fixed ports instead of free ones: node i listens on BASE+i, its client API on BASE+100+i, Redis on BASE+200+i, HTTP on BASE+300+i")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	topo, err := loadTopology(*topologyArg)
	if err != nil {
		return err
	}
	c, err := embedded.Start(topo, embedded.Options{
		DataDir: *dataDir, EmulateWAN: *emulate, ClientAPI: true, RESP: true, HTTP: true, Logger: logger, BasePort: *basePort,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cluster %s: %d nodes (WAN emulation %v)\n", topo.Name, len(c.Nodes), *emulate)
	tw := newTable(stdout)
	fmt.Fprintln(tw, "NODE\tDC\tADDR\tCLIENT\tREDIS\tHTTP (console)")
	for _, n := range c.Nodes {
		self := n.Self()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\thttp://%s/\n", self.ID, self.DC, self.Addr, self.ClientAddr, n.RESPAddr(), n.HTTPAddr())
	}
	tw.Flush()
	host, port, _ := net.SplitHostPort(c.Nodes[0].RESPAddr())
	fmt.Fprintf(stdout, "try: redis-cli -h %s -p %s  (keyspace default, %s; KURA.KEYSPACE and KURA.CONSISTENCY switch)\n", host, port, node.DefaultReplication)
	fmt.Fprintf(stdout, "or:  kura put k v --addr %s\n", c.Nodes[0].ClientAddr())
	fmt.Fprintln(stdout, "running until interrupted (Ctrl-C)")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return c.Close()
}
