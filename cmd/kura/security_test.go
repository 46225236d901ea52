package main

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/io/certs"
)

func TestSetRESPPassword(t *testing.T) {
	tls := &certs.Identity{}
	tests := []struct {
		name       string
		cfg        node.Config
		password   string
		noPassword bool
		want, err  string
	}{
		{"open node, no password", node.Config{RESPAddr: ":6379"}, "", false, "", ""},
		{"the password given", node.Config{RESPAddr: ":6379", AuthToken: "tok"}, "pw", false, "pw", ""},
		{"the token by default", node.Config{RESPAddr: ":6379", AuthToken: "tok"}, "", false, "tok", ""},
		{"the token, with TLS", node.Config{RESPAddr: ":6379", AuthToken: "tok", TLS: tls}, "", false, "tok", ""},
		{"TLS without a password refused", node.Config{RESPAddr: ":6379", TLS: tls}, "", false, "", "--resp on a node with TLS needs a password"},
		{"TLS, opted out", node.Config{RESPAddr: ":6379", TLS: tls}, "", true, "", ""},
		{"token, opted out", node.Config{RESPAddr: ":6379", AuthToken: "tok"}, "", true, "", ""},
		{"TLS without Redis", node.Config{TLS: tls}, "", false, "", ""},
		{"password and opt-out", node.Config{RESPAddr: ":6379"}, "pw", true, "", "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			err := setRESPPassword(&cfg, tt.password, tt.noPassword)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if err == nil && cfg.RESPPassword != tt.want {
				t.Errorf("password %q, want %q", cfg.RESPPassword, tt.want)
			}
		})
	}
}

func TestOpenPorts(t *testing.T) {
	tls := &certs.Identity{}
	tests := []struct {
		name string
		cfg  node.Config
		want []string // flag@addr of the ports warned of
	}{
		{"loopback test node", node.Config{Listen: "127.0.0.1:7100", ClientAddr: "127.0.0.1:7200", RESPAddr: "localhost:6379", HTTPAddr: "[::1]:8080"}, nil},
		{"every port open", node.Config{Listen: "10.0.0.1:7100", ClientAddr: ":7200", RESPAddr: "0.0.0.0:6379", HTTPAddr: "db1.example:8080"},
			[]string{"listen@10.0.0.1:7100", "client@:7200", "resp@0.0.0.0:6379", "http@db1.example:8080"}},
		{"secured node", node.Config{Listen: "10.0.0.1:7100", ClientAddr: "10.0.0.1:7200", RESPAddr: "10.0.0.1:6379", TLS: tls, AuthToken: "tok", RESPPassword: "tok"}, nil},
		{"Redis opted out", node.Config{Listen: "10.0.0.1:7100", ClientAddr: "10.0.0.1:7200", RESPAddr: "10.0.0.1:6379", TLS: tls, AuthToken: "tok"},
			[]string{"resp@10.0.0.1:6379"}},
		{"HTTP without its token", node.Config{Listen: "127.0.0.1:7100", HTTPAddr: "10.0.0.1:8080", TLS: tls, AuthToken: "tok"},
			[]string{"http@10.0.0.1:8080"}},
		{"HTTP with its token", node.Config{Listen: "127.0.0.1:7100", HTTPAddr: "10.0.0.1:8080", HTTPToken: "tok"}, nil},
		{"no client API", node.Config{Listen: "127.0.0.1:7100"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range openPorts(tt.cfg) {
				got = append(got, p.flag+"@"+p.addr)
				if p.risk == "" || p.fix == "" {
					t.Errorf("port %s: warning without its risk or fix: %+v", p.flag, p)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("warned of %v, want %v", got, tt.want)
			}
		})
	}
}

// respExchange sends commands, one a line, to the Redis port at addr and returns the
// first line of each reply.
func respExchange(t *testing.T, addr string, commands ...string) []string {
	t.Helper()
	var nc net.Conn
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if nc, err = net.Dial("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Redis port never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(nc, strings.Join(commands, "\r\n")+"\r\n")
	r := bufio.NewReader(nc)
	var replies []string
	for range commands {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the replies to %q: %v (so far %q)", commands, err, replies)
		}
		replies = append(replies, strings.TrimSuffix(line, "\r\n"))
	}
	return replies
}

// TestRedisRequiresTheToken starts a node with a token and a Redis port, and one that
// opts out with --resp-no-password.
func TestRedisRequiresTheToken(t *testing.T) {
	token := writeFile(t, "token", "s3cret\n")
	closed, open := freeAddr(t), freeAddr(t)
	for _, p := range []struct {
		resp  string
		extra []string
	}{{closed, nil}, {open, []string{"--resp-no-password"}}} {
		startServer(t, &serverProcess{args: append([]string{"--id", "n1", "--dc", "dc1", "--in-memory", "--log-level", "warn",
			"--listen", freeAddr(t), "--client", freeAddr(t), "--resp", p.resp, "--auth-token-file", token}, p.extra...)})
	}
	tests := []struct {
		name, addr string
		commands   []string
		want       []string
	}{
		{"the token's node", closed, []string{"SET k v", "AUTH wrong", "AUTH s3cret", "SET k v", "GET k"},
			[]string{"-NOAUTH Authentication required.", "-WRONGPASS invalid username-password pair or user is disabled.", "+OK", "+OK", "$1"}},
		{"opted out", open, []string{"SET k v", "GET k"}, []string{"+OK", "$1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := respExchange(t, tt.addr, tt.commands...); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("replies %q, want %q", got, tt.want)
			}
		})
	}
}
