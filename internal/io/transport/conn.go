package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// bufferBytes sizes each connection's read and write buffers: big enough to batch many
// small frames into one system call, small enough for dozens of connections per process.
const bufferBytes = 32 << 10

// conn is one TCP connection to a peer: a reader goroutine that dispatches incoming frames,
// a writer goroutine that drains the send queue in order, and the calls waiting for
// responses. A dialed conn carries this node's requests and the peer's responses; an
// accepted one the peer's requests and this node's responses.
type conn struct {
	t        *Transport
	nc       net.Conn
	reader   io.Reader
	peer     Peer
	dialed   bool
	version  uint16        // the protocol version spoken on it: the one the dialer's hello named
	link     *wanLink      // nil: no emulation, frames go out at once
	counters *kindCounters // the (this DC, peer DC) flows

	// ctx is handed to handlers; close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	wake       chan struct{} // signals the writer that the queue is not empty
	done       chan struct{} // closed by close
	acceptance chan struct{} // closed when the acceptor's acceptance arrives (dialed, version 4 on)
	closeOnce  sync.Once
	nextID     atomic.Uint64

	mu            sync.Mutex
	queue         []outFrame
	queuedBytes   int                        // the bytes of queue, bounded by t.sendQueueBytesMax
	full          bool                       // frames are being refused; logged once per spell
	lastDeliverAt time.Time                  // keeps jitter from reordering this conn's frames
	pending       map[uint64]chan callResult // calls waiting for a response, by request id
	closeErr      error                      // set once closed; pending calls failed with it
}

// outFrame is an encoded frame waiting for the writer.
type outFrame struct {
	buf       []byte
	kind      Kind
	deliverAt time.Time // zero: write at once
}

// callResult is what a pending call receives.
type callResult struct {
	payload []byte
	wall    time.Time // the responder's wall clock as it answered; zero without an answer
	err     error
}

// newConn wraps nc; reader is nil unless the caller already read from nc through a buffer.
// The caller starts the conn once it is registered.
func newConn(t *Transport, nc net.Conn, reader io.Reader, peer Peer, link *wanLink, dialed bool, version uint16) *conn {
	if reader == nil {
		reader = newFrameReader(nc)
	}
	ctx, cancel := context.WithCancel(t.ctx)
	return &conn{
		t:          t,
		nc:         nc,
		reader:     reader,
		peer:       peer,
		dialed:     dialed,
		version:    version,
		link:       link,
		counters:   t.stats.counters(t.self.DC, peer.DC),
		ctx:        ctx,
		cancel:     cancel,
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		acceptance: make(chan struct{}),
		pending:    make(map[uint64]chan callResult),
	}
}

func newFrameReader(nc net.Conn) io.Reader {
	return bufio.NewReaderSize(nc, bufferBytes)
}

