package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNodeFlags: the commands that act on nodes the operator names had two copies of
// --addr, --timeout and the security flags (one with --all), and repair and cleanup
// split their own comma lists; an empty entry ("a,,b") or a list given to a one-node
// command reached the dialer, which failed with an obscure error, and a list with --all
// was silently cut to its first address. One flag set parses them all now.
func TestNodeFlags(t *testing.T) {
	tests := []struct {
		name    string
		scope   nodeScope
		args    []string
		want    []string // the addresses, when parsed
		wantErr string   // else what the error says
	}{
		{"default", oneNode, nil, []string{defaultClientAddr}, ""},
		{"one node", oneNode, []string{"--addr", "h:1"}, []string{"h:1"}, ""},
		{"a list for one node", oneNode, []string{"--addr", "h:1,h:2"}, nil, "this command acts on one node"},
		{"--all on a one-node command", oneNode, []string{"--all"}, nil, "flag provided but not defined: -all"},
		{"each in turn, spaces trimmed", eachNode, []string{"--addr", "h:1, h:2"}, []string{"h:1", "h:2"}, ""},
		{"an empty entry", eachNode, []string{"--addr", "h:1,,h:2"}, nil, `--addr "h:1,,h:2": an empty address`},
		{"a trailing comma", eachNode, []string{"--addr", "h:1,"}, nil, "an empty address"},
		{"nothing", eachNode, []string{"--addr", ""}, nil, "an empty address"},
		{"a node twice", eachNode, []string{"--addr", "h:1,h:2,h:1"}, nil, "names h:1 twice"},
		{"--all on an each-node command", eachNode, []string{"--all"}, nil, "flag provided but not defined: -all"},
		{"a list together", nodesOrAll, []string{"--addr", "h:1,h:2"}, []string{"h:1", "h:2"}, ""},
		{"--all with one node", nodesOrAll, []string{"--all", "--addr", "h:1"}, []string{"h:1"}, ""},
		{"--all with a list", nodesOrAll, []string{"--all", "--addr", "h:1,h:2"}, nil, "--all asks the node at --addr for the members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			nf := addNodeFlags(fs, tt.scope, time.Minute)
			err := fs.Parse(tt.args)
			var got []string
			if err == nil {
				got, err = nf.addrs()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%v: %v, want addresses %q", tt.args, err, tt.want)
			case tt.wantErr == "" && !slices.Equal(got, tt.want):
				t.Errorf("%v: addresses %q, want %q", tt.args, got, tt.want)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("%v: addresses %q, error %v; want an error saying %q", tt.args, got, err, tt.wantErr)
			}
		})
	}
}

// TestNodeCommandsShareTheirFlags runs every command that acts on named nodes with an
// --addr it must refuse before it dials anything: each refuses it alike, as a usage
// error (exit 2), and each spells --timeout and the security flags the same.
func TestNodeCommandsShareTheirFlags(t *testing.T) {
	tests := []struct {
		cmd  []string
		addr string
		want string
	}{
		{[]string{"status"}, "h:1,h:2", "acts on one node"},
		{[]string{"ring"}, "h:1,h:2", "acts on one node"},
		{[]string{"info"}, "h:1,h:2", "acts on one node"},
		{[]string{"node", "decommission"}, "h:1,h:2", "acts on one node"},
		{[]string{"node", "decommission", "--force"}, "h:1,h:2", "acts on one node"},
		{[]string{"node", "remove", "n4"}, "h:1,h:2", "acts on one node"},
		{[]string{"power", "status"}, "h:1,h:2", "acts on one node"},
		{[]string{"rebalance", "--keyspace", "app"}, "h:1,h:2", "acts on one node"},
		{[]string{"repair"}, "h:1,,h:2", "an empty address"},
		{[]string{"cleanup"}, "h:1,h:1", "names h:1 twice"},
		{[]string{"snapshot", "list"}, "h:1,", "an empty address"},
		{[]string{"snapshot", "create", "s1", "--all"}, "h:1,h:2", "--all asks the node"},
		{[]string{"restore", "keyspace", "app", "--snapshot", "s1"}, ",h:1", "an empty address"},
	}
	for _, tt := range tests {
		args := append(append([]string{}, tt.cmd...), "--addr", tt.addr, "--timeout", "1s", "--tls-ca", "", "--token-file", "")
		code, out, errOut := kura(args...)
		if code != 2 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("kura %s = exit %d, %q %q; want exit 2 saying %q, and nothing done", strings.Join(args, " "), code, out, errOut, tt.want)
		}
	}
}
