package ringchange

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/core/cluster"
)

// Decommission hands this node's ranges to the nodes that take them over, then leaves the
// ring. Writes keep reaching both sides until it has left. A decommission that would
// leave a keyspace short of replicas in this node's DC is refused
// (DecommissionShortOfReplicas) unless force.
func (c *Changer) Decommission(ctx context.Context, force bool) (MoveStats, error) {
	self := c.parts.Directory.Self()
	if self.Status != cluster.StatusNormal {
		return MoveStats{}, fmt.Errorf("%w: node %s is %s, not normal", ErrBadMove, self.ID, self.Status)
	}
	if err := c.checkNoMoves(); err != nil {
		return MoveStats{}, err
	}
	keyspaces, err := c.parts.Moves.Replications()
	if err != nil {
		return MoveStats{}, err
	}
	if err := DecommissionShortOfReplicas(c.parts.Directory, self.ID, keyspaces); err != nil && !force {
		return MoveStats{}, err
	} else if err != nil {
		c.log.Warn("decommissioning with --force: a DC keeps fewer copies than its keyspace asks for", "refusal", err)
	}
	start := time.Now()
	c.SetStatus(cluster.StatusLeaving, self.Tokens)
	st, err := c.streamGains(ctx, self.ID, false)
	if err != nil {
		c.SetStatus(cluster.StatusNormal, self.Tokens)
		return st, fmt.Errorf("decommission aborted, the node stays normal: %w", err)
	}
	c.SetStatus(cluster.StatusLeft, self.Tokens)
	// Stay up a ring delay so every node learns "left" before this one stops: gossip
	// carries only a node's latest status, and a shutdown announced sooner would leave
	// the others holding it as leaving.
	ctxtime.Sleep(ctx, c.cfg.RingDelay)
	st.Took = time.Since(start)
	c.log.Info("decommissioned: left the ring", "gainers", st.Gainers, "bytes", st.Bytes, "took", st.Took.Round(time.Millisecond))
	return st, nil
}

// RemoveNode takes a dead node off the ring: its ranges are streamed from the surviving
// replicas to their new owners first. A dead node that was joining owned nothing yet: its
// join is aborted, with nothing to stream (the writes it was sent as a pending replica
// were counted on top of the level's, so the owners hold them), if its arbiter has not
// promised it and this node may decide (MayAbort; force also lets it decide for an
// arbiter that is down). A dead node that was
// leaving is removed as a normal one is, its ranges streamed from the other replicas.
// A removal that would leave a keyspace short of replicas in the node's DC is refused
// (ShortOfReplicas) unless force.
func (c *Changer) RemoveNode(ctx context.Context, id string, force bool) (MoveStats, error) {
	dir := c.parts.Directory
	how, err := Removal(dir, c.cfg.ID, id)
	if err != nil {
		return MoveStats{}, err
	}
	if how == Stream {
		if err := NoKeyspaceMoves(c.parts.Moves.MovingKeyspaces()); err != nil {
			return MoveStats{}, err
		}
		keyspaces, err := c.parts.Moves.Replications()
		if err != nil {
			return MoveStats{}, err
		}
		if err := ShortOfReplicas(dir, id, keyspaces); err != nil && !force {
			return MoveStats{}, err
		} else if err != nil {
			c.log.Warn("removing a node with --force: a DC keeps fewer copies than its keyspace asks for", "node", id, "refusal", err)
		}
	}
	dead, _ := dir.Node(id)
	if how == Abort && dead.Status == cluster.StatusJoining {
		// Its arbiter may have promised it (MayAbort).
		return MoveStats{}, c.abortByOperator(dead, force)
	}
	if how == Abort {
		// Booting: it claimed no tokens in this life, so no promise stands.
		c.abortJoin(dead, "kura node remove")
		return MoveStats{}, nil
	}
	start := time.Now()
	ctx, stop := c.whileDown(ctx, id)
	defer stop()
	c.parts.Gossip.MarkRemoving(dead, true)
	st, err := c.streamGains(ctx, id, true)
	c.parts.Gossip.MarkRemoving(dead, false)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if err != nil {
		return st, fmt.Errorf("removal of %s aborted, it stays on the ring: %w", id, err)
	}
	c.parts.Gossip.MarkRemoved(dead)
	st.Took = time.Since(start)
	return st, nil
}

