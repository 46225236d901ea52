package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCertsCommand runs kura certs as an operator would: a first run, a refused rerun,
// a forced one, and bad input.
func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	tests := []struct {
		name string
		args []string
		code int
		say  []string
	}{
		{"no flags", nil, 2, []string{"certs --dir DIR --nodes"}},
		{"first run", []string{"--dir", dir, "--nodes", "n1,n2"}, 0,
			[]string{"wrote " + filepath.Join(dir, "ca.crt"), "wrote " + filepath.Join(dir, "n2.key"), "--tls-ca " + filepath.Join(dir, "ca.crt")}},
		{"rerun", []string{"--dir", dir, "--nodes", "n1,n2"}, 1, []string{"already exist; pass --force"}},
		{"forced rerun", []string{"--dir", dir, "--nodes", "n2", "--force"}, 0, []string{"signed by the existing CA", "wrote " + filepath.Join(dir, "n2.crt")}},
		{"bad node id", []string{"--dir", dir, "--nodes", "n 3"}, 1, []string{`node id "n 3" cannot be named in a certificate`}},
		{"bad host", []string{"--dir", dir, "--nodes", "n3", "--hosts", "a host"}, 1, []string{"neither an IP address nor a DNS name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := kura(append([]string{"certs"}, tt.args...)...)
			for _, want := range tt.say {
				if code != tt.code || !strings.Contains(out+errOut, want) {
					t.Errorf("kura certs %v = exit %d, %q %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, want)
				}
			}
		})
	}
}

// TestSecuredServer starts a server with the certificates kura certs made and a token,
// and talks to it with the client commands' --tls-ca and --token-file.
func TestSecuredServer(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := kura("certs", "--dir", dir, "--nodes", "n1"); code != 0 {
		t.Fatalf("kura certs: exit %d: %s%s", code, out, errOut)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	clientAddr := freeAddr(t)
	startServer(t, &serverProcess{args: []string{"--id", "n1", "--dc", "dc1", "--in-memory", "--log-level", "warn",
		"--listen", freeAddr(t), "--client", clientAddr,
		"--tls-cert", filepath.Join(dir, "n1.crt"), "--tls-key", filepath.Join(dir, "n1.key"), "--tls-ca", ca,
		"--auth-token-file", tokenFile}})
	secured := []string{"--addr", clientAddr, "--tls-ca", ca, "--token-file", tokenFile}
	waitFor(t, "n1 answers over TLS", append([]string{"status"}, secured...)...)

	tests := []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"keyspace create", append([]string{"keyspace", "create", "app", "--replication", "simple=1"}, secured...), 0, "keyspace app created"},
		{"put", append([]string{"put", "--keyspace", "app", "k", "v"}, secured...), 0, ""},
		{"get", append([]string{"get", "--keyspace", "app", "k"}, secured...), 0, "v"},
		{"cleanup", append([]string{"cleanup"}, secured...), 0, "removed 0 records"},
		{"repair", append([]string{"repair", "--keyspace", "app"}, secured...), 0, "n1 "},
		{"no token", []string{"status", "--addr", clientAddr, "--tls-ca", ca, "--timeout", "5s"}, 1, "this node requires a token"},
		{"no TLS", []string{"status", "--addr", clientAddr, "--token-file", tokenFile, "--timeout", "5s"}, 1, "serves TLS: give the client its CA (--tls-ca"},
		{"missing token file", []string{"status", "--addr", clientAddr, "--token-file", filepath.Join(dir, "nope")}, 1, "read --token-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := kura(tt.args...)
			if code != tt.code || !strings.Contains(out+errOut, tt.say) {
				t.Errorf("kura %v = exit %d, %q %q (after %v); want exit %d saying %q", tt.args, code, out, errOut, time.Since(start), tt.code, tt.say)
			}
		})
	}
}
