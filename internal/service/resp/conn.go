package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// conn is one client connection and its state.
type conn struct {
	s  *Server
	nc net.Conn
	io *connIO
	r  *Reader
	w  *Writer
	// ctx is the context of every backend call the connection makes: it ends when the
	// server closes or the connection does, or when the client hangs up during a command
	// that walks the key space (see watchHangup), so that work for a client that is gone
	// stops.
	ctx    context.Context
	cancel context.CancelFunc

	id      int64
	fd      int // the socket's file descriptor, for CLIENT LIST; -1 when unknown
	created time.Time

	authenticated bool
	quit          bool // the client sent QUIT: reply, then close
	// repliesOff and skipNext are CLIENT REPLY's: OFF drops every reply until ON, SKIP
	// the next command's.
	repliesOff, skipNext bool
	// held is a command read while collecting a batch, not run yet; heldErr is
	// the reader's refusal of such a command (ErrTooLarge), to answer in its turn.
	held    [][]byte
	heldErr error
	// batch is runBatch's list of commands, kept for the next batch.
	batch []batched
	// consumed counts the bytes the reader has parsed, so that a command's size on the
	// wire is the difference across its read.
	consumed int64

	// lowerName is scratch space for the lower-cased command name.
	lowerName []byte
	// monitor is the output queue of a connection that ran MONITOR (monitor.go).
	monitor *monitorOut

	// pnCounters makes INCR and its kin create PN counters (KURA.COUNTERS).
	pnCounters bool

	// waiting is true while a blocking command (BLPOP and the like) has tried once and
	// waits: its lists are then read by readSource.
	waiting bool
	// blocking is true while a blocking command runs its tries: a push one of them
	// makes does not wait for another client's try (listState.wake).
	blocking bool

	// multi is the transaction MULTI opened, nil outside one; watched are the keys
	// WATCH read; txn, while EXEC runs the queue, the transaction's records, which the
	// commands read and write instead of the coordinator (multi.go).
	multi   *multiState
	watched []watchedKey
	txn     *txView

	// mu guards what CLIENT LIST shows of this connection to the others. Only the
	// connection's own goroutine changes these fields, under mu; it reads them without.
	mu         sync.Mutex
	level      consistency.Level
	keyspace   string
	name       string
	libName    string
	libVersion string
	resp       int       // protocol version, 2 or 3
	command    string    // the latest command's name, "client|list" for a subcommand
	lastRead   time.Time // when the latest command arrived
	argvBytes  int       // the running command's arguments; 0 between commands
	queryBytes int       // the running command on the wire plus what is buffered after it
	queryPeak  int       // the largest queryBytes yet
	replyBytes int       // replies buffered and not yet sent
	commands   int64     // commands run
	// monitoring, noEvict and noTouch are MONITOR's and CLIENT NO-EVICT's and
	// NO-TOUCH's, shown in CLIENT LIST's flags.
	monitoring, noEvict, noTouch bool
}

// newConn wraps an accepted connection.
func (s *Server) newConn(nc net.Conn) *conn {
	if tcp, ok := nc.(*net.TCPConn); ok {
		tcp.SetNoDelay(true)
	}
	cio := &connIO{nc: nc, s: s}
	w := NewWriter(cio)
	ctx, cancel := context.WithCancel(s.ctx)
	now := time.Now()
	return &conn{
		s:             s,
		nc:            nc,
		io:            cio,
		ctx:           ctx,
		cancel:        cancel,
		r:             NewReader(flushingReader{cio, w}, s.limits),
		w:             w,
		id:            s.nextID.Add(1),
		fd:            socketFD(nc),
		created:       now,
		authenticated: s.cfg.Password == "",
		level:         s.cfg.DefaultLevel,
		keyspace:      s.cfg.DefaultKeyspace,
		pnCounters:    s.cfg.PNCounters,
		resp:          2,
		command:       "NULL", // Redis's word for no command yet
		lastRead:      now,
	}
}

// serveConn reads commands and writes their replies in order until the client leaves or
// breaks the protocol. Replies are flushed when no further command is buffered, so a
// pipelined batch costs one write; a pipeline's GETs and plain SETs go to the
// coordinator together (see pipeline.go).
func (s *Server) serveConn(c *conn) {
	defer s.untrack(c)
	defer func() {
		c.endMonitor()
		c.nc.Close()
		c.cancel()
	}()
	// A command that panics is a bug; as net/http does for a handler, it costs the
	// connection, logged with its stack, not the node and every other client.
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logger.Error("resp: a command panicked; its connection is closed", "client", c.nc.RemoteAddr().String(), "panic", r, "stack", string(debug.Stack()))
		}
	}()
	for !c.quit {
		args, err := c.nextCommand()
		c.beginReply()
		switch {
		case errors.Is(err, ErrTooLarge):
			c.w.Error("ERR " + err.Error())
			err = nil
		case err != nil:
		case len(args) == 0:
			// Nothing to answer; as in Redis, the empty command takes a CLIENT REPLY SKIP.
		case c.r.Buffered() > 0 && c.batchable(args):
			err = c.runBatch(args)
		default:
			c.execute(args)
		}
		c.finish()
		if err != nil {
			c.closeAfter(err)
			return
		}
		if (c.r.Buffered() == 0 && c.held == nil && c.heldErr == nil) || c.quit {
			c.update(func() { c.replyBytes = 0 }) // CLIENT LIST's obl: the replies go now
			if err := c.w.Flush(); err != nil {
				return
			}
		}
	}
}

