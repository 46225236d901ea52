package resp

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// writeBufferBytes is the reply buffer; replies are flushed when it fills or when the
// client's pipeline is drained.
const writeBufferBytes = 16 << 10

// Writer encodes replies in RESP2 or RESP3. Write errors are sticky and reported by Flush,
// so a command handler writes its whole reply without checking each call.
type Writer struct {
	// bw is where replies go: out, or sink while replies are suppressed (CLIENT REPLY).
	bw, out, sink *bufio.Writer
	version       int // 2 or 3
	scratch       []byte
	// errorReplies counts the error replies written, for INFO's total_error_replies.
	errorReplies int64
	// flushed, when set, is told that the replies written so far were flushed whole
	// (a MONITOR connection's queue takes them then).
	flushed func()
}

// NewWriter writes RESP2 replies to w until SetVersion changes the protocol.
func NewWriter(w io.Writer) *Writer {
	out := bufio.NewWriterSize(w, writeBufferBytes)
	return &Writer{bw: out, out: out, version: 2, scratch: make([]byte, 0, 24)}
}

// Suppress drops the replies written from now on when on is true (CLIENT REPLY OFF and
// SKIP), and sends them again when it is false. Suppressed error replies are still
// counted, as Redis counts them.
func (w *Writer) Suppress(on bool) {
	if !on {
		w.bw = w.out
		return
	}
	if w.sink == nil {
		w.sink = bufio.NewWriterSize(io.Discard, 64)
	}
	w.bw = w.sink
}

// SetVersion switches between RESP2 and RESP3 (HELLO).
func (w *Writer) SetVersion(version int) { w.version = version }

// Version returns the protocol version replies are encoded in.
func (w *Writer) Version() int { return w.version }

// Buffered returns the bytes of replies written and not yet sent.
func (w *Writer) Buffered() int { return w.out.Buffered() }

// Flush sends the buffered replies.
func (w *Writer) Flush() error {
	err := w.out.Flush()
	if w.flushed != nil {
		w.flushed()
	}
	return err
}

// SimpleString writes a status reply such as +OK.
func (w *Writer) SimpleString(s string) {
	w.bw.WriteByte('+')
	w.bw.WriteString(oneLine(s))
	w.bw.WriteString("\r\n")
}

// Error writes an error reply; msg starts with the error code ("ERR syntax error").
func (w *Writer) Error(msg string) {
	w.errorReplies++
	w.bw.WriteByte('-')
	w.bw.WriteString(oneLine(msg))
	w.bw.WriteString("\r\n")
}

// Int writes an integer reply.
func (w *Writer) Int(n int64) { w.header(':', n) }

// Bulk writes a binary-safe string.
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.bw.Write(b)
	w.bw.WriteString("\r\n")
}

// BulkString writes a string as a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.bw.WriteString(s)
	w.bw.WriteString("\r\n")
}

// Text writes a human-readable text (INFO, CLIENT LIST): a RESP3 verbatim string of
// format "txt", as Redis answers, or in RESP2 a bulk string.
func (w *Writer) Text(s string) {
	if w.version != 3 {
		w.BulkString(s)
		return
	}
	w.header('=', int64(len("txt:")+len(s)))
	w.bw.WriteString("txt:")
	w.bw.WriteString(s)
	w.bw.WriteString("\r\n")
}

// Double writes a floating-point number the caller formatted: RESP3's double, or in
// RESP2 a bulk string, as Redis's addReplyDouble.
func (w *Writer) Double(text string) {
	if w.version == 3 {
		w.bw.WriteString(",")
		w.bw.WriteString(text)
		w.bw.WriteString("\r\n")
		return
	}
	w.BulkString(text)
}

// Null writes the absent value: RESP2's null bulk string, RESP3's null.
func (w *Writer) Null() {
	if w.version == 3 {
		w.bw.WriteString("_\r\n")
		return
	}
	w.bw.WriteString("$-1\r\n")
}

// isNull reports whether reply, as a Writer wrote it, is Null's.
func isNull(reply []byte) bool {
	return string(reply) == "$-1\r\n" || string(reply) == "_\r\n"
}

// NullArray writes the absent array: RESP2's null multi-bulk, RESP3's null (EXEC whose
// watched keys changed).
func (w *Writer) NullArray() {
	if w.version == 3 {
		w.bw.WriteString("_\r\n")
		return
	}
	w.bw.WriteString("*-1\r\n")
}

// raw writes replies another Writer of the same protocol wrote (EXEC's).
func (w *Writer) raw(replies []byte) { w.bw.Write(replies) }

// ArrayHeader starts an array of n elements, which the caller writes next.
func (w *Writer) ArrayHeader(n int) { w.header('*', int64(n)) }

// MapHeader starts a map of n key-value pairs: a RESP3 map, or in RESP2 an array of 2n
// elements alternating keys and values.
func (w *Writer) MapHeader(n int) {
	if w.version == 3 {
		w.header('%', int64(n))
		return
	}
	w.header('*', 2*int64(n))
}

// SetHeader starts a set of n elements: a RESP3 set, or in RESP2 an array.
func (w *Writer) SetHeader(n int) {
	if w.version == 3 {
		w.header('~', int64(n))
		return
	}
	w.header('*', int64(n))
}

// BulkStrings writes an array of strings.
func (w *Writer) BulkStrings(items []string) {
	w.ArrayHeader(len(items))
	for _, s := range items {
		w.BulkString(s)
	}
}

func (w *Writer) header(prefix byte, n int64) {
	w.scratch = append(w.scratch[:0], prefix)
	w.scratch = strconv.AppendInt(w.scratch, n, 10)
	w.scratch = append(w.scratch, '\r', '\n')
	w.bw.Write(w.scratch)
}

// oneLine keeps a status or error on one line, as the protocol requires.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
