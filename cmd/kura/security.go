package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kuradb/kura/certs"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/node"
)

// securityFlags are how a command that dials a node reaches a cluster that serves TLS or
// requires a token (docs/security.md).
type securityFlags struct {
	tlsCA     *string
	tokenFile *string
}

func addSecurityFlags(fs *flag.FlagSet) securityFlags {
	return securityFlags{
		tlsCA:     fs.String("tls-ca", "", "speak TLS, verifying the nodes' certificates against this CA certificate (ca.crt of kura certs)"),
		tokenFile: fs.String("token-file", "", "file whose first line is the token the nodes require (their --auth-token-file)"),
	}
}

// options returns the client options the flags ask for.
func (f securityFlags) options() (client.Options, error) {
	var opts client.Options
	if *f.tlsCA != "" {
		pool, err := certs.LoadCA(*f.tlsCA)
		if err != nil {
			return opts, err
		}
		opts.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	}
	if *f.tokenFile != "" {
		token, err := readSecret("token-file", *f.tokenFile)
		if err != nil {
			return opts, err
		}
		opts.Token = token
	}
	return opts, nil
}

// serverSecurityFlags are kura server's: the node's certificate, key and CA, which
// secure both its links to other nodes and its client ports, and the client API's token.
type serverSecurityFlags struct {
	cert, key, ca *string
	tokenFile     *string
}

func addServerSecurityFlags(fs *flag.FlagSet) serverSecurityFlags {
	return serverSecurityFlags{
		cert:      fs.String("tls-cert", "", "this node's certificate (ID.crt of kura certs): mutual TLS between nodes, TLS on the gRPC and Redis ports"),
		key:       fs.String("tls-key", "", "this node's private key (ID.key of kura certs)"),
		ca:        fs.String("tls-ca", "", "the cluster's CA certificate (ca.crt of kura certs): only nodes it certified may talk to this one"),
		tokenFile: fs.String("auth-token-file", "", "file whose first line is the token every gRPC call must carry (authorization: Bearer TOKEN)"),
	}
}

// apply loads what the flags name into cfg.
func (f serverSecurityFlags) apply(cfg *node.Config) error {
	var missing []string
	for _, file := range []struct{ flag, path string }{{"--tls-cert", *f.cert}, {"--tls-key", *f.key}, {"--tls-ca", *f.ca}} {
		if file.path == "" {
			missing = append(missing, file.flag)
		}
	}
	switch len(missing) {
	case 0:
		identity, err := certs.Load(*f.cert, *f.key, *f.ca)
		if err != nil {
			return err
		}
		cfg.TLS = identity
	case 3:
	default:
		return fmt.Errorf("%w: give all of --tls-cert, --tls-key and --tls-ca, or none (missing %s)", errUsage, strings.Join(missing, ", "))
	}
	if *f.tokenFile != "" {
		token, err := readSecret("auth-token-file", *f.tokenFile)
		if err != nil {
			return err
		}
		cfg.AuthToken = token
	}
	return nil
}

// readSecret reads the first line of the file a flag names (a password, a token); an
// empty secret is an error, since it would silently leave the door open.
func readSecret(flagName, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read --%s: %w", flagName, err)
	}
	secret, _, _ := strings.Cut(string(data), "\n")
	secret = strings.TrimRight(secret, "\r")
	if secret == "" {
		return "", fmt.Errorf("%w: --%s %s: the first line is empty", errUsage, flagName, path)
	}
	return secret, nil
}