// whileDown returns a context that ends, with the reason as its cause, if node id comes
// back up: a removal streams from the other replicas only while the node is dead, and
// one that came back is a member again (its newer generation outranks the removal).
func (c *Changer) whileDown(ctx context.Context, id string) (context.Context, context.CancelFunc) {
	return c.until(ctx, id, true, fmt.Errorf("%w: node %s is up again; decommission it instead", ErrBadMove, id))
}

// whileUp returns a context that ends, with errGainerDown as its cause, once gossip holds
// node id down: a call to a node that died, or that a partition cut off, would else wait
// for ever for an answer that was lost with the request.
func (c *Changer) whileUp(ctx context.Context, id string) (context.Context, context.CancelFunc) {
	return c.until(ctx, id, false, fmt.Errorf("%w: node %s", errGainerDown, id))
}

// until returns a context that ends with cause once gossip's verdict on whether node id
// is reachable is reachable, checked each gossip round.
func (c *Changer) until(ctx context.Context, id string, reachable bool, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		for ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			if c.parts.Directory.State(id).Reachable() == reachable {
				cancel(cause)
				return
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// errGainerDown ends one request to stream: gossip holds the gainer down. The request is
// made again once it is back.
var errGainerDown = errors.New("the gainer is down")

// streamGains waits for the cluster to learn that moving is leaving, then asks every node
// that gains one of its ranges to pull them, and waits for all.
func (c *Changer) streamGains(ctx context.Context, moving string, exclude bool) (MoveStats, error) {
	wait := c.newProgress("waiting to stream until an overlapping ring change gives way", 0)
	// Another move announced at the same time goes first (the operator's move gives
	// way), or gives way to this one: then every node must learn that it did (another
	// ring delay) before the gainers are computed and stream.
	for waited := true; waited; {
		if !ctxtime.Sleep(ctx, c.cfg.RingDelay) {
			return MoveStats{}, ctx.Err()
		}
		for waited = false; ; waited = true {
			others, err := Contend(c.parts.Directory, moving, c.cfg.ID)
			if err != nil {
				return MoveStats{}, err
			}
			if !others {
				if err := c.giveWayToKeyspaces(); err != nil {
					// The move gives way too when it sees this change (an alter settles
					// back), so it may end at once rather than complete.
					return MoveStats{}, fmt.Errorf("%w; run it again once the keyspace no longer moves (kura keyspace describe; a move started in the same ring delay settles back by itself)", err)
				}
				break
			}
			wait.still(c.checkNoMoves(moving).Error())
			if !ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
				return MoveStats{}, ctx.Err()
			}
		}
	}
	ids, err := c.parts.Moves.Gainers()
	if err != nil {
		return MoveStats{}, err
	}
	gainers := map[string]bool{}
	for _, id := range ids {
		gainers[id] = true
	}
	var st MoveStats
	for id := range gainers {
		st.Gainers = append(st.Gainers, id)
	}
	sort.Strings(st.Gainers)
	req, err := proto.Marshal(&kurav1.StreamGainsRequest{Moving: moving, Exclude: exclude})
	if err != nil {
		return st, err
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, id := range st.Gainers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.askToStream(ctx, id, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				return
			}
			st.Ranges += got.Ranges
			st.Records += got.Records
			st.Bytes += got.Bytes
			st.CrossDCBytes += got.CrossDCBytes
		}()
	}
	wg.Wait()
	return st, errors.Join(errs...)
}

// askToStream has node id pull its gains, retrying while it has not learned the move
// yet, or is down: a request is made only while gossip holds the gainer up, and given up
// once it does not (whileUp), so that a gainer that died or was cut off holds the move
// only until it is back.
func (c *Changer) askToStream(ctx context.Context, id string, req []byte) (Stats, error) {
	for {
		var raw []byte
		var err error
		if id == c.cfg.ID {
			raw, err = c.HandleStreamGains(ctx, req)
		} else if node, ok := c.parts.Directory.Node(id); !ok {
			return Stats{}, fmt.Errorf("node %s is not in the directory", id)
		} else {
			raw, err = c.callGainer(ctx, node, req)
		}
		if err == nil {
			var resp kurav1.StreamGainsResponse
			if err := proto.Unmarshal(raw, &resp); err != nil {
				return Stats{}, err
			}
			return Stats{Ranges: int(resp.GetRanges()), Records: resp.GetRecords(), Bytes: resp.GetBytes(), CrossDCBytes: resp.GetCrossDcBytes()}, nil
		}
		if errors.Is(err, errNoAnswerYet) {
			c.log.Info("a gainer has not answered yet: asking it again", "gainer", id, "after", c.streamAskTimeout())
		} else {
			c.log.Warn("a gainer could not stream yet; retrying", "gainer", id, "err", err)
		}
		if !ctxtime.Sleep(ctx, c.cfg.RingDelay) {
			return Stats{}, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		}
	}
}

