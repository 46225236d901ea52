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
		{"inline quoted", "SET \"a b\" 'c d'\r\n", [][]string{{"SET", "a b", "c d"}}},
		{"inline escapes", `ECHO "\x41\n\t\"\\\q" 'it\'s' ""` + "\r\n", [][]string{{"ECHO", "A\n\t\"\\q", "it's", ""}}},
		{"inline quote inside a word", "ECHO a\"b c\"\r\n", [][]string{{"ECHO", "ab c"}}},
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
		{"array length with a plus sign", "*+1\r\n", "invalid multibulk length"},
		{"array length with a leading zero", "*01\r\n", "invalid multibulk length"},
		{"array length over 2^31-1", "*2147483648\r\n", "invalid multibulk length"},
		{"missing dollar", "*1\r\n:3\r\n", "expected '$', got ':'"},
		{"bad bulk length", "*1\r\n$abc\r\n", "invalid bulk length"},
		{"bulk length with a plus sign", "*1\r\n$+3\r\nabc\r\n", "invalid bulk length"},
		{"bulk length with a leading zero", "*1\r\n$03\r\nabc\r\n", "invalid bulk length"},
		{"bulk length minus zero", "*1\r\n$-0\r\n\r\n", "invalid bulk length"},
		{"bulk length with a space", "*1\r\n$ 3\r\nabc\r\n", "invalid bulk length"},
		{"negative bulk length", "*1\r\n$-1\r\n", "invalid bulk length"},
		{"bulk over Redis's proto-max-bulk-len", "*1\r\n$536870913\r\n", "invalid bulk length"},
		{"huge declared length", "*1\r\n$99999999999999999999\r\n", "invalid bulk length"},
		{"bulk without CRLF", "*1\r\n$2\r\nabcd\r\n", "bulk string not terminated by CRLF"},
		{"skipped bulk without CRLF", "*1\r\n$101\r\n" + strings.Repeat("x", 103), "bulk string not terminated by CRLF"},
		{"header without CR", "*1\n", "line not terminated by CRLF"},
		{"array header too long", "*" + strings.Repeat("1", readBufferBytes+10), "too big mbulk count string"},
		{"bulk header too long", "*1\r\n$" + strings.Repeat("1", readBufferBytes+10), "too big bulk count string"},
		{"inline too long", strings.Repeat("a", readBufferBytes+10), "too big inline request"},
		{"inline with an open quote", "ECHO \"a\r\n", "unbalanced quotes in request"},
		{"inline with a closing quote inside a word", "ECHO \"a\"b\r\n", "unbalanced quotes in request"},
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

// TestReadCommandSkipsCommandsOverTheLimits: a command over a limit is read to its end
// and refused with Redis's words where Redis has them, and the command after it is read
// as usual: the connection stays in step.
func TestReadCommandSkipsCommandsOverTheLimits(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"bulk over the limit", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$101\r\n" + strings.Repeat("v", 101) + "\r\n",
			"string exceeds maximum allowed size (proto-max-bulk-len)"},
		{"first bulk over the limit", "*2\r\n$101\r\n" + strings.Repeat("v", 101) + "\r\n$1\r\nk\r\n",
			"string exceeds maximum allowed size (proto-max-bulk-len)"},
		{"command over the limit", "*3\r\n$3\r\nSET\r\n$100\r\n" + strings.Repeat("k", 100) + "\r\n$60\r\n" + strings.Repeat("v", 60) + "\r\n",
			"command exceeds maximum allowed size (client-query-buffer-limit)"},
		{"too many arguments", "*5\r\n" + strings.Repeat("$1\r\na\r\n", 5), "command has too many arguments"},
		{"inline with too many words", "a b c d e\r\n", "command has too many arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.input+encode("PING")), testLimits)
			args, err := r.ReadCommand()
			if !errors.Is(err, ErrTooLarge) || err.Error() != tt.want || len(args) != 0 {
				t.Fatalf("ReadCommand = %q, %v; want no arguments and %q", args, err, tt.want)
			}
			if args, err := r.ReadCommand(); err != nil || len(args) != 1 || string(args[0]) != "PING" {
				t.Fatalf("the next command read as %q, %v", args, err)
			}
		})
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{"-12", -12, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999999", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"+1", 0, false},
		{"-0", 0, false},
		{"01", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
	}
	for _, tt := range tests {
		if got, ok := parseInt([]byte(tt.in)); got != tt.want || ok != tt.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
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
