package resp

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestKeySpecsFindKeys: the key specifications find the keys redis-server 7.0.15's
// COMMAND GETKEYS answers, for commands of every kind of specification, kura's or not.
func TestKeySpecsFindKeys(t *testing.T) {
	many := []string{"zunionstore", "target", "260"}
	for i := 1; i <= 260; i++ {
		many = append(many, "key"+strconv.Itoa(i))
	}
	tests := []struct {
		args string // split at spaces
		want string // the keys, space-separated; "!" for no answer from the specifications
	}{
		{"get k", "k"},
		{"mset a 1 b 2", "a b"},
		{"lcs a b", "a b"},
		{"object encoding k", "k"},
		{"blpop a b 0", "a b"},
		{"lmove a b left right", "a b"},
		{"zunionstore d 2 a b WEIGHTS 1 2", "d a b"},
		{strings.Join(many, " "), strings.Join(append([]string{"target"}, many[3:]...), " ")},
		{"zunionstore d 3 a b", "!"},             // fewer keys than counted
		{"zunionstore d x a", "!"},               // a count that is not a number
		{"eval s 0", "!"},                        // no key: EVAL may have none
		{"eval s 1 k", "k"},                      // index, then count
		{"xread COUNT 1 STREAMS a b 0 0", "a b"}, // after a keyword, half of the rest
		{"xread STREAMS a b 0", "a"},
		{"georadius k 0 0 1 km STORE d", "k d"},
		{"migrate h p k 0 5", "k"},
		{"migrate h p x 0 5 KEYS a b", "!"}, // an incomplete specification: Redis's own code finds a b
		{"sort k", "!"},                     // a key of unknown position
	}
	for _, tt := range tests {
		args := strings.Split(tt.args, " ")
		var argv [][]byte
		for _, a := range args {
			argv = append(argv, []byte(a))
		}
		name := args[0]
		if name == "object" {
			name = "object|encoding"
		}
		refs, ok := redisKeySpecs[name].keys(argv)
		var got []string
		for _, r := range refs {
			got = append(got, args[r.pos])
		}
		if !ok {
			got = []string{"!"}
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("keys of %.60s = %q, want %q", tt.args, strings.Join(got, " "), tt.want)
		}
	}
}

// TestMovableKeys: the commands marked movablekeys are those whose keys a keyword, a
// count or the values place, as redis-server 7.0.15 marks them (the suite's lists).
func TestMovableKeys(t *testing.T) {
	for _, name := range []string{"set", "get", "mset", "bitfield", "lmove", "lpop", "blpop", "memory|usage", "rename", "georadius_ro"} {
		if redisKeySpecs[name].movable() {
			t.Errorf("%s is marked movablekeys", name)
		}
	}
	for _, name := range []string{"zunionstore", "xread", "eval", "sort", "sort_ro", "migrate", "georadius"} {
		if !redisKeySpecs[name].movable() {
			t.Errorf("%s is not marked movablekeys", name)
		}
	}
}

// TestEveryKeyedCommandHasKeySpecs: each command of kura's table that reports keys
// (first key, last key, step) has Redis's key specifications, and they start at the
// same argument; a command that reports none has none that are keys, unless a count
// places them (movablekeys: Redis reports no first key for ZUNION either). A command added
// to the table with a first key Redis does not give fails here.
func TestEveryKeyedCommandHasKeySpecs(t *testing.T) {
	for _, cmd := range NewServer(Config{Backend: newFakeBackend()}).allCommands() {
		keys, ok := redisKeySpecs[cmd.name]
		switch {
		case cmd.firstKey == 0 && keys.hasKeys() && !keys.movable():
			t.Errorf("%s reports no keys, but Redis's key specifications have some", cmd.name)
		case cmd.firstKey == 0:
		case !ok:
			t.Errorf("%s has keys but no key specification", cmd.name)
		case keys.specs[0].begin.index != cmd.firstKey:
			t.Errorf("%s's first key is argument %d, Redis's specification's %d", cmd.name, cmd.firstKey, keys.specs[0].begin.index)
		}
	}
}

// TestMovableKeysComeFromKeySpecs: COMMAND adds movablekeys from a command's key
// specification, so no command names it among its own flags (SINTERCARD did, and COMMAND
// INFO listed it twice).
func TestMovableKeysComeFromKeySpecs(t *testing.T) {
	for name, cmd := range commandTable() {
		if slices.Contains(cmd.flags, "movablekeys") {
			t.Errorf("%s names movablekeys among its flags", name)
		}
	}
}
