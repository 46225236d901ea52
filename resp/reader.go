package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrProtocol marks input that is not a well-formed command within the limits: the
// connection cannot be resynchronised after it, so the server answers with an error and
// closes it.
var ErrProtocol = errors.New("Protocol error")

// ReadLimits bound what one command may make the server buffer.
type ReadLimits struct {
	// BulkBytesMax is the largest bulk string accepted; a longer declared length is
	// refused before any of its bytes are read.
	BulkBytesMax int
	// CommandBytesMax bounds the sum of a command's bulk strings (an MSET of many large
	// values).
	CommandBytesMax int
	// ArgsMax bounds the number of arguments of one command.
	ArgsMax int
}

// readBufferBytes is the reader's buffer, and so the longest inline command or header line.
const readBufferBytes = 16 << 10

// bulkPreallocBytes is the largest bulk string allocated at its full declared size up
// front; a longer one grows as its bytes arrive, so that a client cannot make the server
// allocate a large buffer by declaring a length it never sends.
const bulkPreallocBytes = 64 << 10

// Reader reads client commands: RESP arrays of bulk strings, or inline commands (one line
// of words separated by spaces, as typed into telnet).
type Reader struct {
	br     *bufio.Reader
	limits ReadLimits
	args   [][]byte
}

// NewReader reads commands from r within limits.
func NewReader(r io.Reader, limits ReadLimits) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBufferBytes), limits: limits}
}

// Buffered returns how many bytes were received and not yet parsed: zero means the
// client's pipeline is drained, the moment to flush replies.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// ReadCommand returns the next command's arguments, the command name first. An empty
// command (an empty inline line, "*0") yields no arguments. The returned slice is reused
// by the next call; the byte slices it holds are not, so callers may keep them (the
// coordinator does, in writes that finish in the background). Malformed input yields an
// error wrapping ErrProtocol; a failed read, the read's error.
func (r *Reader) ReadCommand() ([][]byte, error) {
	r.args = r.args[:0]
	first, err := r.br.Peek(1)
	if err != nil {
		return nil, err
	}
	if first[0] != '*' {
		return r.readInline()
	}
	count, err := r.readLength('*', r.limits.ArgsMax, "multibulk")
	if err != nil {
		return nil, err
	}
	total := 0
	for i := 0; i < count; i++ {
		size, err := r.readLength('$', r.limits.BulkBytesMax, "bulk")
		if err != nil {
			return nil, err
		}
		if total += size; total > r.limits.CommandBytesMax {
			return nil, fmt.Errorf("%w: command larger than the limit of %d bytes", ErrProtocol, r.limits.CommandBytesMax)
		}
		arg, err := r.readBulkBody(size)
		if err != nil {
			return nil, err
		}
		r.args = append(r.args, arg)
	}
	return r.args, nil
}

// readLength reads a header line "<prefix><n>\r\n" with 0 <= n <= limit. A negative
// multibulk length counts as zero, as Redis reads it.
func (r *Reader) readLength(prefix byte, limit int, what string) (int, error) {
	line, err := r.readLine()
	if err != nil {
		return 0, err
	}
	if len(line) == 0 || line[0] != prefix {
		got := "end of line"
		if len(line) > 0 {
			got = strconv.QuoteRune(rune(line[0]))
		}
		return 0, fmt.Errorf("%w: expected '%c', got %s", ErrProtocol, prefix, got)
	}
	n, err := strconv.ParseInt(string(line[1:]), 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%w: invalid %s length %q", ErrProtocol, what, line[1:])
	case n < 0 && prefix == '*':
		return 0, nil
	case n < 0:
		return 0, fmt.Errorf("%w: invalid %s length %d", ErrProtocol, what, n)
	case n > int64(limit):
		return 0, fmt.Errorf("%w: %s length %d exceeds the limit of %d", ErrProtocol, what, n, limit)
	}
	return int(n), nil
}

// readLine returns one line without its "\r\n"; the slice is valid until the next read.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, readBufferBytes)
	case err != nil:
		return nil, err
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, fmt.Errorf("%w: line not terminated by CRLF", ErrProtocol)
	}
	return line[:len(line)-2], nil
}

// readBulkBody reads size bytes and the "\r\n" after them into a new slice.
func (r *Reader) readBulkBody(size int) ([]byte, error) {
	var body []byte
	if size+2 <= bulkPreallocBytes {
		body = make([]byte, size+2)
		if _, err := io.ReadFull(r.br, body); err != nil {
			return nil, truncated(err)
		}
	} else {
		var buf bytes.Buffer
		buf.Grow(bulkPreallocBytes)
		if _, err := io.CopyN(&buf, r.br, int64(size+2)); err != nil {
			return nil, truncated(err)
		}
		body = buf.Bytes()
	}
	if body[size] != '\r' || body[size+1] != '\n' {
		return nil, fmt.Errorf("%w: bulk string not terminated by CRLF", ErrProtocol)
	}
	return body[:size:size], nil
}

// truncated turns an end of input inside a frame into io.ErrUnexpectedEOF.
func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readInline reads a line of space-separated words. Quoting is not supported: clients
// that send binary data use RESP arrays.
func (r *Reader) readInline() ([][]byte, error) {
	line, err := r.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: too big inline request (over %d bytes)", ErrProtocol, readBufferBytes)
	case err != nil:
		return nil, truncated(err)
	}
	words := bytes.Fields(line)
	if len(words) > r.limits.ArgsMax {
		return nil, fmt.Errorf("%w: inline command has %d arguments, over the limit of %d", ErrProtocol, len(words), r.limits.ArgsMax)
	}
	for _, w := range words {
		r.args = append(r.args, bytes.Clone(w))
	}
	return r.args, nil
}
