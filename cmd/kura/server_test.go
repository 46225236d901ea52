package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want, err     string
	}{
		{"one line", "s3cret\n", "s3cret", ""},
		{"first line only", "s3cret\r\nignored\n", "s3cret", ""},
		{"no newline", "s3cret", "s3cret", ""},
		{"empty", "\nlater", "", "the first line is empty"},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readSecret("resp-password-file", path)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %q, %v; want %q, %q", tt.name, got, err, tt.want, tt.err)
		}
	}
	if _, err := readSecret("resp-password-file", filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing secret file was accepted")
	}
}

func TestServerFrontEndFlagErrors(t *testing.T) {
	passwordFile := writeFile(t, "pw", "s3cret\n")
	tests := []struct {
		args []string
		text string
	}{
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-consistency", "MOST"}, "--resp-consistency"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-counters", "fast"}, `--resp-counters is exact or pn, not "fast"`},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-password-file", "/nonexistent/pw"}, "read --resp-password-file"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--tls-cert", "a.crt"}, "give all of --tls-cert, --tls-key and --tls-ca, or none (missing --tls-key, --tls-ca)"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--tls-cert", "a.crt", "--tls-key", "a.key", "--tls-ca", "/nonexistent/ca.crt"}, "read node certificate"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--auth-token-file", "/nonexistent/token"}, "read --auth-token-file"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--max-value-bytes", "67108864"}, "does not fit a replica message"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--max-key-bytes", "0"}, "--max-key-bytes and --max-value-bytes must be positive"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-timeout", "-1s"}, "--resp-timeout must not be negative"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-no-password", "--resp-password-file", passwordFile}, "give --resp-password-file or --resp-no-password, not both"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-keyspace", ""}, `--resp-keyspace: invalid keyspace: name "" must be 1-48 letters`},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-keyspace", "my-app"}, `--resp-keyspace: invalid keyspace: name "my-app" must be 1-48 letters`},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--resp-keyspace", "system_paxos"}, `--resp-keyspace: invalid keyspace: name "system_paxos": names starting with "system" are reserved`},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--emulate-disk-shared"}, "--emulate-disk-shared needs --emulate-disk"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--default-transactions", "tag"}, `--default-transactions "tag": want key or partition`},
	}
	for _, tt := range tests {
		code, _, errOut := kura(tt.args...)
		if code == 0 || !strings.Contains(errOut, tt.text) {
			t.Errorf("kura %v: exit %d, stderr %q; want a failure mentioning %q", tt.args, code, errOut, tt.text)
		}
	}
}

// TestServerRESPKeyspace: --resp-keyspace reaches the Redis front end. A connection
// starts in that keyspace, whose absence each command names with the flag; once it is
// created with per-partition transactions, MULTI over two keys of one hash tag commits
// on a connection that never sent KURA.KEYSPACE.
func TestServerRESPKeyspace(t *testing.T) {
	respAddr, clientAddr := freeAddr(t), freeAddr(t)
	startServer(t, &serverProcess{args: []string{"--id", "n1", "--dc", "dc1", "--in-memory", "--log-level", "warn",
		"--listen", freeAddr(t), "--client", clientAddr, "--resp", respAddr, "--resp-keyspace", "tx"}})
	waitFor(t, "the node answers", "status", "--addr", clientAddr)

	converse := func(commands string, want ...string) {
		t.Helper()
		nc, err := net.Dial("tcp", respAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(nc, commands)
		r := bufio.NewReader(nc)
		for _, w := range want {
			if line, err := r.ReadString('\n'); line != w {
				t.Fatalf("reply %q (%v), want %q", line, err, w)
			}
		}
	}
	converse("KURA.KEYSPACE\r\nGET {u}a\r\n", "$2\r\n", "tx\r\n",
		"-ERR no such keyspace \"tx\": create it (kura keyspace create) or choose another with KURA.KEYSPACE; a new connection starts in the node's --resp-keyspace\r\n")
	waitFor(t, "create tx", "keyspace", "create", "tx", "--replication", "dc1=1", "--transactions", "partition", "--addr", clientAddr)
	converse("MULTI\r\nSET {u}a 1\r\nSET {u}b 2\r\nEXEC\r\nMGET {u}a {u}b\r\n",
		"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n", "+OK\r\n", "+OK\r\n", "*2\r\n", "$1\r\n", "1\r\n", "$1\r\n", "2\r\n")
	if out := waitFor(t, "read through the API", "get", "--addr", clientAddr, "--keyspace", "tx", "{u}b"); out != "2" {
		t.Errorf("kura get --keyspace tx {u}b = %q, want the value EXEC wrote there", out)
	}
}

func TestServerServesRedisAndHTTP(t *testing.T) {
	passwordFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(passwordFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	respAddr, httpAddr := freeAddr(t), freeAddr(t)
	startServer(t, &serverProcess{args: []string{"--id", "n1", "--dc", "dc1", "--in-memory", "--log-level", "warn",
		"--listen", freeAddr(t), "--client", freeAddr(t), "--resp", respAddr, "--http", httpAddr,
		"--resp-password-file", passwordFile, "--resp-consistency", "quorum",
		"--resp-timeout", "90s", "--max-key-bytes", "512", "--max-value-bytes", "1048576"}})

	var resp *http.Response
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if resp, err = http.Get("http://" + httpAddr + "/healthz"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admin port never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok\n" {
		t.Fatalf("/healthz = %q", body)
	}

	nc, err := net.Dial("tcp", respAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(nc, "GET k\r\nAUTH s3cret\r\nKURA.CONSISTENCY\r\nCONFIG GET timeout proto-max-bulk-len\r\n")
	r := bufio.NewReader(nc)
	for _, want := range []string{"-NOAUTH Authentication required.\r\n", "+OK\r\n", "+QUORUM\r\n",
		"*4\r\n", "$18\r\n", "proto-max-bulk-len\r\n", "$7\r\n", "1048576\r\n", "$7\r\n", "timeout\r\n", "$2\r\n", "90\r\n"} {
		if line, err := r.ReadString('\n'); line != want {
			t.Fatalf("reply %q (%v), want %q", line, err, want)
		}
	}
}

func TestSetSpareGoProcs(t *testing.T) {
	tests := []struct {
		name, env   string
		spare, more int
	}{
		{"one spare", "", 1, 1},
		{"none asked", "", 0, 0},
		{"the operator's GOMAXPROCS stands", "3", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tt.env)
			before := runtime.GOMAXPROCS(0)
			restore := setSpareGoProcs(tt.spare)
			if got := runtime.GOMAXPROCS(0); got != before+tt.more {
				t.Errorf("GOMAXPROCS %d after setSpareGoProcs(%d), want %d", got, tt.spare, before+tt.more)
			}
			restore()
			if got := runtime.GOMAXPROCS(0); got != before {
				t.Errorf("GOMAXPROCS %d after restore, want %d as before", got, before)
			}
		})
	}
}
