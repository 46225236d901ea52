// Package stream moves token ranges between replicas when the ring changes: a joining
// node pulls the ranges it gains, and the nodes that take over a leaving or removed
// node's ranges pull them too. Every stream is a pull by the node that gains the range,
// page by page through the Replica seam (a scan page on its own message kind). The
// gainer pulls from the holder whose copy it takes over (the one the new ring drops, in
// its own DC with a per-DC strategy), as Cassandra's consistent range movement does: it
// then holds every write that holder held, so each write keeps as many replicas, per DC,
// as acknowledged it, and a join or decommission crosses the WAN only where the
// strategy moves a copy between DCs. When that holder cannot serve (it is dead, being
// removed or replaced, or fails mid-stream) or the node is rebuilding its own ranges, it
// pulls from a quorum of the range's holders, those in its own DC first, so that it holds
// every write a quorum acknowledged; holders rebuilding too are asked beside every
// readable one when a quorum is not readable. Pages are applied last-writer-wins, so a stream that
// is retried, pulled from several holders, or races with writes, never undoes a newer
// write.
package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/kuradb/kura/internal/base/lograte"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// PageRecords is how many records one stream page carries at most.
const PageRecords = 256

// DefaultPageTimeout is Config.PageTimeout's default: a page of DefaultPageBytes takes a
// few seconds over the slowest WAN link of the papers' topologies (3.29 Mbps).
const DefaultPageTimeout = 30 * time.Second

// Replicas hands out the Replica of any node; *remote.Set is one.
type Replicas interface {
	Replica(n cluster.Node) replica.Replica
}

// Proximity ranks nodes by network distance; the coordinator's proximity is one.
type Proximity interface {
	Distance(id string) time.Duration
}

// Moves returns what moves in a keyspace; *placement.Ring is one.
type Moves interface {
	Moves(ks schema.Keyspace) ([]placement.Move, error)
}

// Config is what a node's streams need.
type Config struct {
	View      cluster.View
	Keyspaces interface{ List() []schema.Keyspace }
	Moves     Moves
	Replicas  Replicas
	Proximity Proximity
	// Limiter throttles the bytes this node pulls (--stream-throughput); nil is unthrottled.
	Limiter *rate.Limiter
	// Retry is the pause before a range whose every source failed is tried again.
	Retry time.Duration
	// PageBytes bounds the key and value bytes of one page (ending at the record that
	// reaches it); default replica.DefaultPageBytes.
	PageBytes int
	// PageTimeout bounds the fetch of one page from its holder; default
	// DefaultPageTimeout. A holder that answers nothing in time (a link that drops every
	// packet) gives way to the next, as one that fails does, instead of holding the
	// stream, and the join or rebuild it serves, for ever.
	PageTimeout time.Duration
	Logger      *slog.Logger
}

// Progress is a running count of what this node has streamed.
type Progress struct {
	RangesTotal, RangesDone atomic.Int64
	Records, Bytes          atomic.Int64
	// CrossDCBytes counts the bytes pulled from a node of another DC.
	CrossDCBytes atomic.Int64
}

// Stats is what one Gain streamed.
type Stats struct {
	Ranges       int   `json:"ranges"`
	Records      int64 `json:"records"`
	Bytes        int64 `json:"bytes"`
	CrossDCBytes int64 `json:"cross_dc_bytes"`
}

// Streamer pulls the ranges its node gains.
type Streamer struct {
	cfg      Config
	progress Progress
	// waitingFor holds the holders a range waits for while too few others could serve
	// it (WaitingFor); nil when no range waits.
	waitingFor atomic.Pointer[[]string]
	// retries keeps a range that waits for its holders, retried every Retry, to a line
	// per minute in the log while nothing changes.
	retries *lograte.Limiter
}

