// Package antientropy is anti-entropy repair, as Cassandra's repair and Riak's active
// anti-entropy do it: a node brings the replicas of every token range it holds back in
// agreement, whatever they missed (hints lost with a coordinator, a write that failed on
// some replicas, a node that lost its disk).
//
// For each range of a replicated keyspace, the node asks every replica, itself included
// and all through the Replica seam, for the Merkle tree of its records in the range
// (package merkle). Where the trees differ, it reads only the differing sub-ranges from
// every replica, page by page, and applies the newest version of each key (lww.Newer,
// tombstones included) to the replicas that lack it or hold an older one. Replicas that
// agree exchange the trees and nothing else.
//
// A repair never resurrects a delete: every replica reports its tombstone watermark with
// its tree (storage.Engine.TombstoneWatermark), and a replica that lacks a key is not given
// a version at or below its watermark, because the tombstone that deleted it may be one
// it has collected. Such versions are counted as skipped. A wiped node's watermark is 0:
// it receives everything.
//
// Erasure-coded keyspaces (LDR) store each chunk once, so there is no replica to compare
// with: instead the node lists the chunk keys the other nodes hold (keys and versions
// only), and each chunk it should own but lacks, or holds older, it rebuilds from any k
// chunks of the value, its own DC's first (coord.Coordinator.RebuildChunks).
package antientropy

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// Keyspaces looks keyspace definitions up; *schema.Catalog is one.
type Keyspaces interface {
	Get(name string) (schema.Keyspace, error)
	List() []schema.Keyspace
}

// Replicas hands out any node's Replica; *remote.Set is one.
type Replicas interface {
	Replica(n cluster.Node) replica.Replica
}

// Chunks is what a repair needs of the coordinator for erasure-coded keyspaces;
// *coord.Coordinator is one.
type Chunks interface {
	ChunkOwners(ctx context.Context, keyspace string, key []byte) ([]placement.Member, error)
	RebuildChunks(ctx context.Context, keyspace string, key []byte, node string) ([]lww.Record, error)
}

// Watermarks reads this node's tombstone watermarks; *storage.Engine is one.
type Watermarks interface {
	TombstoneWatermark(keyspace string) (hlc.Timestamp, error)
}

// Parts are what a repair works with, as the node (or the simulator) builds them.
type Parts struct {
	View       cluster.View
	Keyspaces  Keyspaces
	Placement  placement.Placement
	Replicas   Replicas
	Chunks     Chunks
	Watermarks Watermarks
}

// Config tunes a repair.
type Config struct {
	// MaxDepth bounds the depth of the trees compared; default DefaultMaxDepth.
	MaxDepth int
	// LeafRecords is about how many records a tree's leaf holds: a range's tree gets as
	// many leaves as this node's copy needs for it, up to 2^MaxDepth. Fewer records per
	// leaf cost more tree bytes and move fewer records for each key that differs.
	// Default DefaultLeafRecords.
	LeafRecords int
	// PageRecords bounds the records one scan answer carries; default 1000.
	PageRecords int
	// PageBytes bounds the key and value bytes of one scan answer (ending at the record
	// that reaches it) and of one batch of records sent to a replica; default
	// replica.DefaultPageBytes.
	PageBytes int
	// ReplicaTimeout bounds each request to a replica; default 10 s.
	ReplicaTimeout time.Duration
	Logger         *slog.Logger
}

// Defaults of Config.
const (
	DefaultMaxDepth    = 12
	DefaultLeafRecords = 16
)

// Request says what to repair.
type Request struct {
	// Keyspace names the keyspace to repair; empty repairs every keyspace.
	Keyspace string
	// DC, when set, limits the repair to the replicas in DC (and this node).
	DC string
	// Spread, when set, spreads the work evenly over this long: the background repair
	// walks the ring slowly rather than loading every replica at once.
	Spread time.Duration
}

// Stats say what a repair compared and moved. Bytes count the payloads exchanged with
// other nodes; the local replica's answers cost none.
type Stats struct {
	Keyspaces          int
	Ranges             int // token ranges compared
	Failed             int // ranges, nodes' chunk listings or chunk keys left unfinished: a node did not answer
	Subranges          int // Merkle leaves compared
	DifferingSubranges int
	RecordsRead        int // records read in differing sub-ranges, from every replica
	RecordsSent        int // records applied to a replica that lacked them or held an older version
	Skipped            int // versions not given to a replica lacking the key: at or below its tombstone watermark
	TreeBytes          int64
	RecordBytes        int64 // records read from, and sent to, other nodes
	ChunkKeysListed    int   // erasure-coded keyspaces: chunk keys the other nodes listed
	ListingBytes       int64
	ChunksRebuilt      int
}

