package main

import (
	"strings"
	"testing"
)

// member is one node of a `kura status --json` answer, as the test writes it.
func statusJSON(self string, members ...string) string {
	var nodes []string
	for _, m := range members {
		// id:status:state:alive[:replaces]
		f := strings.Split(m, ":")
		replaces := ""
		if len(f) == 5 {
			replaces = f[4]
		}
		nodes = append(nodes, `{"id":"`+f[0]+`","status":"`+f[1]+`","state":"`+f[2]+`","alive":`+f[3]+`,"replaces":"`+replaces+`","load_bytes":12}`)
	}
	return `{"self":"` + self + `","nodes":[` + strings.Join(nodes, ",") + `],"protocol_version":4}`
}

func TestUnsettled(t *testing.T) {
	want := expectation{live: []string{"n1", "n2", "n6"}, gone: []string{"n3"}}
	normal := []string{"n1:normal:up:true", "n2:normal:up:true", "n6:normal:up:true", "n3:removed:down:false"}
	tests := []struct {
		name  string
		views map[string][]string // self -> members
		want  string              // "" when settled
	}{
		{"settled", map[string][]string{"n1": normal, "n2": normal, "n6": normal}, ""},
		{"a replacement of a removed node", map[string][]string{"n1": normal, "n2": normal,
			"n6": {"n1:normal:up:true", "n2:normal:up:true", "n6:normal:up:true:n3", "n3:removed:down:false"}}, ""},
		{"a gone node forgotten", map[string][]string{"n1": normal[:3], "n2": normal, "n6": normal}, ""},
		{"a node that did not answer", map[string][]string{"n1": normal, "n2": normal}, "n6 did not answer kura status"},
		{"a replacement still marked", map[string][]string{"n1": normal, "n2": normal,
			"n6": {"n1:normal:up:true", "n2:normal:up:true", "n6:normal:up:true:n3", "n3:normal:down:false"}},
			"n6 sees n3 normal/down (not alive), not left or removed; n6 sees n6 normal/up (replacing n3)"},
		{"a joiner", map[string][]string{"n1": {"n1:normal:up:true", "n2:normal:up:true", "n6:joining:joining:true", "n3:removed:down:false"}, "n2": normal, "n6": normal},
			"n1 sees n6 joining/joining"},
		{"a live node unknown", map[string][]string{"n1": normal, "n2": {"n1:normal:up:true", "n2:normal:up:true"}, "n6": normal},
			"n2 does not know n6"},
		{"a node the sequence did not start", map[string][]string{"n1": append([]string{"n9:booting:down:false"}, normal...), "n2": normal, "n6": normal},
			"n1 sees a member the sequence did not start: n9 booting"},
		{"a dead live node", map[string][]string{"n1": normal, "n2": {"n1:normal:down:false", "n2:normal:up:true", "n6:normal:up:true"}, "n6": normal},
			"n2 sees n1 normal/down (not alive)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			views := map[string]statusView{}
			for self, members := range tt.views {
				v, err := parseStatus(statusJSON(self, members...))
				if err != nil {
					t.Fatal(err)
				}
				views[self] = v
			}
			if got := unsettled(want, views); got != tt.want {
				t.Errorf("unsettled:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseStatusRefusesOtherText(t *testing.T) {
	if _, err := parseStatus("cluster: 3 nodes, 3 up\n"); err == nil {
		t.Error("parseStatus took kura status's text for JSON")
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // the error's text, or "" when accepted
	}{
		{[]string{"--kura", "kura"}, ""},
		{nil, "--kura names no binary (go build -o kura ./cmd/kura)"},
		{[]string{"--kura", "kura", "--settle-timeout", "5s"}, "--settle-timeout must be at least 10s"},
		{[]string{"--kura", "kura", "--writers", "0"}, "--keys and --writers must be at least 1"},
		{[]string{"--kura", "kura", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("parseFlags(%q): %q, want %q", tt.args, got, tt.want)
		}
	}
}