// beginReply starts the reply of the next command, or of the protocol error read in its
// place: it is dropped while CLIENT REPLY is OFF, or when it is the one SKIP named. Each
// command, a batch's too, begins its reply in the order sent.
func (c *conn) beginReply() {
	c.w.Suppress(c.repliesOff || c.skipNext)
	c.skipNext = false
}

// nextCommand returns the held command, if any, or reads the next one.
func (c *conn) nextCommand() ([][]byte, error) {
	if args, err := c.held, c.heldErr; args != nil || err != nil {
		c.held, c.heldErr = nil, nil
		return args, err
	}
	return c.readCommand()
}

// readCommand reads a command and notes its arrival for CLIENT LIST.
func (c *conn) readCommand() ([][]byte, error) {
	c.r.SetAuthenticated(c.authenticated)
	args, err := c.r.ReadCommand()
	consumed := c.io.in.Load() - int64(c.r.Buffered())
	wire := int(consumed - c.consumed)
	c.consumed = consumed
	argv := 0
	for _, a := range args {
		argv += len(a)
	}
	c.mu.Lock()
	c.lastRead = time.Now()
	c.argvBytes = argv
	c.queryBytes = wire + c.r.Buffered()
	c.queryPeak = max(c.queryPeak, c.queryBytes)
	c.mu.Unlock()
	return args, err
}

// finish notes the end of a command (or a batch of reads) for CLIENT LIST, and moves
// the error replies it wrote to INFO's count.
func (c *conn) finish() {
	c.mu.Lock()
	c.argvBytes = 0
	c.queryBytes = c.r.Buffered()
	c.replyBytes = c.w.Buffered()
	c.mu.Unlock()
	if n := c.w.errorReplies; n > 0 {
		c.s.stats.errorReplies.Add(n)
		c.w.errorReplies = 0
	}
}

// ran counts n commands run under one name, for INFO and CLIENT LIST.
func (c *conn) ran(name string, n int) {
	c.mu.Lock()
	c.command = name
	c.commands += int64(n)
	c.mu.Unlock()
	c.s.stats.commandsProcessed.Add(int64(n))
}

// update changes the state CLIENT LIST shows, under the connection's lock.
func (c *conn) update(change func()) {
	c.mu.Lock()
	change()
	c.mu.Unlock()
}

// closeAfter answers a protocol error before the connection closes; other read errors
// (the client left, or stayed idle past the timeout) need no answer.
func (c *conn) closeAfter(err error) {
	var plaintext tls.RecordHeaderError
	if errors.As(err, &plaintext) && plaintext.Conn != nil {
		c.refusePlaintext(plaintext.Conn)
		return
	}
	if errors.Is(err, ErrProtocol) {
		c.w.Error("ERR " + err.Error())
		c.s.cfg.Logger.Debug("resp: closing connection after a protocol error", "remote", c.nc.RemoteAddr(), "err", err)
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.s.cfg.Logger.Debug("resp: connection read failed", "remote", c.nc.RemoteAddr(), "err", err)
	}
	c.w.Flush()
}

// errPlaintextOnTLS is the reply to a client that sent plaintext to the TLS port.
var errPlaintextOnTLS = errors.New("ERR Protocol error: this port speaks TLS only; connect with TLS (redis-cli --tls --cacert ca.crt)")

// plaintextDrain bounds how long refusePlaintext waits for the client to hang up.
const plaintextDrain = time.Second

// refusePlaintext answers a client that sent plaintext to the TLS port, on nc, the socket
// under TLS. Redis closes such a connection unanswered, and redis-cli then says only
// "Server closed the connection"; a RESP error it prints instead says what to do, and
// since the connection closes after it, nothing else is ever sent in the clear. It then
// reads what the client sent until it hangs up (or for plaintextDrain): closing a socket
// with unread bytes resets the connection, and the reset could overtake the answer. The
// node's log says so once per client host and minute.
func (c *conn) refusePlaintext(nc net.Conn) {
	c.s.warnings.Warn(c.s.cfg.Logger, nc.RemoteAddr().String(), errPlaintextOnTLS.Error(),
		"resp: plaintext connection on a TLS port", "client", nc.RemoteAddr().String(), "err", errPlaintextOnTLS)
	if err := nc.SetDeadline(time.Now().Add(plaintextDrain)); err != nil {
		return
	}
	if _, err := io.WriteString(nc, "-"+errPlaintextOnTLS.Error()+"\r\n"); err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, nc)
}

