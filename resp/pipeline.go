package resp

// Pipelined reads run together. A client that pipelines GETs waits for all their
// replies anyway, and each read may cross the network to replicas, so the connection
// hands them to the coordinator together (Backend.GetAll: concurrent reads, or one read
// of local storage where this node is the keys' only replica) instead of one round trip
// after the other; the replies keep the commands' order. Concurrent reads are like reads
// sent on separate connections: of two keys written in order by another client, a
// pipeline may see the second key's new value and the first key's old one.
//
// Writes take effect in the order sent, and a read after a write sees it. Pipelined
// plain SETs are handed to the coordinator together (Backend.PutAll), which commits them
// as one batch with one sync where that keeps their order for every reader (this node
// the keys' only replica), and otherwise writes them one after the other. Every other
// command runs alone, in order.

import (
	"errors"
	"time"

	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/lww"
)

// batchMax bounds the commands of one batch; batchBytesMax stops a batch of writes
// from gathering more than about that many bytes of values.
const (
	batchMax      = 64
	batchBytesMax = 1 << 20
)

// isRead reports whether args is a GET that may join a concurrent batch.
func (c *conn) isRead(args [][]byte) bool {
	return c.authenticated && len(args) == 2 && c.named(args[0], "get")
}

// isPlainSet reports whether args is a SET without options at a non-serial level, which
// may join a batch of writes.
func (c *conn) isPlainSet(args [][]byte) bool {
	return c.authenticated && len(args) == 3 && !c.level.IsSerial() && c.named(args[0], "set")
}

// named reports whether a command's name is name (lower case), in any case.
func (c *conn) named(arg []byte, name string) bool {
	if len(arg) != len(name) {
		return false
	}
	c.lowerName = appendLower(c.lowerName[:0], arg)
	return string(c.lowerName) == name
}

// collect reads the commands buffered after a batch's first while keep accepts them and
// full does not stop the batch, batchMax commands in all. It holds the first command
// keep refuses (or a too-large command's error) for the caller to run next, and returns
// a read error, which ends the batch after the commands before it are answered.
func (c *conn) collect(keep func(args [][]byte) bool, full func() bool) error {
	for n := 1; n < batchMax && c.r.Buffered() > 0 && !full(); n++ {
		args, err := c.readCommand()
		if errors.Is(err, ErrTooLarge) {
			c.heldErr = err
			return nil
		}
		if err != nil {
			return err
		}
		if len(args) == 0 {
			n--
			continue
		}
		if !keep(args) {
			c.held = args
			return nil
		}
	}
	return nil
}

// runReads reads first's key and those of the GETs buffered after it through
// Backend.GetAll and answers them in order.
func (c *conn) runReads(first [][]byte) error {
	keys := [][]byte{first[1]}
	readErr := c.collect(func(args [][]byte) bool {
		if !c.isRead(args) {
			return false
		}
		keys = append(keys, args[1])
		return true
	}, func() bool { return false })
	results := c.lookupAll(keys)
	c.ran("get", len(keys))
	for i, r := range results {
		if errors.Is(r.Err, coord.ErrAnswerFull) {
			// Not read: the values before it filled the batch's answer. Each GET of a
			// pipeline is a command of its own, answered (and metered) as if sent alone.
			r.Record, r.Found, r.Err = c.lookup(keys[i])
		}
		c.replyGet(r.Record, r.Found, r.Err)
	}
	return readErr
}

// runWrites writes first and the plain SETs buffered after it through Backend.PutAll
// and answers them in order.
func (c *conn) runWrites(first [][]byte) error {
	batch := []lww.Record{{Key: first[1], Value: first[2]}}
	size := len(first[2])
	readErr := c.collect(func(args [][]byte) bool {
		if !c.isPlainSet(args) {
			return false
		}
		batch = append(batch, lww.Record{Key: args[1], Value: args[2]})
		size += len(args[2])
		return true
	}, func() bool { return size >= batchBytesMax })
	start := time.Now()
	errs := c.s.cfg.Backend.PutAll(c.ctx, c.keyspace, batch, c.level)
	for _, err := range errs {
		c.observe("put", c.level, start, err)
	}
	c.ran("set", len(batch))
	for _, err := range errs {
		if err != nil {
			c.w.Error(errorReply(err))
			continue
		}
		c.w.SimpleString("OK")
	}
	return readErr
}
