package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/io/certs"
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
// secure both its links to other nodes and its client ports, the client API's token,
// and the Redis port's password.
type serverSecurityFlags struct {
	cert, key, ca    *string
	tokenFile        *string
	respPasswordFile *string
	respNoPassword   *bool
	httpTokenFile    *string
}

func addServerSecurityFlags(fs *flag.FlagSet) serverSecurityFlags {
	return serverSecurityFlags{
		cert:             fs.String("tls-cert", "", "this node's certificate (ID.crt of kura certs): mutual TLS between nodes, TLS on the gRPC and Redis ports"),
		key:              fs.String("tls-key", "", "this node's private key (ID.key of kura certs)"),
		ca:               fs.String("tls-ca", "", "the cluster's CA certificate (ca.crt of kura certs): only nodes it certified may talk to this one"),
		tokenFile:        fs.String("auth-token-file", "", "file whose first line is the token every gRPC call must carry (authorization: Bearer TOKEN); Redis clients then AUTH with it unless --resp-password-file"),
		respPasswordFile: fs.String("resp-password-file", "", "file whose first line is the password Redis clients must give (AUTH)"),
		respNoPassword:   fs.Bool("resp-no-password", false, "serve the Redis port without a password on a node with TLS or a token, which otherwise requires one"),
		httpTokenFile:    fs.String("http-token-file", "", "file whose first line is the token every request to the --http port but /healthz and POST /power/wake must carry (Bearer, or as a Basic password)"),
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
	if *f.httpTokenFile != "" {
		token, err := readSecret("http-token-file", *f.httpTokenFile)
		if err != nil {
			return err
		}
		cfg.HTTPToken = token
	}
	var password string
	if *f.respPasswordFile != "" {
		var err error
		if password, err = readSecret("resp-password-file", *f.respPasswordFile); err != nil {
			return err
		}
	}
	return setRESPPassword(cfg, password, *f.respNoPassword)
}

// setRESPPassword sets the password cfg's Redis port requires: the one given, else the
// client API's token. A node with TLS or a token serves Redis without a password only
// when noPassword says so: its operator meant it closed, and Redis clients would
// otherwise bypass the token of the gRPC port.
func setRESPPassword(cfg *node.Config, password string, noPassword bool) error {
	switch {
	case noPassword && password != "":
		return fmt.Errorf("%w: give --resp-password-file or --resp-no-password, not both", errUsage)
	case noPassword:
	case password != "":
		cfg.RESPPassword = password
	case cfg.RESPAddr == "":
	case cfg.AuthToken != "":
		cfg.RESPPassword = cfg.AuthToken
	case cfg.TLS != nil:
		return fmt.Errorf("%w: --resp on a node with TLS needs a password: give --resp-password-file FILE, or --auth-token-file FILE (Redis clients then AUTH with the token), or --resp-no-password to serve Redis to anyone who reaches it", errUsage)
	}
	return nil
}

// openPort is a port a node serves to anyone who reaches it.
type openPort struct {
	flag, addr string
	risk       string // who may do what
	fix        string // what would require authentication
}

// openPorts returns the ports cfg serves without authentication on addresses other than
// loopback, which a node warns of at start: on loopback only the machine's own users
// reach them, as in a test cluster.
func openPorts(cfg node.Config) []openPort {
	var open []openPort
	add := func(flag, addr string, unauthenticated bool, risk, fix string) {
		if addr != "" && unauthenticated && !isLoopback(addr) {
			open = append(open, openPort{flag: flag, addr: addr, risk: risk, fix: fix})
		}
	}
	add("listen", cfg.Listen, cfg.TLS == nil, "any peer may claim a member's id", "give --tls-cert, --tls-key and --tls-ca")
	add("client", cfg.ClientAddr, cfg.AuthToken == "", "any caller may read, write and run admin commands", "give --auth-token-file")
	add("resp", cfg.RESPAddr, cfg.RESPPassword == "", "any Redis client may read and write", "give --resp-password-file or --auth-token-file")
	add("http", cfg.HTTPAddr, cfg.HTTPToken == "", "anyone may read the console, /metrics and /status", "give --http-token-file")
	return open
}

// isLoopback reports whether a listen address binds to loopback only. An empty host, as
// in ":7100", binds every interface; a host name other than localhost counts as
// reachable, since what it resolves to may change.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