// socketFD returns the connection's file descriptor, or -1 when it has none.
func socketFD(nc net.Conn) int {
	raw := rawConn(nc)
	if raw == nil {
		return -1
	}
	fd := -1
	raw.Control(func(s uintptr) { fd = int(s) })
	return fd
}

// flushingReader sends the replies written so far before it reads from the socket: a
// client whose next command arrives in pieces (or a client of another protocol, such as
// gRPC's preface followed by binary frames) gets the replies to the commands before it
// at once, not when the rest arrives, as from Redis, which answers what each read
// completed. A pipeline still costs one write per read of the socket.
type flushingReader struct {
	r io.Reader
	w *Writer
}

func (f flushingReader) Read(p []byte) (int, error) {
	if f.w.Buffered() > 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.r.Read(p)
}

// connIO is a connection's socket as its reader and writer use it: it counts the bytes
// each way, for CLIENT LIST and INFO, and closes the connection when a read waits longer
// than the server's idle timeout (Redis's timeout).
type connIO struct {
	nc      net.Conn
	s       *Server
	in, out atomic.Int64
	// mu orders a read's deadline against wake: a read either sees the new timeout or is
	// woken to look again.
	mu sync.Mutex
	// deadline is set while the socket may have a read deadline, so that a server
	// without an idle timeout leaves the socket alone.
	deadline bool
	// queued takes what is written once the connection ran MONITOR (monitor.go).
	queued *monitorOut
}

// Read reads from the socket. A read that waits longer than the idle timeout fails; the
// timeout is looked up again whenever wake interrupts the read, so a change applies to
// connections already waiting.
func (cio *connIO) Read(p []byte) (int, error) {
	began := time.Now()
	for {
		cio.mu.Lock()
		timeout := cio.s.IdleTimeout()
		switch {
		case timeout > 0:
			cio.nc.SetReadDeadline(began.Add(timeout))
			cio.deadline = true
		case cio.deadline:
			cio.nc.SetReadDeadline(time.Time{})
			cio.deadline = false
		}
		cio.mu.Unlock()
		n, err := cio.nc.Read(p)
		cio.in.Add(int64(n))
		cio.s.stats.netInputBytes.Add(int64(n))
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || (timeout > 0 && time.Since(began) >= timeout) {
			return n, err
		}
	}
}

// wake interrupts a waiting read so that it looks up the idle timeout again.
func (cio *connIO) wake() {
	cio.mu.Lock()
	cio.nc.SetReadDeadline(time.Now())
	cio.deadline = true
	cio.mu.Unlock()
}

// Write writes to the socket.
func (cio *connIO) Write(p []byte) (int, error) {
	if cio.queued != nil {
		return cio.queued.hold(p)
	}
	n, err := cio.nc.Write(p)
	cio.out.Add(int64(n))
	cio.s.stats.netOutputBytes.Add(int64(n))
	return n, err
}

// watchHangup runs run while a goroutine watches the socket for the client hanging up
// (end of file, a reset), which cancels the connection's context: a SCAN, KEYS or DBSIZE
// walk stops working for a client that is gone. As net/http does, a client that only
// shuts down its sending side is taken as gone too. The watch only peeks at the socket,
// so bytes the client sends meanwhile (its next command) stay for the reader, and end
// the watch: the client is there. Nothing is watched when bytes are buffered already, or
// where the socket cannot be peeked at (see peerGone). Point reads and writes are not
// watched: each is bounded by the replica timeout, and watching costs two goroutine
// wake-ups per command, which at one command per round trip is a tenth of its CPU.
func (c *conn) watchHangup(run func()) {
	raw := rawConn(c.nc)
	if c.r.Buffered() > 0 || raw == nil {
		run()
		return
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if peerGone(raw) {
			c.cancel()
		}
	}()
	run()
	// The watcher waits for the socket to be readable; a read deadline in the past
	// ends that wait, and the reader's next read sets the deadline it needs.
	c.io.wake()
	<-stopped
}

