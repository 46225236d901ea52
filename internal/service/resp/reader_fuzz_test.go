package resp

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime/metrics"
	"strings"
	"testing"
)

// hugeLimits accept bulk strings far larger than any input the fuzzer makes, so that a
// declared length is never refused by a limit and the reader must not trust it: what it
// allocates has to follow the bytes that arrive.
var hugeLimits = ReadLimits{BulkBytesMax: 1 << 40, CommandBytesMax: 1 << 41, ArgsMax: 1 << 30}

// fuzzAllocSlackBytes is what reading any input may allocate beyond fuzzAllocPerByte per
// input byte: the reader's buffer, the first chunk of a large bulk string, error
// messages, and the allocator's span-sized accounting of small objects.
const (
	fuzzAllocSlackBytes = 1 << 20
	fuzzAllocPerByte    = 128
)

// FuzzReadCommand feeds arbitrary bytes to the command reader, under small limits (which
// the fuzzer can reach) and under huge ones (which it cannot, so declared lengths go
// unchecked by them). Reading must not panic, must stop with an end of input or a protocol
// error (a command over the limits is skipped, and reading goes on), must allocate in
// proportion to the input whatever lengths it declares, and every command it returns must
// obey the limits and read back the same once encoded as a RESP array.
func FuzzReadCommand(f *testing.F) {
	for _, seed := range []string{
		encode("SET", "k", "v"),
		encode("GET", "k") + encode("PING"),
		encode("ECHO", "a\r\nb\x00c"),
		encode("SET", "k", ""),
		"*0\r\n*-1\r\n",
		"SET k  v\r\nGET k\n",
		"\r\n",
		"*1\r\n$1099511627776\r\n",        // a bulk of 2^40 bytes, declared and never sent
		"*1\r\n$1099511627775\r\nabc",     // just under 2^40, a few bytes sent
		"*1073741824\r\n$0\r\n\r\n",       // 2^30 arguments declared
		"*1\r\n$99999999999999999999\r\n", // beyond int64
		"*1\r\n$+3\r\nabc\r\n",
		"*2\r\n$101\r\n" + strings.Repeat("v", 101) + "\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n", // skipped, then read
		"ECHO \"a\\x41\" 'b\\'c'\r\n",
		"*1\r\n$3\r\nabcd\r\n",
		"*2\r\n$3\r\nGET\r\n",
		"*1\n",
		"$3\r\nGET\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, limits := range []ReadLimits{testLimits, hugeLimits} {
			before := heapAllocBytes()
			commands, err := readAll(data, limits)
			if allocated := heapAllocBytes() - before; allocated > fuzzAllocSlackBytes+fuzzAllocPerByte*uint64(len(data)) {
				t.Fatalf("limits %+v: reading %d bytes allocated %d bytes", limits, len(data), allocated)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrProtocol) {
				t.Fatalf("limits %+v: reading ended with %v, want an end of input or a protocol error", limits, err)
			}
			for _, c := range commands {
				checkCommand(t, c, limits)
			}
		}
	})
}

// readCommand is one command read, and whether it came as a RESP array or an inline line.
type readCommand struct {
	args  [][]byte
	array bool
}

// readAll reads commands from data until the reader fails, and returns them with the
// error that stopped it.
func readAll(data []byte, limits ReadLimits) ([]readCommand, error) {
	src := bytes.NewReader(data)
	r := NewReader(src, limits)
	var commands []readCommand
	for read := 0; ; read++ {
		// Each command consumes at least one byte, so this ends; the bound only turns a
		// reader that stopped making progress into a failure instead of a hang.
		if read > len(data) {
			return commands, errors.New("more commands than input bytes")
		}
		start := len(data) - src.Len() - r.Buffered()
		args, err := r.ReadCommand()
		if errors.Is(err, ErrTooLarge) {
			continue
		}
		if err != nil {
			return commands, err
		}
		c := readCommand{args: make([][]byte, len(args)), array: data[start] == '*'}
		copy(c.args, args) // ReadCommand reuses the slice it returns
		commands = append(commands, c)
	}
}

// checkCommand checks a command against the limits it was read under, then encodes it as
// a RESP array and reads it back. Inline commands are bounded by the reader's buffer rather
// than by the bulk limits, so their encoding is read back under hugeLimits.
func checkCommand(t *testing.T, c readCommand, limits ReadLimits) {
	t.Helper()
	if len(c.args) > limits.ArgsMax {
		t.Fatalf("command of %d arguments read under a limit of %d", len(c.args), limits.ArgsMax)
	}
	total := 0
	words := make([]string, len(c.args))
	for i, a := range c.args {
		total += len(a)
		words[i] = string(a)
	}
	readBack := hugeLimits
	if c.array {
		readBack = limits
		if total > limits.CommandBytesMax {
			t.Fatalf("command of %d bytes read under a limit of %d", total, limits.CommandBytesMax)
		}
		for _, a := range c.args {
			if len(a) > limits.BulkBytesMax {
				t.Fatalf("bulk string of %d bytes read under a limit of %d", len(a), limits.BulkBytesMax)
			}
		}
	}
	again, err := readAll([]byte(encode(words...)), readBack)
	if !errors.Is(err, io.EOF) || len(again) != 1 {
		t.Fatalf("command %q encoded: read back %d commands, then %v", words, len(again), err)
	}
	if got := again[0].args; !reflect.DeepEqual(got, c.args) {
		t.Fatalf("command %q encoded reads back as %q", words, got)
	}
}

// heapAllocBytes returns the bytes allocated on the heap so far. The runtime counts small
// objects a span at a time, hence the slack in the bound above.
func heapAllocBytes() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}
