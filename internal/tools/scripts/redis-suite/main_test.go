package main

import (
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/tools/bench"
)

func TestParseFlagsKuraTransactions(t *testing.T) {
	tests := []struct {
		args []string
		want string // the option's value, or the error's text
	}{
		{nil, "partition"},
		{[]string{"--kura-transactions", "key"}, "key"},
		{[]string{"--kura-transactions", "partition"}, "partition"},
		{[]string{"--kura-transactions", "row"}, `--kura-transactions is key or partition, not "row"`},
		{[]string{"--kura-transactions", ""}, `--kura-transactions is key or partition, not ""`},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args)
		got := o.transactions
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("parseFlags(%q): %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestSkipTests: both runs skip the out-of-scope tests that would wait for ever, each by
// the suite's --skiptest, which the report's suite_args show; --skip-tests "" skips none.
func TestSkipTests(t *testing.T) {
	tests := []struct {
		args []string
		want string // the --skiptest options of suiteArgs
	}{
		{nil, "--skiptest BRPOPLPUSH with multiple blocked clients"},
		{[]string{"--skip-tests", ""}, ""},
		{[]string{"--skip-tests", "a, b c"}, "--skiptest a --skiptest b c"},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args)
		if err != nil {
			t.Fatal(err)
		}
		args := o.suiteArgs()
		var skips []string
		for i, a := range args {
			if a == "--skiptest" {
				skips = append(skips, a, args[i+1])
			}
		}
		if got := strings.Join(skips, " "); got != tt.want {
			t.Errorf("parseFlags(%q): %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestPrintLabelsTheConfiguration: a report of the per-key configuration says it is
// not kura's default one, and a report saved before --kura-transactions existed reads
// as per key, which it ran.
func TestPrintLabelsTheConfiguration(t *testing.T) {
	tests := []struct {
		transactions string
		want         string
	}{
		{"partition", "kura's configuration: --kura-transactions partition: the default configuration: connections in the default keyspace, whose transactions run per partition (kura server --default-transactions partition)\n"},
		{"key", "kura's configuration: --kura-transactions key: NOT the default configuration: kura server --default-transactions key, the default keyspace a transaction per key (as a cluster begun before 7 December 2026 keeps it)\n"},
		{"", "kura's configuration: --kura-transactions key: NOT the default configuration"},
	}
	for _, tt := range tests {
		r := report{Environment: &bench.Environment{}, KuraTransactions: tt.transactions}
		r.summarize()
		var b strings.Builder
		r.print(&b)
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("%q: the report\n%s\nlacks %q", tt.transactions, b.String(), tt.want)
		}
	}
}
