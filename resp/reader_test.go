package resp

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

var testLimits = ReadLimits{BulkBytesMax: 100, CommandBytesMax: 150, ArgsMax: 4}

func TestReadCommand(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  [][]string // successive commands
	}{
		{"array", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", [][]string{{"GET", "k"}}},
		{"binary-safe bulk", "*2\r\n$4\r\nECHO\r\n$6\r\na\r\nb\x00c\r\n", [][]string{{"ECHO", "a\r\nb\x00c"}}},
		{"empty bulk", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", [][]string{{"SET", "k", ""}}},
		{"pipelined", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}, {"PING"}}},
		{"empty array", "*0\r\n*1\r\n$4\r\nPING\r\n", [][]string{{}, {"PING"}}},
		{"negative array", "*-1\r\n", [][]string{{}}},
		{"inline", "SET k  v\r\nGET k\n", [][]string{{"SET", "k", "v"}, {"GET", "k"}}},
		{"empty inline", "\r\n", [][]string{{}}},
		{"bulk at the limit", "*1\r\n$100\r\n" + strings.Repeat("x", 100) + "\r\n", [][]string{{strings.Repeat("x", 100)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.input), testLimits)
			for i, want := range tt.want {
				args, err := r.ReadCommand()
				if err != nil {
					t.Fatalf("command %d: %v", i, err)
				}
				got := make([]string, len(args))
				for j, a := range args {
					got[j] = string(a)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("command %d = %q, want %q", i, got, want)
				}
			}
			if _, err := r.ReadCommand(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the input: %v, want EOF", err)
			}
		})
	}
}

func TestReadCommandRefusesMalformedInput(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // in the error; "" means a truncation, not a protocol error
	}{
		{"bad array length", "*x\r\n", "invalid multibulk length"},
		{"too many arguments", "*5\r\n", "multibulk length 5 exceeds the limit of 4"},
		{"missing dollar", "*1\r\n:3\r\n", "expected '$', got ':'"},
		{"bad bulk length", "*1\r\n$abc\r\n", "invalid bulk length"},
		{"negative bulk length", "*1\r\n$-1\r\n", "invalid bulk length -1"},
		{"bulk over the limit", "*1\r\n$101\r\n", "bulk length 101 exceeds the limit of 100"},
		{"huge declared length", "*1\r\n$99999999999999999999\r\n", "invalid bulk length"},
		{"command over the limit", "*2\r\n$100\r\n" + strings.Repeat("x", 100) + "\r\n$60\r\n", "command larger than the limit of 150 bytes"},
		{"bulk without CRLF", "*1\r\n$2\r\nabcd\r\n", "bulk string not terminated by CRLF"},
		{"header without CR", "*1\n", "line not terminated by CRLF"},
		{"header too long", "*" + strings.Repeat("1", readBufferBytes+10), "line longer than"},
		{"inline too long", strings.Repeat("a", readBufferBytes+10), "too big inline request"},
		{"inline with too many words", "a b c d e\r\n", "inline command has 5 arguments"},
		{"truncated bulk", "*1\r\n$10\r\nabc", ""},
		{"truncated header", "*2\r\n$3\r\nGET\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.input), testLimits)
			_, err := r.ReadCommand()
			switch {
			case err == nil:
				t.Fatal("no error")
			case tt.want == "":
				if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
					t.Fatalf("error %v, want an end of input", err)
				}
			case !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %v, want a protocol error with %q", err, tt.want)
			}
		})
	}
}

func TestReadCommandArgumentsOutliveTheNextRead(t *testing.T) {
	r := NewReader(strings.NewReader(encode("SET", "k", "first")+encode("SET", "k", "other")), testLimits)
	first, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	value := first[2]
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if string(value) != "first" {
		t.Fatalf("a kept argument changed to %q after the next read", value)
	}
}

// slowReader hands out one byte per Read, as a slow network would.
type slowReader struct{ r io.Reader }

func (s slowReader) Read(p []byte) (int, error) { return s.r.Read(p[:1]) }

func TestReadCommandLargeBulkArrivingSlowly(t *testing.T) {
	value := strings.Repeat("v", bulkPreallocBytes*2)
	limits := ReadLimits{BulkBytesMax: len(value), CommandBytesMax: 2 * len(value), ArgsMax: 3}
	r := NewReader(slowReader{strings.NewReader(encode("SET", "k", value))}, limits)
	args, err := r.ReadCommand()
	if err != nil {
		t.Fatal(err)
	}
	if string(args[2]) != value {
		t.Fatalf("value of %d bytes read as %d bytes", len(value), len(args[2]))
	}
}
