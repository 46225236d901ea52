package resp

import (
	"strings"
)

// Key specifications: where a command's keys are among its arguments and what it does
// with them, as Redis 7 describes its commands (COMMAND INFO's ninth field, COMMAND
// GETKEYS and GETKEYSANDFLAGS). kura's commands take Redis's arguments, so they have
// Redis's specifications: redisKeySpecs (keyspecs_redis.go) holds every Redis 7.0
// command's, generated from redis-server, and a command of kura's table reports the
// entry of its name.

// commandKeys are a command's key specifications.
type commandKeys struct {
	specs []keySpec
	// noMandatoryKeys marks the commands that may name no key (EVAL with 0 keys): COMMAND
	// GETKEYS answers them an empty list where it refuses others.
	noMandatoryKeys bool
}

// keySpec is one key specification: how to find its first key (begin), then its keys
// from there (find), and what the command does with them (flags: RO, RW, OW or RM, then
// access, update, insert, delete, and not_key, incomplete, variable_flags).
type keySpec struct {
	notes string
	flags []string
	begin keySearch
	find  keyFind
}

// keySearch finds a specification's first key: at an argument's index, or after a
// keyword searched for from startFrom (from the end when negative); with neither, the
// position is unknown (it depends on the arguments' values).
type keySearch struct {
	index     int
	keyword   string
	startFrom int
}

// findKind is how keyFind finds the keys after the first.
type findKind int

const (
	// findUnknown: the keys cannot be found from the specification alone.
	findUnknown findKind = iota
	// findRange: keys up to lastKey (from the first key; from the end when negative),
	// every keyStep; with limit, the keys are 1/limit of the arguments left.
	findRange
	// findKeynum: the argument at keynumIdx (from the first) counts the keys, which
	// start firstKey arguments after it, every keyStep.
	findKeynum
)

// keyFind finds a specification's keys from its first.
type keyFind struct {
	kind                    findKind
	lastKey, keyStep, limit int
	keynumIdx, firstKey     int
}

// movable reports whether the specifications' keys move with the arguments' values
// (Redis's movablekeys flag): a key found by a keyword, a count, or not known.
func (ck commandKeys) movable() bool {
	for _, spec := range ck.specs {
		if spec.begin.index == 0 || spec.find.kind != findRange {
			return true
		}
	}
	return false
}

// hasKeys reports whether the command has a key specification of a real key.
func (ck commandKeys) hasKeys() bool {
	for _, spec := range ck.specs {
		if !spec.hasFlag("not_key") {
			return true
		}
	}
	return false
}

