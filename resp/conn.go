package resp

import (
	"context"
	"errors"
	"github.com/kuradb/kura/lww"
	"io"
	"net"
	"time"

	"github.com/kuradb/kura/consistency"
)

// conn is one client connection and its state.
type conn struct {
	s  *Server
	nc net.Conn
	r  *Reader
	w  *Writer
	// ctx is the context of every backend call the connection makes: it ends when the
	// client hangs up (see watchHangup) or the server closes, so that work for a client
	// that is gone stops.
	ctx context.Context

	id            int64
	level         consistency.Level
	keyspace      string
	name          string
	libName       string
	libVersion    string
	authenticated bool
	quit          bool // the client sent QUIT: reply, then close
	// held is a command read while collecting a batch of reads, not run yet.
	held [][]byte

	// lowerName is scratch space for the lower-cased command name.
	lowerName []byte
}

// serveConn reads commands and writes their replies in order until the client leaves or
// breaks the protocol. Replies are flushed when no further command is buffered, so a
// pipelined batch costs one write; reads of a pipeline run concurrently (see runReads).
func (s *Server) serveConn(nc net.Conn) {
	defer s.untrack(nc)
	if tcp, ok := nc.(*net.TCPConn); ok {
		tcp.SetNoDelay(true)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	received, stopWatching := watchHangup(nc, cancel)
	defer stopWatching()
	c := &conn{
		s:             s,
		nc:            nc,
		r:             NewReader(received, s.limits),
		w:             NewWriter(nc),
		ctx:           ctx,
		id:            s.nextID.Add(1),
		level:         s.cfg.DefaultLevel,
		keyspace:      s.cfg.DefaultKeyspace,
		authenticated: s.cfg.Password == "",
	}
	for !c.quit {
		args, err := c.nextCommand()
		if err == nil && len(args) > 0 {
			if c.r.Buffered() > 0 && c.isRead(args) {
				err = c.runReads(args)
			} else {
				c.execute(args)
			}
		}
		if err != nil {
			c.closeAfter(err)
			return
		}
		if (c.r.Buffered() == 0 && c.held == nil) || c.quit {
			if err := c.w.Flush(); err != nil {
				return
			}
		}
	}
}

// nextCommand returns the held command, if any, or reads the next one.
func (c *conn) nextCommand() ([][]byte, error) {
	if args := c.held; args != nil {
		c.held = nil
		return args, nil
	}
	return c.r.ReadCommand()
}

// closeAfter answers a protocol error before the connection closes; other read errors
// (the client left) need no answer.
func (c *conn) closeAfter(err error) {
	if errors.Is(err, ErrProtocol) {
		c.w.Error("ERR " + err.Error())
		c.s.cfg.Logger.Debug("resp: closing connection after a protocol error", "remote", c.nc.RemoteAddr(), "err", err)
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.s.cfg.Logger.Debug("resp: connection read failed", "remote", c.nc.RemoteAddr(), "err", err)
	}
	c.w.Flush()
}

// hangupReadBytes is the most watchHangup reads from the client at once.
const hangupReadBytes = 16 << 10

// watchHangup reads the client's bytes on a goroutine of its own and hands them on
// through a pipe, the connection's reader reading the other end. A command does not wait
// for the client's next bytes, so it is that goroutine that sees the client hang up (end
// of file, a reset, the server closing the connection) while the command runs, and
// cancels the connection's context: a SCAN, KEYS or DBSIZE walk, or a read waiting on
// slow replicas, stops working for a client that is gone. As net/http does, a client
// that only shuts down its sending side is taken as gone too. stop closes the connection
// and waits for the goroutine to end.
func watchHangup(nc net.Conn, cancel context.CancelFunc) (received io.Reader, stop func()) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		buf := make([]byte, hangupReadBytes)
		for {
			n, err := nc.Read(buf)
			if n > 0 {
				if _, werr := pw.Write(buf[:n]); werr != nil {
					return // the connection is done reading
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr, func() {
		nc.Close()
		pr.Close()
		<-done
	}
}

// The four operations the commands are made of, each reported to Config.Observe.

func (c *conn) get(key []byte) (lww.Record, bool, error) {
	start := time.Now()
	rec, found, err := c.s.cfg.Backend.Get(c.ctx, c.keyspace, key, c.level)
	c.observe("get", start, err)
	return rec, found, err
}

func (c *conn) put(key, value []byte) error {
	start := time.Now()
	_, err := c.s.cfg.Backend.Put(c.ctx, c.keyspace, key, value, c.level)
	c.observe("put", start, err)
	return err
}

func (c *conn) delete(key []byte) error {
	start := time.Now()
	_, err := c.s.cfg.Backend.Delete(c.ctx, c.keyspace, key, c.level)
	c.observe("delete", start, err)
	return err
}

func (c *conn) scan(start, end []byte, limit int) ([]lww.Record, error) {
	began := time.Now()
	recs, err := c.s.cfg.Backend.Scan(c.ctx, c.keyspace, start, end, limit, c.level)
	c.observe("scan", began, err)
	return recs, err
}

func (c *conn) observe(op string, start time.Time, err error) {
	if c.s.cfg.Observe != nil {
		c.s.cfg.Observe(op, c.level, time.Since(start), err)
	}
}
