package resp

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR: a connection that sends it is sent, from then on, a line for every command
// any connection of this node's RESP front end runs, as Redis's MONITOR does. It is
// per node: a command sent to another node of the cluster is that node's to show.
//
// A monitoring connection's output goes through a queue (monitorOut) that a goroutine
// of its own writes to the socket: the commands of other connections append their
// lines to it without waiting for the monitoring client to read them, and the
// connection's own replies join the queue whole, at each flush, so that no line lands
// inside a reply.

// monitorQueueBytesMax bounds the lines waiting for a monitoring client that reads
// slower than the node runs commands; past it the client is disconnected, as Redis
// disconnects a client past its output buffer limit, rather than hold the node's
// memory.
const monitorQueueBytesMax = 64 << 20

// monitorDrain bounds how long a closing monitoring connection waits for its client to
// read what is queued for it.
const monitorDrain = time.Second

// monitors are the node's monitoring connections.
type monitors struct {
	mu  sync.Mutex
	set map[*monitorOut]bool
	// count is len(set), read without the lock on every command.
	count atomic.Int32
}

// active reports whether any connection is monitoring.
func (ms *monitors) active() bool { return ms.count.Load() > 0 }

func (ms *monitors) add(m *monitorOut) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.set == nil {
		ms.set = map[*monitorOut]bool{}
	}
	ms.set[m] = true
	ms.count.Store(int32(len(ms.set)))
}

func (ms *monitors) remove(m *monitorOut) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	delete(ms.set, m)
	ms.count.Store(int32(len(ms.set)))
}

// removeConn forgets c's monitor, if it has one, from another connection's goroutine
// (CLIENT KILL): a killed monitor is fed no line from the moment the kill answers, not
// from the later moment its own goroutine sees the closed socket and ends it.
func (ms *monitors) removeConn(c *conn) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for m := range ms.set {
		if m.c == c {
			delete(ms.set, m)
		}
	}
	ms.count.Store(int32(len(ms.set)))
}

func (ms *monitors) all() []*monitorOut {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	all := make([]*monitorOut, 0, len(ms.set))
	for m := range ms.set {
		all = append(all, m)
	}
	return all
}

// monitorOut is a monitoring connection's output queue and the goroutine that sends it.
type monitorOut struct {
	c *conn
	// held is the connection's own replies since its last flush; only its goroutine
	// touches it.
	held []byte
	mu   sync.Mutex
	// queue is what waits to be sent, in order; full is set once it passed
	// monitorQueueBytesMax and the connection was closed.
	queue []byte
	full  bool
	wake  chan struct{}
	stop  chan struct{} // closed when the connection ends: send what is queued, then return
	done  chan struct{} // closed when the sending goroutine has returned
}