// callGainer makes one request to node to pull its gains, for at most
// streamAskTimeout: a request lost on the way is then asked again.
func (c *Changer) callGainer(ctx context.Context, node cluster.Node, req []byte) ([]byte, error) {
	if !c.parts.Directory.State(node.ID).Reachable() {
		return nil, fmt.Errorf("%w: node %s", errGainerDown, node.ID)
	}
	attempt, stop := c.whileUp(ctx, node.ID)
	defer stop()
	attempt, cancel := context.WithTimeoutCause(attempt, c.streamAskTimeout(), errNoAnswerYet)
	defer cancel()
	raw, err := c.parts.Peers.StreamGains(attempt, node, req)
	if cause := context.Cause(attempt); err != nil && ctx.Err() == nil && (errors.Is(cause, errGainerDown) || errors.Is(cause, errNoAnswerYet)) {
		err = cause
	}
	return raw, err
}

// streamAskTimeout is how long one request to stream waits for its answer.
func (c *Changer) streamAskTimeout() time.Duration { return streamAskRingDelays * c.cfg.RingDelay }

// errNoAnswerYet ends one request to stream that was not answered in streamAskTimeout:
// it is asked again, and the gainer answers with the pull it has going, if any.
var errNoAnswerYet = errors.New("no answer yet")

// HandleStreamGains answers another node's request to stream (Peers.StreamGains): it
// pulls the ranges this node gains from a moving node, once its own view shows the move
// (else the gains it computes would miss them).
func (c *Changer) HandleStreamGains(ctx context.Context, payload []byte) ([]byte, error) {
	var req kurav1.StreamGainsRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode stream_gains: %w", err)
	}
	if m, ok := c.parts.Directory.Node(req.GetMoving()); !ok || m.Status != cluster.StatusLeaving {
		return nil, fmt.Errorf("node %s does not see %s leaving yet", c.cfg.ID, req.GetMoving())
	}
	exclude := ""
	if req.GetExclude() {
		exclude = req.GetMoving()
	}
	st, err := c.gainFor(ctx, req.GetMoving(), exclude)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(&kurav1.StreamGainsResponse{Ranges: int64(st.Ranges), Records: st.Records, Bytes: st.Bytes, CrossDcBytes: st.CrossDCBytes})
}

// gainJob is one pull of this node's gains for a move, shared by every request that asks
// for it: the mover asks again when an answer is slow to come (a request may be lost), and
// a second pull of the same ranges would stream them twice.
type gainJob struct {
	done    chan struct{}
	st      Stats
	err     error
	waiters int
	cancel  context.CancelFunc
	// idle cancels the pull once no request has waited for it for streamAskTimeout: the
	// mover gave up, or this node is closing.
	idle *time.Timer
}

// gainFor answers a request to pull this node's gains from moving (never from exclude): it
// joins the pull of that move in progress, or starts one, and waits for it or for ctx.
// The pull outlives the request that started it, so that a request ended by the mover's
// timeout leaves it going for the next.
func (c *Changer) gainFor(ctx context.Context, moving, exclude string) (Stats, error) {
	key := moving + "\x00" + exclude
	c.gainsMu.Lock()
	job := c.gains[key]
	if job == nil {
		jobCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		job = &gainJob{done: make(chan struct{}), cancel: cancel}
		c.gains[key] = job
		go func() {
			st, err := c.parts.Streamer.Gain(jobCtx, exclude)
			c.gainsMu.Lock()
			job.st, job.err = st, err
			delete(c.gains, key)
			if job.idle != nil {
				job.idle.Stop()
			}
			c.gainsMu.Unlock()
			cancel()
			close(job.done)
		}()
	}
	job.waiters++
	if job.idle != nil {
		job.idle.Stop()
		job.idle = nil
	}
	c.gainsMu.Unlock()
	defer func() {
		c.gainsMu.Lock()
		defer c.gainsMu.Unlock()
		if job.waiters--; job.waiters == 0 && c.gains[key] == job {
			job.idle = time.AfterFunc(c.streamAskTimeout(), job.cancel)
		}
	}()
	select {
	case <-job.done:
		return job.st, job.err
	case <-ctx.Done():
		return Stats{}, ctx.Err()
	}
}