// add adds o's figures to s.
func (s *Stats) add(o Stats) {
	s.Keyspaces += o.Keyspaces
	s.Ranges += o.Ranges
	s.Failed += o.Failed
	s.Subranges += o.Subranges
	s.DifferingSubranges += o.DifferingSubranges
	s.RecordsRead += o.RecordsRead
	s.RecordsSent += o.RecordsSent
	s.Skipped += o.Skipped
	s.TreeBytes += o.TreeBytes
	s.RecordBytes += o.RecordBytes
	s.ChunkKeysListed += o.ChunkKeysListed
	s.ListingBytes += o.ListingBytes
	s.ChunksRebuilt += o.ChunksRebuilt
}

// Repairer repairs the data one node holds.
type Repairer struct {
	cfg        Config
	view       cluster.View
	keyspaces  Keyspaces
	placement  placement.Placement
	replicas   Replicas
	chunks     Chunks
	watermarks Watermarks
	log        *slog.Logger
}

// New returns the repairer of the node parts.View belongs to.
func New(cfg Config, parts Parts) *Repairer {
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.LeafRecords <= 0 {
		cfg.LeafRecords = DefaultLeafRecords
	}
	if cfg.PageRecords <= 0 {
		cfg.PageRecords = 1000
	}
	if cfg.PageBytes <= 0 {
		cfg.PageBytes = replica.DefaultPageBytes
	}
	if cfg.ReplicaTimeout <= 0 {
		cfg.ReplicaTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Repairer{
		cfg:        cfg,
		view:       parts.View,
		keyspaces:  parts.Keyspaces,
		placement:  parts.Placement,
		replicas:   parts.Replicas,
		chunks:     parts.Chunks,
		watermarks: parts.Watermarks,
		log:        cfg.Logger,
	}
}

// step is one unit of a repair: a token range of a replicated keyspace, or the chunk
// rebuild of an erasure-coded one.
type step struct {
	ks    schema.Keyspace
	rng   placement.RangeReplicas // unset for an erasure-coded keyspace
	coded bool
}

// Repair repairs what req names and says what it did. A range whose replicas do not all
// answer is repaired among those that do and counted as failed; the error is for a
// repair that could not run at all (an unknown keyspace, no route, ctx ended).
func (r *Repairer) Repair(ctx context.Context, req Request) (Stats, error) {
	steps, keyspaces, err := r.plan(ctx, req.Keyspace)
	if err != nil {
		return Stats{}, err
	}
	stats := Stats{Keyspaces: keyspaces}
	var pause time.Duration
	if len(steps) > 0 {
		pause = req.Spread / time.Duration(len(steps))
	}
	for _, s := range steps {
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return stats, ctx.Err()
			}
		}
		if s.coded {
			stats.add(r.rebuildChunks(ctx, s.ks, req.DC))
		} else {
			stats.add(r.repairRange(ctx, s.ks, s.rng, req.DC))
		}
		if err := ctx.Err(); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

// plan lists the steps of a repair of keyspace (every keyspace when empty): the token
// ranges of the whole ring whose replicas include this node, or one chunk rebuild per
// erasure-coded keyspace.
func (r *Repairer) plan(ctx context.Context, keyspace string) ([]step, int, error) {
	keyspaces := r.keyspaces.List()
	if keyspace != "" {
		ks, err := r.keyspaces.Get(keyspace)
		if err != nil {
			return nil, 0, err
		}
		keyspaces = []schema.Keyspace{ks}
	}
	self := r.view.Self().ID
	var steps []step
	for _, ks := range keyspaces {
		if ks.Erasure.Enabled() {
			steps = append(steps, step{ks: ks, coded: true})
			continue
		}
		ranges, err := r.placement.ScanRanges(ctx, ks, nil, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("repair keyspace %s: %w", ks.Name, err)
		}
		for _, rr := range ranges {
			for _, m := range rr.Replicas {
				if m.ID == self {
					steps = append(steps, step{ks: ks, rng: rr})
					break
				}
			}
		}
	}
	return steps, len(keyspaces), nil
}

// replica returns member's Replica.
func (r *Repairer) replica(m placement.Member) (replica.Replica, error) {
	n, ok := r.view.Node(m.ID)
	if !ok {
		return nil, fmt.Errorf("node %s is not in the directory", m.ID)
	}
	return r.replicas.Replica(n), nil
}

// each calls ask for every member at once, each within the replica timeout, and waits
// for all: the remote ones each in a goroutine, this node's inline, last, as the
// coordinator does. It returns each member's error, by index.
func (r *Repairer) each(ctx context.Context, members []placement.Member, ask func(ctx context.Context, i int, rep replica.Replica) error) []error {
	errs := make([]error, len(members))
	done := make(chan struct{}, len(members))
	call := func(i int) {
		defer func() { done <- struct{}{} }()
		rep, err := r.replica(members[i])
		if err != nil {
			errs[i] = err
			return
		}
		ctx, cancel := context.WithTimeout(ctx, r.cfg.ReplicaTimeout)
		defer cancel()
		errs[i] = ask(ctx, i, rep)
	}
	self := -1
	for i, m := range members {
		if m.ID == r.view.Self().ID {
			self = i
			continue
		}
		go call(i)
	}
	if self >= 0 {
		call(self)
	}
	for range members {
		<-done
	}
	return errs
}
