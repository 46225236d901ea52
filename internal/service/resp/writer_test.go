package resp

import (
	"bytes"
	"testing"
)

func TestWriterEncodings(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *Writer)
		resp2 string
		resp3 string
	}{
		{"simple string", func(w *Writer) { w.SimpleString("OK") }, "+OK\r\n", "+OK\r\n"},
		{"error on one line", func(w *Writer) { w.Error("ERR bad\r\nthing") }, "-ERR bad  thing\r\n", "-ERR bad  thing\r\n"},
		{"integer", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n"},
		{"bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"empty bulk", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"bulk string", func(w *Writer) { w.BulkString("hi") }, "$2\r\nhi\r\n", "$2\r\nhi\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"array", func(w *Writer) { w.BulkStrings([]string{"a", "b"}) }, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{"map", func(w *Writer) { w.MapHeader(1); w.BulkString("k"); w.Int(1) }, "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
	}
	for _, tt := range tests {
		for version, want := range map[int]string{2: tt.resp2, 3: tt.resp3} {
			var out bytes.Buffer
			w := NewWriter(&out)
			w.SetVersion(version)
			tt.write(w)
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Errorf("%s in RESP%d: %q, want %q", tt.name, version, out.String(), want)
			}
		}
	}
}

func TestWriterStartsInRESP2(t *testing.T) {
	w := NewWriter(&bytes.Buffer{})
	if w.Version() != 2 {
		t.Fatalf("a new writer speaks RESP%d", w.Version())
	}
}

// TestWriterSuppress: replies written while suppressed are dropped, whatever their size,
// the others sent in order, and the dropped errors still counted.
func TestWriterSuppress(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.SimpleString("first")
	w.Suppress(true)
	w.Error("ERR dropped")
	w.Bulk(bytes.Repeat([]byte("x"), 3*writeBufferBytes))
	if got := w.Buffered(); got != len("+first\r\n") {
		t.Errorf("Buffered = %d while suppressed, want the reply before", got)
	}
	w.Suppress(false)
	w.Int(7)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "+first\r\n:7\r\n"; out.String() != want {
		t.Errorf("sent %q, want %q", out.String(), want)
	}
	if w.errorReplies != 1 {
		t.Errorf("errorReplies = %d, want the dropped error counted", w.errorReplies)
	}
}
