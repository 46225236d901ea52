package main

import (
	"strings"
	"testing"
)

func TestRepairPrintsWhatEachNodeDid(t *testing.T) {
	c := startThreeDC(t)
	first, second := c.Nodes[0].ClientAddr(), c.Nodes[1].ClientAddr()
	if code, out, errOut := kura("keyspace", "create", "app", "--replication", "simple=3", "--addr", first); code != 0 {
		t.Fatalf("keyspace create: exit %d, %s %s", code, out, errOut)
	}
	if code, out, errOut := kura("put", "--keyspace", "app", "--consistency", "ALL", "k", "v", "--addr", first); code != 0 {
		t.Fatalf("put: exit %d, %s %s", code, out, errOut)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"two nodes, one keyspace", []string{"--keyspace", "app", "--addr", first + "," + second}, 0,
			[]string{"NODE ", "RANGES  DIFFERING", c.Nodes[0].ID() + " ", c.Nodes[1].ID() + " "}},
		{"every keyspace, one DC", []string{"--dc", c.Nodes[0].Self().DC, "--addr", first}, 0, []string{c.Nodes[0].ID() + " "}},
		{"unknown keyspace", []string{"--keyspace", "nope", "--addr", first}, 1, []string{`keyspace "nope"`}},
		{"an argument", []string{"app", "--addr", first}, 2, []string{"no arguments"}},
	}
	for _, tt := range tests {
		code, out, errOut := kura(append([]string{"repair"}, tt.args...)...)
		for _, want := range tt.contains {
			if code != tt.code || !strings.Contains(out+errOut, want) {
				t.Errorf("%s: kura repair %v = exit %d, %q %q; want exit %d saying %q", tt.name, tt.args, code, out, errOut, tt.code, want)
			}
		}
	}
}
