package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kuradb/kura/cmd/internal/cli"
)

// The config file is flat: each key is a kura server flag's name and holds what the flag
// would be given (listen: 127.0.0.1:7100). One name per setting serves the command line,
// the file, --print-config and the docs alike, and no table of file names that could
// drift from the flags is needed. docs/kura.example.yaml lists every key.
const (
	configFlag      = "config"
	printConfigFlag = "print-config"
)

// parseServerFlags parses kura server's command line over the settings of the config
// file --config names: a flag given on the command line overrides the file's key of
// the same name, and a flag given in neither keeps its default. It reports whether
// --print-config asks only for the settings to be printed.
func parseServerFlags(fs *flag.FlagSet, args []string) (printConfig bool, err error) {
	path := fs.String(configFlag, "", "YAML file of settings, each under its flag's name, e.g. listen: 127.0.0.1:7100 (flags given too override it; docs/kura.example.yaml)")
	printOnly := fs.Bool(printConfigFlag, false, "print the settings in effect (config file, flags, defaults) as a config file, and exit")
	if _, err := parseFlags(fs, args); err != nil {
		return false, err
	}
	if *path == "" {
		return *printOnly, nil
	}
	data, err := os.ReadFile(*path)
	if err != nil {
		return false, fmt.Errorf("read --%s: %w", configFlag, err)
	}
	if err := applyConfig(fs, *path, data); err != nil {
		return false, err
	}
	// The file was applied over the command line's values: parse the command line
	// again so that its flags win.
	if _, err := parseFlags(fs, args); err != nil {
		return false, err
	}
	return *printOnly, nil
}

// applyConfig sets the flags of fs from the config file data, named path in errors. It
// reports every mistake by line: a key unknown or given twice, a value its flag does not
// take.
func applyConfig(fs *flag.FlagSet, path string, data []byte) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // An empty file sets nothing.
		}
		return fmt.Errorf("%w: --%s %s: %v", errUsage, configFlag, path, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s:%d: a config file holds one document, this is a second", errUsage, path, extra.Line)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%w: %s:%d: want settings as key: value lines, e.g. listen: 127.0.0.1:7100", errUsage, path, root.Line)
	}
	var problems []string
	firstLine := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, value := root.Content[i], root.Content[i+1]
		if msg := applyConfigEntry(fs, key, value, firstLine); msg != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: %s", path, key.Line, msg))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", errUsage, strings.Join(problems, "\n"))
	}
	return nil
}

// applyConfigEntry sets the flag of one key: value of a config file and returns "", or
// returns what is wrong with it. seen holds the lines of the keys before it.
func applyConfigEntry(fs *flag.FlagSet, key, value *yaml.Node, seen map[string]int) string {
	if key.Kind != yaml.ScalarNode {
		return "want a key: value line, whose key is a kura server flag's name"
	}
	name := key.Value
	if name == configFlag || name == printConfigFlag {
		return fmt.Sprintf("%s is a command-line flag only, not a setting", name)
	}
	f := fs.Lookup(name)
	if f == nil {
		if closest := cli.ClosestFlag(fs, name); closest != "" {
			return fmt.Sprintf("unknown key %s; did you mean %s? (kura server --help lists the keys, as flags)", name, closest)
		}
		return fmt.Sprintf("unknown key %s (kura server --help lists the keys, as flags)", name)
	}
	if line, ok := seen[name]; ok {
		return fmt.Sprintf("%s given twice (first on line %d)", name, line)
	}
	seen[name] = key.Line
	if value.Kind != yaml.ScalarNode {
		return fmt.Sprintf("%s takes one value, %s, not a list or a mapping", name, flagKind(f))
	}
	if err := fs.Set(name, value.Value); err != nil {
		return fmt.Sprintf("%s: %q is not %s", name, value.Value, flagKind(f))
	}
	return ""
}

// flagKind names the kind of value flag f takes, for errors.
func flagKind(f *flag.Flag) string {
	switch f.Value.(flag.Getter).Get().(type) {
	case bool:
		return "true or false"
	case int:
		return "a whole number"
	case float64:
		return "a number"
	case time.Duration:
		return "a duration with its unit, e.g. 10s, 500ms or 2m"
	}
	return "a string"
}

// yamlTag is the YAML tag of flag f's values in --print-config: strings (durations
// too) are tagged, so that one that would read as a number or a boolean is quoted;
// numbers and booleans are left to read as what they are.
func yamlTag(f *flag.Flag) string {
	switch f.Value.(flag.Getter).Get().(type) {
	case bool, int, float64:
		return ""
	}
	return "!!str"
}

// writeConfig writes the value of every flag of fs but --config and --print-config as a
// config file, each under its flag's usage as a comment.
func writeConfig(w io.Writer, fs *flag.FlagSet) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == configFlag || f.Name == printConfigFlag {
			return
		}
		comment := f.Usage
		if len(root.Content) > 0 {
			comment = "\n# " + comment // a blank line between settings
		}
		root.Content = append(root.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: f.Name, HeadComment: comment},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: yamlTag(f), Value: f.Value.String()})
	})
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return enc.Close()
}
