package resp

// Pipelined reads run concurrently. A client that pipelines GETs waits for all their
// replies anyway, and each read may cross the network to replicas, so the connection
// issues them together instead of one round trip after the other; the replies keep the
// commands' order. Writes, and every other command, run one at a time in order, so that a
// pipeline's writes take effect in the order sent and a read after a write sees it.
// Concurrent reads are like reads sent on separate connections: of two keys written in
// order by another client, a pipeline may see the second key's new value and the first
// key's old one.

import (
	"errors"

	"github.com/kuradb/kura/lww"
)

// readBatchMax bounds the reads of one concurrent batch.
const readBatchMax = 64

// isRead reports whether args is a GET that may join a concurrent batch.
func (c *conn) isRead(args [][]byte) bool {
	if !c.authenticated || len(args) != 2 || len(args[0]) != 3 {
		return false
	}
	c.lowerName = appendLower(c.lowerName[:0], args[0])
	return string(c.lowerName) == "get"
}

// read is one GET of a batch and its outcome.
type read struct {
	key   []byte
	rec   lww.Record
	found bool
	err   error
}

// runReads runs first and the GETs buffered after it concurrently and answers them in
// order. It stops at the first other command, which it holds for the caller to run next
// (or answer, if the reader refused it as too large); a read error ends the batch after
// the reads before it are answered.
func (c *conn) runReads(first [][]byte) error {
	batch := []read{{key: first[1]}}
	var readErr error
	for len(batch) < readBatchMax && c.r.Buffered() > 0 {
		args, err := c.readCommand()
		if errors.Is(err, ErrTooLarge) {
			c.heldErr = err
			break
		}
		if err != nil {
			readErr = err
			break
		}
		if len(args) == 0 {
			continue
		}
		if !c.isRead(args) {
			c.held = args
			break
		}
		batch = append(batch, read{key: args[1]})
	}
	forEach(len(batch), func(i int) error {
		r := &batch[i]
		r.rec, r.found, r.err = c.lookup(r.key)
		return nil
	})
	c.ran("get", len(batch))
	for _, r := range batch {
		c.replyGet(r.rec, r.found, r.err)
	}
	return readErr
}
