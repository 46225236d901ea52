package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/io/certs"
)

// runCerts is `kura certs`: a CA and one certificate per node, for a cluster whose nodes
// authenticate each other (docs/security.md).
func runCerts(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("certs", stderr)
	dir := fs.String("dir", "", "directory to write ca.crt, ca.key, and ID.crt and ID.key per node into (required)")
	nodes := fs.String("nodes", "", "comma-separated ids of the nodes to issue certificates for (required)")
	hosts := fs.String("hosts", "127.0.0.1,localhost", "comma-separated IP addresses and DNS names at which clients dial the nodes, named in every node certificate")
	validFor := fs.Duration("valid-for", 365*24*time.Hour, "how long the certificates (and a new CA) are valid")
	force := fs.Bool("force", false, "overwrite the nodes' existing certificates and keys (an existing CA is always reused: remove ca.crt and ca.key for a new one)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *dir == "" || *nodes == "" {
		return fmt.Errorf("%w: certs --dir DIR --nodes ID,ID... [--hosts HOST,...] [--valid-for DURATION] [--force]", errUsage)
	}
	req := certs.Request{Dir: *dir, Nodes: strings.Split(*nodes, ","), ValidFor: *validFor, Force: *force}
	if *hosts != "" {
		req.Hosts = strings.Split(*hosts, ",")
	}
	done, err := certs.Generate(req)
	for _, f := range done.Files {
		fmt.Fprintln(stdout, "wrote", f)
	}
	if err != nil {
		return err
	}
	caFile := filepath.Join(*dir, certs.CACertFile)
	if done.CAReused {
		fmt.Fprintf(stdout, "signed by the existing CA %s\n", caFile)
	}
	certFile, keyFile := certs.NodeFiles(*dir, "ID")
	fmt.Fprintf(stdout, "start each node with --tls-cert %s --tls-key %s --tls-ca %s; clients take --tls-ca %s\n",
		certFile, keyFile, caFile, caFile)
	return nil
}
