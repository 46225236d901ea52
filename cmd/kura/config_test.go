package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// writeFile writes content to name in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// printConfig runs kura server --print-config with args and returns the settings it
// prints.
func printConfig(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := kura(append(append([]string{"server"}, args...), "--print-config")...)
	if code != 0 {
		t.Fatalf("kura server %v --print-config: exit %d: %s", args, code, errOut)
	}
	return out
}

// TestConfigFileSettingsEqualFlags checks that a config file sets what the same flags
// would, that flags given too override it, and that --print-config's output, read back
// as a config file, sets the same again.
func TestConfigFileSettingsEqualFlags(t *testing.T) {
	file := writeFile(t, "kura.yaml", `# a node of dc1
id: n1
dc: dc1
data-dir: /var/lib/kura
listen: 10.0.0.1:7100
seeds: 10.0.0.2:7100,10.0.0.3:7100
resp: ":6379"
gossip-interval: 2s
read-workers: 0x40
row-cache: 64.5
enable-pprof: true
resp-consistency: quorum
default-replication: dc1=3,dc2=2
`)
	flags := []string{"--id", "n1", "--dc", "dc1", "--data-dir", "/var/lib/kura", "--listen", "10.0.0.1:7100",
		"--seeds", "10.0.0.2:7100,10.0.0.3:7100", "--resp", ":6379", "--gossip-interval", "2s", "--read-workers", "64",
		"--row-cache", "64.5", "--enable-pprof", "--resp-consistency", "quorum", "--default-replication", "dc1=3,dc2=2"}
	tests := []struct {
		name       string
		file, args []string
	}{
		{"file alone", []string{"--config", file}, flags},
		{"a flag overrides the file", []string{"--config", file, "--dc", "dc9", "--listen", "10.0.0.9:7100"},
			append(slices.Clone(flags), "--dc", "dc9", "--listen", "10.0.0.9:7100")},
		{"a flag before --config overrides it too", []string{"--read-workers", "8", "--config", file},
			append(slices.Clone(flags), "--read-workers", "8")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := printConfig(t, tt.file...), printConfig(t, tt.args...)
			if got != want {
				t.Errorf("kura server %v prints\n%s\nwant, as kura server %v,\n%s", tt.file, got, tt.args, want)
			}
			again := writeFile(t, "printed.yaml", got)
			if back := printConfig(t, "--config", again); back != got {
				t.Errorf("--print-config's output read back as a config file prints\n%s\nwant\n%s", back, got)
			}
		})
	}
	if defaults := printConfig(t); strings.Contains(defaults, "\nid: n1\n") || !strings.Contains(defaults, "\nlisten: "+defaultListen+"\n") {
		t.Errorf("kura server --print-config without a file does not print the defaults:\n%s", defaults)
	}
}

func TestConfigFileErrors(t *testing.T) {
	tests := []struct {
		name, content string
		say           []string
	}{
		{"a typo in a key", "id: n1\nresp-pasword-file: pw\n", []string{":2: unknown key resp-pasword-file; did you mean resp-password-file?"}},
		{"an unknown key", "id: n1\nfavourite-colour: blue\n", []string{":2: unknown key favourite-colour (kura server --help lists the keys"}},
		{"a word for a number", "read-workers: lots\n", []string{`:1: read-workers: "lots" is not a whole number`}},
		{"a duration without unit", "\n\ngossip-interval: 5\n", []string{`:3: gossip-interval: "5" is not a duration with its unit`}},
		{"a word for a boolean", "in-memory: yes\n", []string{`:1: in-memory: "yes" is not true or false`}},
		{"a list", "seeds:\n  - 10.0.0.2:7100\n", []string{":1: seeds takes one value, a string, not a list or a mapping"}},
		{"a key twice", "id: n1\ndc: dc1\nid: n2\n", []string{":3: id given twice (first on line 1)"}},
		{"every mistake at once", "id: n1\nlisen: x\nread-workers: x\n", []string{":2: unknown key lisen; did you mean listen?", `:3: read-workers: "x" is not a whole number`}},
		{"a config file naming another", "config: other.yaml\n", []string{":1: config is a command-line flag only"}},
		{"not a mapping", "- id\n- n1\n", []string{":1: want settings as key: value lines"}},
		{"two documents", "id: n1\n---\ndc: dc1\n", []string{":2: a config file holds one document"}},
		{"bad YAML", "id: [n1\n", []string{"yaml: line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "kura.yaml", tt.content)
			code, _, errOut := kura("server", "--config", file, "--print-config")
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)", code)
			}
			for _, say := range tt.say {
				if !strings.Contains(errOut, say) {
					t.Errorf("stderr %q does not say %q", errOut, say)
				}
			}
		})
	}
	if code, _, errOut := kura("server", "--config", filepath.Join(t.TempDir(), "missing.yaml")); code != 1 || !strings.Contains(errOut, "read --config") {
		t.Errorf("a missing config file: exit %d, %q; want exit 1 saying read --config", code, errOut)
	}
	if got := printConfig(t, "--config", writeFile(t, "empty.yaml", "# nothing set\n")); got != printConfig(t) {
		t.Error("an empty config file changes the defaults")
	}
}

// TestExampleConfigListsEveryFlag keeps docs/kura.example.yaml in step with kura
// server's flags: every key is a flag, every flag but --config and --print-config a key,
// and the file is accepted as a config file.
func TestExampleConfigListsEveryFlag(t *testing.T) {
	const example = "../../docs/kura.example.yaml"
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := yaml.Unmarshal(data, &settings); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for key := range settings {
		keys = append(keys, key)
	}
	// kura server --help lists the flags, each as "  -name type".
	_, _, help := kura("server", "--help")
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		if m[1] != configFlag && m[1] != printConfigFlag {
			flags = append(flags, m[1])
		}
	}
	slices.Sort(keys)
	slices.Sort(flags)
	if len(flags) < 40 {
		t.Fatalf("found only %d flags in kura server --help:\n%s", len(flags), help)
	}
	if !slices.Equal(keys, flags) {
		t.Errorf("%s has the keys\n%v\nwant kura server's flags\n%v", example, keys, flags)
	}
	printConfig(t, "--config", example)
}

// TestServerFromConfigFile starts a real node from a config file alone and asks it for
// the cluster's status.
func TestServerFromConfigFile(t *testing.T) {
	clientAddr := freeAddr(t)
	file := writeFile(t, "kura.yaml", "id: n1\ndc: dc1\nin-memory: true\nlog-level: warn\nlisten: "+freeAddr(t)+"\nclient: "+clientAddr+"\n")
	startServer(t, &serverProcess{args: []string{"--config", file}})
	out := waitFor(t, "the node of the config file answers", "status", "--addr", clientAddr)
	if !strings.Contains(out, "n1") || !strings.Contains(out, "dc1") {
		t.Errorf("kura status = %q, want node n1 of dc1", out)
	}
}