// startMonitor makes c a monitoring connection (MONITOR) and answers it OK, unless
// replies are off: the OK is queued and the connection registered in one step under
// the queue's lock, so that no line comes before the OK, and none of a command run
// after the client read the OK is missed.
func (c *conn) startMonitor() {
	c.w.Flush() // the replies of the commands before MONITOR go first
	if c.monitor == nil {
		m := &monitorOut{c: c, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		c.monitor = m
		c.io.queued = m
		c.w.flushed = m.commit
		go m.send()
	}
	m := c.monitor
	m.mu.Lock()
	if c.w.bw == c.w.out { // not suppressed by CLIENT REPLY
		m.queue = append(m.queue, "+OK\r\n"...)
	}
	c.s.monitors.add(m)
	m.mu.Unlock()
	m.wakeSender()
	c.update(func() { c.monitoring = true })
}

// stopMonitor ends c's monitoring (RESET); its output stays on the queue, behind the
// lines queued before.
func (c *conn) stopMonitor() {
	if c.monitor != nil {
		c.s.monitors.remove(c.monitor)
		c.update(func() { c.monitoring = false })
	}
}

// endMonitor is stopMonitor for a connection that is closing: it waits, at most
// monitorDrain, for the queue to be sent.
func (c *conn) endMonitor() {
	if c.monitor == nil {
		return
	}
	c.stopMonitor()
	c.nc.SetWriteDeadline(time.Now().Add(monitorDrain))
	close(c.monitor.stop)
	<-c.monitor.done
}

// hold keeps the connection's own reply bytes until the flush that ends them.
func (m *monitorOut) hold(p []byte) (int, error) {
	m.held = append(m.held, p...)
	return len(p), nil
}

// commit queues the connection's replies held since its last flush.
func (m *monitorOut) commit() {
	if len(m.held) == 0 {
		return
	}
	m.enqueue(m.held)
	m.held = m.held[:0]
}

// enqueue appends p to the queue and wakes the sender; a queue past
// monitorQueueBytesMax closes the connection instead.
func (m *monitorOut) enqueue(p []byte) {
	m.mu.Lock()
	overflow := !m.full && len(m.queue)+len(p) > monitorQueueBytesMax
	switch {
	case m.full:
	case overflow:
		m.full, m.queue = true, nil
	default:
		m.queue = append(m.queue, p...)
	}
	m.mu.Unlock()
	if overflow {
		m.c.s.cfg.Logger.Warn("resp: a MONITOR client reads too slowly; it is disconnected", "client", m.c.nc.RemoteAddr().String(), "queued_bytes", monitorQueueBytesMax)
		m.c.nc.Close()
		return
	}
	m.wakeSender()
}

func (m *monitorOut) wakeSender() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// send writes the queue to the socket until the connection ends.
func (m *monitorOut) send() {
	defer close(m.done)
	var out []byte
	for {
		stopping := false
		select {
		case <-m.wake:
		case <-m.stop:
			stopping = true
		}
		m.mu.Lock()
		out, m.queue = m.queue, out[:0]
		m.mu.Unlock()
		if len(out) > 0 {
			n, err := m.c.nc.Write(out)
			m.c.io.out.Add(int64(n))
			m.c.s.stats.netOutputBytes.Add(int64(n))
			if err != nil {
				m.c.nc.Close() // the client is gone or stuck: its reads fail too
				stopping = true
			}
		}
		if stopping {
			return
		}
	}
}

// monitorCommand is MONITOR. A connection already monitoring is not answered, as
// Redis ignores the repeated command.
func monitorCommand(c *conn, _ [][]byte) {
	if !c.monitoring {
		c.startMonitor()
	}
}

// feedMonitors sends the monitoring connections the line of a command c ran: the time,
// database 0 and the client's address, then each argument quoted, those of AUTH and
// HELLO's AUTH option redacted, as Redis writes it. Administrative commands (CONFIG,
// CLIENT KILL, MONITOR) are not shown, as in Redis.
func (s *Server) feedMonitors(c *conn, cmd *command, args [][]byte) {
	for _, f := range cmd.flags {
		if f == "admin" {
			return
		}
	}
	now := time.Now()
	line := []byte{'+'}
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	usec := strconv.Itoa(now.Nanosecond() / 1000)
	for range 6 - len(usec) {
		line = append(line, '0')
	}
	line = append(line, usec...)
	line = append(line, " [0 "...)
	line = append(line, c.nc.RemoteAddr().String()...)
	line = append(line, ']')
	redacted := redactedArgs(args)
	for i, arg := range args {
		line = append(line, ' ')
		if redacted(i) {
			line = append(line, `"(redacted)"`...)
		} else {
			line = appendRepr(line, arg)
		}
	}
	line = append(line, '\r', '\n')
	for _, m := range s.monitors.all() {
		if m.c == c {
			// A monitoring connection's own command: its line follows its reply, which
			// is still in its writer.
			c.w.bw.Write(line)
			continue
		}
		m.enqueue(line)
	}
}

// redactedArgs returns which of a command's arguments its MONITOR line hides: the
// credentials of AUTH and of HELLO's AUTH option.
func redactedArgs(args [][]byte) func(i int) bool {
	switch {
	case bytes.EqualFold(args[0], []byte("auth")):
		return func(i int) bool { return i > 0 }
	case bytes.EqualFold(args[0], []byte("hello")):
		hidden := map[int]bool{}
		for i := 2; i+2 < len(args); i++ {
			if bytes.EqualFold(args[i], []byte("auth")) {
				hidden[i+1], hidden[i+2] = true, true
				i += 2
			}
		}
		return func(i int) bool { return hidden[i] }
	}
	return func(int) bool { return false }
}

// appendRepr quotes b as Redis's sdscatrepr does: backslash escapes for \ " \n \r \t
// \a \b, \xHH for the other bytes outside printable ASCII.
func appendRepr(dst, b []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, ch := range b {
		switch ch {
		case '\\', '"':
			dst = append(dst, '\\', ch)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if ch >= ' ' && ch <= '~' {
				dst = append(dst, ch)
			} else {
				dst = append(dst, '\\', 'x', hex[ch>>4], hex[ch&0xf])
			}
		}
	}
	return append(dst, '"')
}