// start runs the reader and the writer. The caller holds t.mu and has checked that the
// transport is open, so that Close waits for both.
func (c *conn) start() {
	c.t.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

// call sends a request and waits for its response, the loss of the connection, or ctx.
// remoteWall is the responder's wall clock as it answered, zero when it did not.
func (c *conn) call(ctx context.Context, kind Kind, payload []byte) (response []byte, remoteWall time.Time, err error) {
	id := c.nextID.Add(1)
	frame := encodeFrame(frameRequest, kind, id, payload)
	result := make(chan callResult, 1)
	c.mu.Lock()
	if c.closeErr != nil {
		err := c.closeErr
		c.mu.Unlock()
		return nil, time.Time{}, fmt.Errorf("transport: call %s: %w", c.peer.ID, err)
	}
	if err := c.pushLocked(frameRequest, kind, frame); err != nil {
		c.mu.Unlock()
		return nil, time.Time{}, fmt.Errorf("transport: call %s: %w: %w", c.peer.ID, ErrUnreachable, err)
	}
	c.pending[id] = result
	c.mu.Unlock()

	select {
	case r := <-result:
		return r.payload, r.wall, r.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, time.Time{}, fmt.Errorf("transport: call %s: %w", c.peer.ID, ctx.Err())
	}
}

// enqueue queues a frame that expects no response; a response or error is stamped with
// this node's wall clock.
func (c *conn) enqueue(typ frameType, kind Kind, id uint64, payload []byte) error {
	var frame []byte
	if typ.stamped() {
		frame = encodeStampedFrame(typ, kind, id, c.t.wall(), payload)
	} else {
		frame = encodeFrame(typ, kind, id, payload)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeErr != nil {
		return fmt.Errorf("transport: send to %s: %w", c.peer.ID, c.closeErr)
	}
	if err := c.pushLocked(typ, kind, frame); err != nil {
		return fmt.Errorf("transport: send to %s: %w", c.peer.ID, err)
	}
	return nil
}

// pushLocked applies the injected faults and the WAN emulation to a frame and queues it
// for the writer. It refuses the frame with ErrSendQueueFull when the queue already holds
// t.sendQueueBytesMax, so that a peer which stops reading costs bounded memory; a frame
// into an empty queue always passes.
func (c *conn) pushLocked(typ frameType, kind Kind, frame []byte) error {
	if c.queuedBytes > 0 && c.queuedBytes+len(frame) > c.t.sendQueueBytesMax {
		c.t.stats.sendQueueRefused.Add(1)
		if !c.full {
			c.full = true
			c.t.log.Warn("transport: peer does not drain its connection; refusing frames to it until it does",
				"peer", c.peer.ID, "queued_bytes", c.queuedBytes, "queue_bytes_max", c.t.sendQueueBytesMax)
		}
		return ErrSendQueueFull
	}
	lossy := typ == frameRequest || typ == frameOneway
	var deliverAt time.Time
	if c.t.faults != nil && typ != frameHello {
		drop, delay := c.t.faults.Outgoing(c.peer, lossy)
		if drop {
			return nil
		}
		if delay > 0 {
			deliverAt = time.Now().Add(delay)
		}
	}
	if c.link != nil {
		now := time.Now()
		if deliverAt.After(now) {
			now = deliverAt
		}
		at, drop := c.link.schedule(now, len(frame), lossy)
		if drop {
			return nil
		}
		deliverAt = at
	}
	if !deliverAt.IsZero() {
		// Jitter and injected delay must not reorder the frames of one connection: TCP
		// would not.
		if deliverAt.Before(c.lastDeliverAt) {
			deliverAt = c.lastDeliverAt
		}
		c.lastDeliverAt = deliverAt
	}
	c.queue = append(c.queue, outFrame{buf: frame, kind: kind, deliverAt: deliverAt})
	c.queuedBytes += len(frame)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// readLoop dispatches incoming frames until the connection ends. Handlers run on the
// transport's workers, each apart from the others, so that a slow handler never stalls
// the responses behind it.
func (c *conn) readLoop() {
	defer c.t.wg.Done()
	for {
		h, payload, err := readFrame(c.reader, c.t.maxFrameBytes)
		if err != nil {
			c.fail(err)
			return
		}
		// Faults spare the hello's answers, as they spare the hello.
		if c.t.faults != nil && h.typ != frameRefuse && h.typ != frameHello && c.t.faults.Incoming(c.peer) {
			continue
		}
		switch h.typ {
		case frameRequest, frameOneway:
			c.t.workers.Run(func() { c.serve(h, payload) })
		case frameResponse, frameError:
			if err := c.deliver(h, payload); err != nil {
				c.fail(err)
				return
			}
		case frameRefuse:
			err := c.refused(payload)
			var versionErr *VersionError
			if errors.As(err, &versionErr) {
				c.t.refusedBy.Store(c.peer.ID, struct{}{})
			}
			if versionErr != nil && versionErr.PeerVersion >= c.t.oldest && versionErr.PeerVersion < c.version {
				// No incident: the dial tries again in the peer's version (Transport.dial).
				c.close(fmt.Errorf("%w: %w", ErrUnreachable, err))
			} else {
				c.fail(err)
			}
			return
		default:
			if err := c.accepted(payload); err != nil {
				c.fail(err)
				return
			}
		}
	}
}

// refused returns why the peer sent a refusal: the *VersionError it announces to a dialer,
// or errMalformed, as only an acceptor refuses.
func (c *conn) refused(payload []byte) error {
	if !c.dialed {
		return fmt.Errorf("%w: refusal from a dialer", errMalformed)
	}
	version, err := decodeRefusal(payload)
	if err != nil {
		return err
	}
	return &VersionError{Peer: c.peer.ID, PeerVersion: version, Version: c.t.version}
}

// accepted takes the acceptance of a dialed connection: the first frame from the
// acceptor, naming the version of the dialer's hello. Any other hello breaks the protocol.
func (c *conn) accepted(payload []byte) error {
	select {
	case <-c.acceptance:
		return fmt.Errorf("%w: hello in the middle of a connection", errMalformed)
	default:
	}
	if !c.dialed || c.version < acceptanceFrom {
		return fmt.Errorf("%w: hello in the middle of a connection", errMalformed)
	}
	version, err := decodeAcceptance(payload)
	if err != nil {
		return err
	}
	if version != c.version {
		return fmt.Errorf("%w: acceptance of protocol %d answers a hello of %d", errMalformed, version, c.version)
	}
	c.t.refusedBy.Delete(c.peer.ID)
	close(c.acceptance)
	return nil
}

// serve runs the handler for one request or one-way message and queues the response.
func (c *conn) serve(h frameHeader, payload []byte) {
	response, err := c.t.handler.Handle(c.ctx, c.peer, h.kind, payload)
	if h.typ == frameOneway {
		if err != nil {
			c.t.log.Debug("transport: one-way handler failed", "from", c.peer.ID, "kind", h.kind, "err", err)
		}
		return
	}
	typ := frameResponse
	if err == nil && frameHeaderBytes+stampBytes+len(response) > c.t.maxFrameBytes {
		err = fmt.Errorf("%w: response of %d bytes, limit %d per frame", ErrFrameTooLarge, len(response), c.t.maxFrameBytes)
	}
	if err != nil {
		typ = frameError
		code := NoErrorCode
		if c.t.errorCode != nil {
			code = c.t.errorCode(err)
		}
		msg := err.Error()
		// What a frame holds besides the message: the header, the stamp, and the code.
		const codeBytes = 2
		msg = msg[:max(0, min(len(msg), c.t.maxFrameBytes-frameHeaderBytes-stampBytes-codeBytes))]
		response = encodeErrorPayload(c.version, code, msg)
	}
	// An error here means the connection is gone, and with it the caller.
	_ = c.enqueue(typ, h.kind, h.id, response)
}

// deliver hands a response to its waiting call; a call that gave up has no entry. A
// response without its stamp breaks the protocol.
func (c *conn) deliver(h frameHeader, payload []byte) error {
	wall, payload, err := unstamp(payload)
	if err != nil {
		return err
	}
	var remote *RemoteError
	if h.typ == frameError {
		if remote, err = decodeErrorPayload(c.version, payload); err != nil {
			return err
		}
	}
	c.mu.Lock()
	result, ok := c.pending[h.id]
	delete(c.pending, h.id)
	c.mu.Unlock()
	switch {
	case !ok:
	case remote != nil:
		result <- callResult{wall: wall, err: remote}
	default:
		result <- callResult{wall: wall, payload: payload}
	}
	return nil
}

// writeLoop writes queued frames in order, each no earlier than its delivery time, and
// counts them. It flushes whenever no further frame is due, so frames are batched under
// load but never held back.
func (c *conn) writeLoop() {
	defer c.t.wg.Done()
	writer := bufio.NewWriterSize(c.nc, bufferBytes)
	var timer *time.Timer // made on the first frame that must wait
	for {
		frame, ok := c.next()
		if !ok {
			return
		}
		if !frame.deliverAt.IsZero() {
			if wait := time.Until(frame.deliverAt); wait > 0 {
				if err := writer.Flush(); err != nil {
					c.fail(err)
					return
				}
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-timer.C:
				case <-c.done:
					return
				}
			}
		}
		c.counters.add(frame.kind, len(frame.buf))
		if _, err := writer.Write(frame.buf); err != nil {
			c.fail(err)
			return
		}
		if !c.hasDueFrame() {
			// Before a system call for what is buffered, let the goroutines that are
			// about to queue a frame (handlers finishing, callers sending) run: under
			// load their frames then share this write, at the cost of one turn of the
			// scheduler when there are none.
			runtime.Gosched()
			if c.hasDueFrame() {
				continue
			}
			if err := writer.Flush(); err != nil {
				c.fail(err)
				return
			}
		}
	}
}

// next takes the first queued frame, waiting for one; ok is false once the conn is closed.
func (c *conn) next() (frame outFrame, ok bool) {
	for {
		c.mu.Lock()
		if c.closeErr != nil {
			c.mu.Unlock()
			return outFrame{}, false
		}
		if len(c.queue) > 0 {
			frame = c.queue[0]
			c.queue[0] = outFrame{} // let the buffer be collected once written
			c.queue = c.queue[1:]
			c.queuedBytes -= len(frame.buf)
			if c.full && c.queuedBytes <= c.t.sendQueueBytesMax/2 {
				c.full = false
				c.t.log.Info("transport: peer drains its connection again", "peer", c.peer.ID)
			}
			c.mu.Unlock()
			return frame, true
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-c.done:
			return outFrame{}, false
		}
	}
}

// hasDueFrame reports whether the next queued frame may be written now.
func (c *conn) hasDueFrame() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return false
	}
	deliverAt := c.queue[0].deliverAt
	return deliverAt.IsZero() || !time.Now().Before(deliverAt)
}

// fail closes the connection after an I/O or protocol error; pending calls then fail
// with ErrUnreachable.
func (c *conn) fail(err error) {
	if c.isClosed() {
		return // the error is the consequence of closing, not news
	}
	c.t.logConnError(c.peer.ID, err)
	c.close(fmt.Errorf("%w: %w", ErrUnreachable, err))
}

// close ends the connection once: it leaves the transport's tables first, so a caller that
// sees it closed can dial afresh, then fails the pending calls with err at once.
func (c *conn) close(err error) {
	c.closeOnce.Do(func() {
		c.t.forget(c)
		c.mu.Lock()
		c.closeErr = err
		pending := c.pending
		c.pending = nil
		c.queue = nil
		c.queuedBytes = 0
		c.mu.Unlock()
		close(c.done)
		c.cancel()
		c.nc.Close()
		for _, result := range pending {
			result <- callResult{err: fmt.Errorf("transport: call %s: %w", c.peer.ID, err)}
		}
	})
}

// err is why the connection closed; nil while it is open.
func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

func (c *conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
