package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// ErrProtocol marks input that is not a well-formed command: the connection cannot be
// resynchronised after it, so the server answers with an error and closes it.
var ErrProtocol = errors.New("Protocol error")

// ErrTooLarge marks a well-formed command over a limit of ReadLimits. The reader read
// and discarded its bytes without keeping them, so the connection is still in step with
// the client: the server answers the command with an error (the error's text) and
// serves the next one.
var ErrTooLarge = errors.New("command over a size limit")

// tooLarge is an ErrTooLarge whose text is the reply, Redis's wording where Redis has one.
type tooLarge string

func (e tooLarge) Error() string        { return string(e) }
func (e tooLarge) Is(target error) bool { return target == ErrTooLarge }

// The refusals of a command over a limit.
const (
	errBulkTooLarge    = tooLarge("string exceeds maximum allowed size (proto-max-bulk-len)")
	errCommandTooLarge = tooLarge("command exceeds maximum allowed size (client-query-buffer-limit)")
	errTooManyArgs     = tooLarge("command has too many arguments")
)

// ReadLimits bound what one command may make the server buffer. A command over them is
// read to its end and discarded (ErrTooLarge).
type ReadLimits struct {
	// BulkBytesMax is the largest bulk string accepted (Redis's proto-max-bulk-len).
	BulkBytesMax int
	// CommandBytesMax bounds the sum of a command's bulk strings (an MSET of many large
	// values).
	CommandBytesMax int
	// ArgsMax bounds the number of arguments of one command.
	ArgsMax int
}

// bulkLengthMax is Redis's default proto-max-bulk-len, 512 MB. A longer declared length
// is taken, as Redis takes it, for a broken stream rather than a string to skip: the
// connection is closed.
const bulkLengthMax = 512 << 20

// readBufferBytes is the reader's buffer, and so the longest inline command or header line.
const readBufferBytes = 16 << 10

// unauthenticatedArgsMax and unauthenticatedBulkBytesMax bound the commands of a client
// yet to authenticate, as Redis bounds them: a server with a password reads no large
// command from a client it does not know.
const (
	unauthenticatedArgsMax      = 10
	unauthenticatedBulkBytesMax = 16 << 10
)

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
	// unauthenticated holds the client to Redis's bounds for a client yet to
	// authenticate.
	unauthenticated bool
}

// NewReader reads commands from r within limits.
func NewReader(r io.Reader, limits ReadLimits) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBufferBytes), limits: limits}
}

// SetAuthenticated tells the reader whether its client has authenticated (or needs
// not). Until it has, a command of more than 10 arguments, or with a bulk string over 16
// KiB, is refused as a protocol error as soon as its header arrives, as Redis refuses it
// ("unauthenticated multibulk length", "unauthenticated bulk length").
func (r *Reader) SetAuthenticated(authenticated bool) { r.unauthenticated = !authenticated }

// Buffered returns how many bytes were received and not yet parsed: zero means the
// client's pipeline is drained, the moment to flush replies.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// ReadCommand returns the next command's arguments, the command name first. An empty
// command (an empty inline line, "*0") yields no arguments. The returned slice is reused
// by the next call; the byte slices it holds are not, so callers may keep them (the
// coordinator does, in writes that finish in the background). A command over the limits
// yields an error wrapping ErrTooLarge, after which the reader goes on with the next
// command; malformed input, an error wrapping ErrProtocol; a failed read, the read's error.
func (r *Reader) ReadCommand() ([][]byte, error) {
	r.args = r.args[:0]
	first, err := r.br.Peek(1)
	if err != nil {
		return nil, err
	}
	if first[0] != '*' {
		return r.readInline()
	}
	count, err := r.readLength('*', math.MaxInt32, "multibulk")
	if err != nil {
		return nil, err
	}
	if r.unauthenticated && count > unauthenticatedArgsMax {
		return nil, fmt.Errorf("%w: unauthenticated multibulk length", ErrProtocol)
	}
	// refused is the first limit the command broke; from then on its bulk strings are
	// skipped instead of kept.
	var refused error
	if count > r.limits.ArgsMax {
		refused = errTooManyArgs
	}
	total := 0
	for i := 0; i < count; i++ {
		size, err := r.readLength('$', bulkLengthMax, "bulk")
		if err != nil {
			return nil, err
		}
		if r.unauthenticated && size > unauthenticatedBulkBytesMax {
			return nil, fmt.Errorf("%w: unauthenticated bulk length", ErrProtocol)
		}
		switch total += size; {
		case refused != nil:
		case size > r.limits.BulkBytesMax:
			refused = errBulkTooLarge
		case total > r.limits.CommandBytesMax:
			refused = errCommandTooLarge
		}
		if refused != nil {
			err = r.skipBulkBody(size)
		} else {
			var arg []byte
			arg, err = r.readBulkBody(size)
			r.args = append(r.args, arg)
		}
		if err != nil {
			return nil, err
		}
	}
	if refused != nil {
		r.args = r.args[:0]
		return nil, refused
	}
	return r.args, nil
}