func (spec keySpec) hasFlag(flag string) bool {
	for _, f := range spec.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// keyRef is one key argument that keys found: its index among the arguments (the
// command's name is 0) and the flags of its specification.
type keyRef struct {
	pos   int
	flags []string
}

// keys finds args' keys by the specifications, as Redis's getKeysUsingKeySpecs does;
// ok is false when a specification cannot say (unknown or incomplete) or the arguments
// do not fit it. Specifications of arguments that are not keys are skipped.
func (ck commandKeys) keys(args [][]byte) (refs []keyRef, ok bool) {
	for _, spec := range ck.specs {
		if spec.hasFlag("not_key") {
			continue
		}
		first := spec.begin.index
		switch {
		case first > 0:
		case spec.begin.keyword != "":
			first = keywordEnd(args, spec.begin.keyword, spec.begin.startFrom)
			if first == 0 {
				continue // the keyword is absent: this specification has no keys here
			}
		default:
			return nil, false
		}
		var last, step int
		switch spec.find.kind {
		case findRange:
			step = spec.find.keyStep
			switch {
			case spec.find.lastKey >= 0:
				last = first + spec.find.lastKey
			case spec.find.limit == 0:
				last = len(args) + spec.find.lastKey
			default:
				last = first + (len(args)-first)/spec.find.limit + spec.find.lastKey
			}
		case findKeynum:
			step = spec.find.keyStep
			at := first + spec.find.keynumIdx
			if at >= len(args) {
				return nil, false
			}
			n, isInt := parseInt(args[at])
			if !isInt || n < 0 || n > int64(len(args)) {
				return nil, false
			}
			first += spec.find.firstKey
			last = first + int(n) - 1
		default:
			return nil, false
		}
		if last >= len(args) || last < first || first >= len(args) || step < 1 {
			return nil, false
		}
		for i := first; i <= last; i += step {
			refs = append(refs, keyRef{pos: i, flags: spec.flags})
		}
		if spec.hasFlag("incomplete") {
			return nil, false
		}
	}
	return refs, true
}

// keywordEnd returns the index after keyword's first occurrence in args, searched from
// startFrom toward the end (from the end toward the start when startFrom is negative);
// 0 when it is absent.
func keywordEnd(args [][]byte, keyword string, startFrom int) int {
	start, end, dir := startFrom, len(args)-1, 1
	if startFrom < 0 {
		start, end, dir = len(args)+startFrom, 1, -1
	}
	for i := start; i != end; i += dir {
		if i >= len(args) || i < 1 {
			break
		}
		if strings.EqualFold(string(args[i]), keyword) {
			return i + 1
		}
	}
	return 0
}

// getKeys is COMMAND GETKEYS and GETKEYSANDFLAGS command [arg ...]: the arguments of
// command that are keys, by its key specifications, with their flags when withFlags,
// and Redis's refusals in Redis's order.
func (c *conn) getKeys(command [][]byte, withFlags bool) {
	cmd := c.s.commands[string(appendLower(nil, command[0]))]
	if cmd != nil && cmd.subcommands != nil && len(command) > 1 {
		cmd = cmd.subcommands[string(appendLower(nil, command[1]))]
	}
	if cmd == nil {
		c.w.Error("ERR Invalid command specified")
		return
	}
	keys := redisKeySpecs[cmd.name]
	switch {
	case !keys.hasKeys():
		c.w.Error("ERR The command has no key arguments")
		return
	case cmd.arity > 0 && len(command) != cmd.arity, len(command) < -cmd.arity:
		c.w.Error("ERR Invalid number of arguments specified for command")
		return
	}
	refs, ok := keys.keys(command)
	if find := keyFunctions[cmd.name]; find != nil {
		refs, ok = find(command), true
	}
	if flags := variableKeyFlags[cmd.name]; flags != nil && ok {
		for i := range refs {
			refs[i].flags = flags(command)
		}
	}
	if !ok || len(refs) == 0 {
		if keys.noMandatoryKeys {
			c.w.ArrayHeader(0)
		} else {
			c.w.Error("ERR Invalid arguments specified for command")
		}
		return
	}
	c.w.ArrayHeader(len(refs))
	for _, ref := range refs {
		if !withFlags {
			c.w.Bulk(command[ref.pos])
			continue
		}
		c.w.ArrayHeader(2)
		c.w.Bulk(command[ref.pos])
		c.w.ArrayHeader(len(ref.flags))
		for _, f := range ref.flags {
			c.w.SimpleString(f)
		}
	}
}

// keyFunctions find the keys of the commands whose key specifications are incomplete, as
// Redis's getkeys functions of those commands do.
var keyFunctions = map[string]func(args [][]byte) []keyRef{
	"sort":    sortKeys,
	"sort_ro": sortKeys,
}

// variableKeyFlags are the flags of the keys of the commands whose key specification
// says variable_flags, by their arguments, as Redis's getkeys functions give them.
var variableKeyFlags = map[string]func(args [][]byte) []string{
	// SET reads the key it writes only with GET.
	"set": func(args [][]byte) []string {
		for _, arg := range args[min(3, len(args)):] {
			if strings.EqualFold(string(arg), "GET") {
				return []string{"RW", "access", "update"}
			}
		}
		return []string{"OW", "update"}
	},
}

// writeKeySpecs writes COMMAND INFO's key specifications field, each a map as Redis's.
func (c *conn) writeKeySpecs(specs []keySpec) {
	c.w.ArrayHeader(len(specs))
	for _, spec := range specs {
		c.w.MapHeader(3 + btoi(spec.notes != ""))
		if spec.notes != "" {
			c.w.BulkString("notes")
			c.w.BulkString(spec.notes)
		}
		c.w.BulkString("flags")
		c.w.ArrayHeader(len(spec.flags))
		for _, f := range spec.flags {
			c.w.SimpleString(f)
		}
		c.w.BulkString("begin_search")
		switch {
		case spec.begin.index > 0:
			c.writeSearch("index", "index", int64(spec.begin.index))
		case spec.begin.keyword != "":
			c.writeSearch("keyword", "keyword", spec.begin.keyword, "startfrom", int64(spec.begin.startFrom))
		default:
			c.writeSearch("unknown")
		}
		c.w.BulkString("find_keys")
		switch spec.find.kind {
		case findRange:
			c.writeSearch("range", "lastkey", int64(spec.find.lastKey), "keystep", int64(spec.find.keyStep), "limit", int64(spec.find.limit))
		case findKeynum:
			c.writeSearch("keynum", "keynumidx", int64(spec.find.keynumIdx), "firstkey", int64(spec.find.firstKey), "keystep", int64(spec.find.keyStep))
		default:
			c.writeSearch("unknown")
		}
	}
}

// writeSearch writes a begin_search or find_keys map: its type, and its spec's fields,
// names alternating with values (strings or integers).
func (c *conn) writeSearch(kind string, fields ...any) {
	c.w.MapHeader(2)
	c.w.BulkString("type")
	c.w.BulkString(kind)
	c.w.BulkString("spec")
	c.w.MapHeader(len(fields) / 2)
	for _, f := range fields {
		switch v := f.(type) {
		case string:
			c.w.BulkString(v)
		case int64:
			c.w.Int(v)
		}
	}
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