// New returns a node's streamer.
func New(cfg Config) *Streamer {
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.PageTimeout <= 0 {
		cfg.PageTimeout = DefaultPageTimeout
	}
	if cfg.PageBytes <= 0 {
		cfg.PageBytes = replica.DefaultPageBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Streamer{cfg: cfg, retries: lograte.New(lograte.DefaultInterval)}
}

// Progress returns the node's running counts, for status pages and metrics.
func (s *Streamer) Progress() *Progress { return &s.progress }

// WaitingFor returns the holders, sorted by id, that a range being pulled now waits for:
// down, and needed since too few others could serve it. It is empty while no range
// waits. The ring's life cycle reads it to let a replacement of such a holder go first.
func (s *Streamer) WaitingFor() []string {
	if ids := s.waitingFor.Load(); ids != nil {
		return slices.Clone(*ids)
	}
	return nil
}

// Gain pulls every range this node gains in the moves in progress, in every keyspace,
// and returns once all have arrived, each from a quorum of its holders (pullRange). A
// source that fails mid-range is replaced by the next holder; a range too few holders
// can serve now is retried until ctx ends. exclude names
// a node never to pull from (a dead node being removed or replaced).
//
// When the ring changes under it so that a range's holders are no longer the ones its
// move named (a holder left the ring, its copy handed to another node), the moves are
// computed again from the ring as it is then, and the ranges not yet pulled are pulled
// from their holders now: a holder that has left serves no more, and waiting for it
// would keep this node from ever finishing (a rebuild during a decommission).
func (s *Streamer) Gain(ctx context.Context, exclude string) (Stats, error) {
	var total Stats
	pulled := map[rangeKey]bool{} // ranges pulled whole, by keyspace and range
	var counted int64             // ranges of the last list not pulled yet, in the progress's total
	for {
		todo, err := s.gains()
		if err != nil {
			return total, err
		}
		todo = slices.DeleteFunc(todo, func(w gain) bool { return pulled[w.key()] })
		s.progress.RangesTotal.Add(int64(len(todo)) - counted)
		counted = int64(len(todo))
		changed := false
		for _, w := range todo {
			st, err := s.pullRange(ctx, w.ks, w.move, exclude)
			total.Records += st.Records
			total.Bytes += st.Bytes
			total.CrossDCBytes += st.CrossDCBytes
			if errors.Is(err, errRingChanged) {
				s.cfg.Logger.Info("the ring changed while streaming: computing the ranges to pull again", "keyspace", w.ks.Name, "range", w.move.Range)
				changed = true
				break
			}
			if err != nil {
				return total, err
			}
			pulled[w.key()] = true
			counted--
			total.Ranges++
			s.progress.RangesDone.Add(1)
		}
		if !changed {
			return total, nil
		}
	}
}

// gain is one range this node gains in one keyspace.
type gain struct {
	ks   schema.Keyspace
	move placement.Move
}

// rangeKey names a gain's keyspace and range.
type rangeKey struct {
	keyspace string
	rng      ring.Range
}

func (g gain) key() rangeKey { return rangeKey{g.ks.Name, g.move.Range} }

// gains lists the ranges this node gains in the moves in progress, in every keyspace.
func (s *Streamer) gains() ([]gain, error) {
	self := s.cfg.View.Self()
	var todo []gain
	for _, ks := range s.cfg.Keyspaces.List() {
		moves, err := s.cfg.Moves.Moves(ks)
		if err != nil {
			return nil, err
		}
		for _, m := range moves {
			if slices.ContainsFunc(m.Gainers, func(g placement.Member) bool { return g.ID == self.ID }) {
				todo = append(todo, gain{ks, m})
			}
		}
	}
	return todo, nil
}

// errRingChanged reports that a range's move no longer stands: its holders changed.
var errRingChanged = errors.New("the ring changed: the range's holders are not the move's")

// moveStands reports whether the ring still has move m of keyspace ks: the same range,
// with the same holders, and this node still gaining it.
func (s *Streamer) moveStands(ks schema.Keyspace, m placement.Move) bool {
	self := s.cfg.View.Self()
	moves, err := s.cfg.Moves.Moves(ks)
	if err != nil {
		return true // nothing better to go by: keep retrying the move as it was
	}
	ids := func(members []placement.Member) []string {
		out := make([]string, len(members))
		for i, member := range members {
			out[i] = member.ID
		}
		slices.Sort(out)
		return out
	}
	for _, now := range moves {
		if now.Range == m.Range && slices.Equal(ids(now.Holders), ids(m.Holders)) &&
			slices.ContainsFunc(now.Gainers, func(g placement.Member) bool { return g.ID == self.ID }) {
			return true
		}
	}
	return false
}

// pullRange pulls one range from a quorum of its holders, nearest first: one holder may
// have missed a write a quorum acknowledged (its hint not yet replayed), and the node
// pulling would then miss it too, and answer a quorum read without it once it serves.
// Any quorum of the holders shares a holder with every write quorum; a quorum of the
// holders of this node's DC, with every write a local level acknowledged there (the
// copies this node takes over are of its DC). A holder that fails
// mid-range gives way to the next; while fewer than a quorum served the range, it is
// retried, with the holders' states as they are then, until ctx ends. Holders that are
// rebuilding too serve beside every readable one when a quorum is not readable
// (sources).
func (s *Streamer) pullRange(ctx context.Context, ks schema.Keyspace, m placement.Move, exclude string) (Stats, error) {
	self := s.cfg.View.Self()
	var total Stats
	served := map[string]bool{}
	if from := takeover(m, self, exclude); len(from) > 0 {
		var failed error
		for _, src := range from {
			node, ok := s.cfg.View.Node(src.ID)
			if !ok {
				failed = fmt.Errorf("node %s is not in the view", src.ID)
				break
			}
			st, err := s.copy(ctx, s.cfg.Replicas.Replica(node), s.cfg.Replicas.Replica(self), ks.Name, m.Range, src.DC != self.DC)
			total.Records += st.Records
			total.Bytes += st.Bytes
			total.CrossDCBytes += st.CrossDCBytes
			if err != nil {
				failed = err
				break
			}
			served[src.ID] = true
		}
		if failed == nil {
			return total, nil
		}
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		s.cfg.Logger.Warn("the holder handing a range over failed; pulling it from a quorum of its holders", "keyspace", ks.Name, "range", m.Range, "err", failed)
	}
	defer s.waitingFor.Store(nil)
	for {
		holders := s.refresh(m.Holders)
		from, need, needHere := s.sources(holders, self, exclude)
		if need == 0 {
			s.cfg.Logger.Warn("no other node holds a range: nothing to pull", "keyspace", ks.Name, "range", m.Range)
			return total, nil
		}
		// Holders that served in an earlier try count, whatever their state now.
		enough := func() bool {
			return servedFrom(holders, served, "") >= need && servedFrom(holders, served, self.DC) >= needHere
		}
		if enough() {
			return total, nil
		}
		var lastErr error = errors.New("no holder is up")
		for _, src := range from {
			if served[src.ID] {
				continue
			}
			node, ok := s.cfg.View.Node(src.ID)
			if !ok {
				continue
			}
			st, err := s.copy(ctx, s.cfg.Replicas.Replica(node), s.cfg.Replicas.Replica(self), ks.Name, m.Range, src.DC != self.DC)
			total.Records += st.Records
			total.Bytes += st.Bytes
			total.CrossDCBytes += st.CrossDCBytes
			if err == nil {
				served[src.ID] = true
				if enough() {
					return total, nil
				}
				continue
			}
			lastErr = err
			s.cfg.Logger.Warn("stream from a holder failed; trying the next", "keyspace", ks.Name, "range", m.Range, "source", src.ID, "err", err)
			if ctx.Err() != nil {
				return total, ctx.Err()
			}
		}
		if !s.moveStands(ks, m) {
			return total, errRingChanged
		}
		waiting := downHolders(holders, served, self.ID, exclude)
		s.waitingFor.Store(&waiting)
		s.retries.Warn(s.cfg.Logger, fmt.Sprint(ks.Name, m.Range), fmt.Sprint(len(served), waiting),
			"too few holders could stream a range; retrying", "keyspace", ks.Name, "range", m.Range, "served", len(served), "need", need, "need_in_dc", needHere, "waiting_for", waiting, "err", lastErr)
		select {
		case <-ctx.Done():
			return total, fmt.Errorf("stream %s %v from %d of %d holders: %w (last: %v)", ks.Name, m.Range, len(served), need, ctx.Err(), lastErr)
		case <-time.After(s.cfg.Retry):
		}
	}
}

// refresh returns the holders with their states as the view has them now: a holder down
// when the move was computed may be back by a retry, and a rebuilding one normal.
func (s *Streamer) refresh(holders []placement.Member) []placement.Member {
	out := slices.Clone(holders)
	for i := range out {
		out[i].State = s.cfg.View.State(out[i].ID)
	}
	return out
}

// downHolders returns the holders, sorted by id, that have not served the range and are
// down (neither readable nor rebuilding), but for self and exclude.
func downHolders(holders []placement.Member, served map[string]bool, self, exclude string) []string {
	var ids []string
	for _, h := range holders {
		if !served[h.ID] && h.ID != self && h.ID != exclude && !h.State.Readable() && h.State != cluster.StateRebuilding {
			ids = append(ids, h.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// servedFrom counts the holders (of dc, unless empty) that have served the range.
func servedFrom(holders []placement.Member, served map[string]bool, dc string) int {
	n := 0
	for _, h := range holders {
		if served[h.ID] && (dc == "" || h.DC == dc) {
			n++
		}
	}
	return n
}

// takeover returns the holders whose copies self takes over in move m, to pull the range
// from: the losers in self's DC when the DC loses as many copies of the range as it
// gains (always, with a per-DC strategy), else every loser when the range loses as many
// copies as it gains. A gainer that holds every version of every copy it replaces keeps,
// for every write, at least as many replicas (per DC in the first case) as acknowledged
// it, whatever the other holders missed. It returns nil, for a pull from a quorum of the
// holders, when self is not a pending gainer (a rebuilding node has no copy to take
// over) or when a loser cannot serve: excluded (a dead node removed or replaced), not
// readable, or self.
func takeover(m placement.Move, self cluster.Node, exclude string) []placement.Member {
	if !slices.ContainsFunc(m.Gainers, func(g placement.Member) bool { return g.ID == self.ID && g.Pending }) {
		return nil
	}
	gained, gainedHere := 0, 0
	for _, g := range m.Gainers {
		if g.Pending {
			gained++
			if g.DC == self.DC {
				gainedHere++
			}
		}
	}
	var lostHere []placement.Member
	for _, l := range m.Losers {
		if l.DC == self.DC {
			lostHere = append(lostHere, l)
		}
	}
	from := lostHere
	if len(lostHere) != gainedHere {
		if len(m.Losers) != gained {
			return nil
		}
		from = m.Losers
	}
	for _, l := range from {
		if l.ID == self.ID || l.ID == exclude || !l.State.Readable() {
			return nil
		}
	}
	return from
}

// sources returns the holders to pull a range from, readable ones first and nearest
// first, and how many of them must serve it: a quorum of the holders (or every other
// holder, when there are fewer) from the readable ones. When too few are readable
// because others are rebuilding, a rebuilding holder serves too, and then every source
// must: it holds only the writes that reached it since it lost its data, so it counts
// only beside every readable copy. Without that, two replicas rebuilding at once would
// each wait for the other to become readable, for ever. need is 0 when no other node
// holds the range.
//
// needHere of them must be of self's DC: a quorum of the DC's holders, so that a write a
// local level (LOCAL_QUORUM, EACH_QUORUM) acknowledged in this DC alone is pulled too. A
// global quorum alone may be met by other DCs' holders while this DC's are down; the
// range then waits for them, rather than be served without what only they hold.
func (s *Streamer) sources(holders []placement.Member, self cluster.Node, exclude string) (from []placement.Member, need, needHere int) {
	others, here, othersHere, readableHere := 0, 0, 0, 0
	var rebuilding []placement.Member
	for _, h := range holders {
		if h.DC == self.DC {
			here++
		}
		switch {
		case h.ID == self.ID || h.ID == exclude:
			continue
		case h.State.Readable():
			from = append(from, h)
			if h.DC == self.DC {
				readableHere++
			}
		case h.State == cluster.StateRebuilding:
			rebuilding = append(rebuilding, h)
		}
		others++
		if h.DC == self.DC {
			othersHere++
		}
	}
	if others == 0 {
		return nil, 0, 0
	}
	need = min(len(holders)/2+1, others)
	needHere = min(here/2+1, othersHere)
	s.nearestFirst(from, self)
	s.nearestFirst(rebuilding, self)
	if len(from) < need && len(from)+len(rebuilding) >= need {
		from = append(from, rebuilding...)
		need = len(from)
	} else if len(from) >= need && readableHere < needHere {
		// This DC's other holders are rebuilding too (their disks lost with this one's):
		// they serve what they took since, as in the global case.
		for _, h := range rebuilding {
			if h.DC == self.DC {
				from = append(from, h)
			}
		}
	}
	return from, need, needHere
}

// nearestFirst orders holders: this node's DC first, then by distance.
func (s *Streamer) nearestFirst(holders []placement.Member, self cluster.Node) {
	slices.SortStableFunc(holders, func(a, b placement.Member) int {
		if (a.DC == self.DC) != (b.DC == self.DC) {
			if a.DC == self.DC {
				return -1
			}
			return 1
		}
		if s.cfg.Proximity == nil {
			return 0
		}
		return int(s.cfg.Proximity.Distance(a.ID) - s.cfg.Proximity.Distance(b.ID))
	})
}

// copy pulls one range from src into dst, page by page, throttled.
func (s *Streamer) copy(ctx context.Context, src, dst replica.Replica, keyspace string, rg ring.Range, crossDC bool) (Stats, error) {
	var st Stats
	var start []byte
	for {
		req := replica.ScanRequest{Keyspace: keyspace, Start: start, Limit: PageRecords, PageBytes: s.cfg.PageBytes, Ranges: []ring.Range{rg}, Stream: true}
		pageCtx, cancel := context.WithTimeout(ctx, s.cfg.PageTimeout)
		page, err := src.Scan(pageCtx, req)
		cancel()
		if err != nil {
			return st, err
		}
		if len(page) == 0 {
			return st, nil
		}
		bytes := int64(0)
		for _, r := range page {
			bytes += recordBytes(r)
		}
		if s.cfg.Limiter != nil {
			if err := waitBytes(ctx, s.cfg.Limiter, bytes); err != nil {
				return st, err
			}
		}
		if err := dst.Apply(ctx, keyspace, page); err != nil {
			return st, fmt.Errorf("apply a streamed page: %w", err)
		}
		st.Records += int64(len(page))
		st.Bytes += bytes
		s.progress.Records.Add(int64(len(page)))
		s.progress.Bytes.Add(bytes)
		if crossDC {
			st.CrossDCBytes += bytes
			s.progress.CrossDCBytes.Add(bytes)
		}
		if !req.CutShort(page) {
			return st, nil
		}
		start = append(slices.Clone(page[len(page)-1].Key), 0)
	}
}

// recordBytes is a record's payload on the wire, as streaming counts it.
func recordBytes(r lww.Record) int64 { return int64(len(r.Key) + len(r.Value) + 9) }

// waitBytes takes n bytes from the limiter, in bursts it allows.
func waitBytes(ctx context.Context, l *rate.Limiter, n int64) error {
	for n > 0 {
		take := min(n, int64(l.Burst()))
		if err := l.WaitN(ctx, int(take)); err != nil {
			return err
		}
		n -= take
	}
	return nil
}