// readLength reads a header line "<prefix><n>\r\n" with n <= limit, n >= 0 for a bulk
// string. A negative multibulk length counts as zero, as Redis reads it.
func (r *Reader) readLength(prefix byte, limit int, what string) (int, error) {
	tooLong := "too big bulk count string" // Redis's words
	if prefix == '*' {
		tooLong = "too big mbulk count string"
	}
	line, err := r.readLine(tooLong)
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
	n, ok := parseInt(line[1:])
	switch {
	case !ok, n < 0 && prefix == '$', n > int64(limit):
		return 0, fmt.Errorf("%w: invalid %s length", ErrProtocol, what)
	case n < 0:
		return 0, nil
	}
	return int(n), nil
}

// parseInt reads a decimal integer as Redis does (string2ll): an optional minus sign,
// digits without a leading zero, no sign "+", no spaces, within int64. Commands use it
// for their integer arguments too, so that what Redis refuses kura refuses.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	negative := len(b) > 0 && b[0] == '-'
	digits := b
	if negative {
		digits = b[1:]
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, d := range digits {
		if d < '0' || d > '9' || v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(d-'0')
	}
	switch {
	case negative && v <= 1<<63:
		return int64(-v), true
	case !negative && v <= math.MaxInt64:
		return int64(v), true
	}
	return 0, false
}

// readLine returns one header line without its "\r\n"; the slice is valid until the next
// read. tooLong is the error for a line longer than the buffer.
func (r *Reader) readLine(tooLong string) ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: %s", ErrProtocol, tooLong)
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

// skipBulkBody reads size bytes and the "\r\n" after them without keeping them.
func (r *Reader) skipBulkBody(size int) error {
	if _, err := r.br.Discard(size); err != nil {
		return truncated(err)
	}
	end := make([]byte, 2)
	if _, err := io.ReadFull(r.br, end); err != nil {
		return truncated(err)
	}
	if end[0] != '\r' || end[1] != '\n' {
		return fmt.Errorf("%w: bulk string not terminated by CRLF", ErrProtocol)
	}
	return nil
}

// truncated turns an end of input inside a frame into io.ErrUnexpectedEOF.
func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readInline reads a line of words separated by spaces, quoted as Redis quotes them (see
// splitInline).
func (r *Reader) readInline() ([][]byte, error) {
	line, err := r.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: too big inline request (over %d bytes)", ErrProtocol, readBufferBytes)
	case err != nil:
		return nil, truncated(err)
	}
	words, ok := splitInline(line, r.args)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: unbalanced quotes in request", ErrProtocol)
	case len(words) > r.limits.ArgsMax:
		return nil, errTooManyArgs
	}
	r.args = words
	return r.args, nil
}

// splitInline appends the words of an inline command to dst, as Redis splits them
// (sdssplitargs): words are separated by white space; "double quotes" take the escapes
// \n \r \t \b \a \xHH and a backslash before any other character; 'single quotes' take
// only \'. A closing quote must end the word. It returns false for unbalanced quotes.
func splitInline(line []byte, dst [][]byte) ([][]byte, bool) {
	isSpace := func(b byte) bool { return b == ' ' || ('\t' <= b && b <= '\r') }
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return dst, true
		}
		var word []byte
		var quote byte // the open quote, or 0
	scan:
		for ; ; i++ {
			if i == len(line) {
				if quote != 0 {
					return dst, false
				}
				break
			}
			b := line[i]
			switch {
			case quote == '"' && b == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
				word = append(word, unhex(line[i+2])<<4|unhex(line[i+3]))
				i += 3
			case quote == '"' && b == '\\' && i+1 < len(line):
				i++
				word = append(word, unescape(line[i]))
			case quote == '\'' && b == '\\' && i+1 < len(line) && line[i+1] == '\'':
				word = append(word, '\'')
				i++
			case quote != 0 && b == quote:
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return dst, false
				}
				i++
				break scan
			case quote != 0:
				word = append(word, b)
			case isSpace(b):
				break scan
			case b == '"' || b == '\'':
				quote = b
			default:
				word = append(word, b)
			}
		}
		if word == nil {
			word = []byte{} // an empty quoted word ("" or '') is an argument
		}
		dst = append(dst, word) // built by append, so it does not share line's bytes
	}
}

// unescape returns the byte a backslash escape stands for inside double quotes.
func unescape(b byte) byte {
	switch b {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return b
}

func isHex(b byte) bool { return ('0' <= b && b <= '9') || ('a' <= b|0x20 && b|0x20 <= 'f') }

func unhex(b byte) byte {
	if b <= '9' {
		return b - '0'
	}
	return (b | 0x20) - 'a' + 10
}