// rawConn returns the socket under nc, or nil when it has none.
func rawConn(nc net.Conn) syscall.RawConn {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// The four operations the commands are made of, each reported to Config.Observe.

func (c *conn) get(key []byte) (lww.Record, bool, error) {
	if c.txn != nil {
		return c.txn.get(key)
	}
	start := time.Now()
	rec, found, err := c.s.cfg.Backend.Get(c.ctx, c.keyspace, key, c.level)
	c.observe("get", c.level, start, err)
	return c.settle(key, rec, found, err)
}

// settle is what a key's own record, read with err, says to the commands: a collection
// emptied by removals (its header kept, no live member) is absent, as Redis deletes an
// emptied key (docs/redis-types.md, "An emptied collection reads as absent"). Every read
// of a key's own record outside a transaction goes through it; inside one, txView's.
func (c *conn) settle(key []byte, rec lww.Record, found bool, err error) (lww.Record, bool, error) {
	if _, collection := coord.MemberKind(rec.Type); err != nil || !found || !collection {
		return rec, found, err
	}
	start, level := time.Now(), c.collectionLevel()
	has, err := c.s.cfg.Backend.HasMembers(c.ctx, c.keyspace, key, rec.Type, level)
	c.observe("scan", level, start, err)
	if err != nil || !has {
		return lww.Record{}, false, err
	}
	return rec, true, nil
}

// lookup is get for a command that reads the key for the client (GET, EXISTS, STRLEN...),
// counted in INFO's keyspace_hits and keyspace_misses as Redis counts them.
func (c *conn) lookup(key []byte) (lww.Record, bool, error) {
	rec, found, err := c.get(key)
	c.countLookup(found, err)
	return rec, found, err
}

// lookupAll is lookup of each of keys, through Backend.GetAll. A key not read, the
// answer full of the values before it (coord.ErrAnswerFull), is not metered here: the
// caller settles it (a pipeline's GET reads it alone, an MGET is refused whole).
func (c *conn) lookupAll(keys [][]byte) []coord.GetResult {
	if c.txn != nil {
		results := make([]coord.GetResult, len(keys))
		for i, key := range keys {
			results[i].Record, results[i].Found, results[i].Err = c.txn.get(key)
		}
		return results
	}
	start := time.Now()
	results := c.getAll(keys)
	for _, r := range results {
		if errors.Is(r.Err, coord.ErrAnswerFull) {
			continue
		}
		c.observe("get", c.level, start, r.Err)
		c.countLookup(r.Found, r.Err)
	}
	return results
}

// getAll reads keys through Backend.GetAll at the connection's level, each settled: an
// emptied collection is absent.
func (c *conn) getAll(keys [][]byte) []coord.GetResult {
	results := c.s.cfg.Backend.GetAll(c.ctx, c.keyspace, keys, c.level)
	var collections []int // only these need a read of their members
	for i, r := range results {
		if _, ok := coord.MemberKind(r.Record.Type); ok && r.Found && r.Err == nil {
			collections = append(collections, i)
		}
	}
	_ = forEach(len(collections), func(j int) error {
		r := &results[collections[j]]
		r.Record, r.Found, r.Err = c.settle(keys[collections[j]], r.Record, r.Found, nil)
		return nil
	})
	return results
}

// countLookup counts a read's hit or miss for INFO.
func (c *conn) countLookup(found bool, err error) {
	switch {
	case err != nil:
	case found:
		c.s.stats.keyspaceHits.Add(1)
	default:
		c.s.stats.keyspaceMisses.Add(1)
	}
}

// put writes value under key, expiring at expiresAt (0: never). At a serial level the
// write is a lightweight transaction, so that it is ordered with the others.
func (c *conn) put(key, value []byte, expiresAt hlc.Timestamp) error {
	if c.level.IsSerial() || c.txn != nil {
		_, err := c.transact(key, writeIf(func(lww.Record, bool) bool { return true },
			func(lww.Record, bool) lww.Record { return lww.Record{Value: value, ExpiresAt: expiresAt} }))
		return err
	}
	start := time.Now()
	_, err := c.s.cfg.Backend.Put(c.ctx, c.keyspace, key, value, expiresAt, c.level)
	c.observe("put", c.level, start, err)
	return err
}

func (c *conn) delete(key []byte) error {
	if c.txn != nil {
		_, err := c.transact(key, writeIf(func(lww.Record, bool) bool { return true },
			func(lww.Record, bool) lww.Record { return lww.Record{Tombstone: true} }))
		return err
	}
	start := time.Now()
	_, err := c.s.cfg.Backend.Delete(c.ctx, c.keyspace, key, c.level)
	c.observe("delete", c.level, start, err)
	return err
}

func (c *conn) scan(start, end []byte, limit int) ([]lww.Record, error) {
	began := time.Now()
	recs, err := c.s.cfg.Backend.Scan(c.ctx, c.keyspace, start, end, limit, c.level)
	c.observe("scan", c.level, began, err)
	return recs, err
}

func (c *conn) observe(op string, cl consistency.Level, start time.Time, err error) {
	if c.s.cfg.Observe != nil {
		c.s.cfg.Observe(op, cl, time.Since(start), err)
	}
}
