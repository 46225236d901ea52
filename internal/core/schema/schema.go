// Package schema holds the keyspace catalog: each keyspace's name, replication (or
// erasure code) and partitioner, known to every node. Definitions are versioned by timestamp and merged last
// writer wins, so nodes that exchange them in any order agree; each node persists its
// catalog in its storage engine.
package schema

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
)

// Keyspace is one keyspace's definition.
type Keyspace struct {
	Name        string
	Replication string // as ring.ParseReplication reads it: "dc1=2,dc2=1" or "simple=3"
	// Partitioner is "hash", "grouped" or "ordered" (ring.PartitionerByName); empty
	// means DefaultPartitioner for a new definition. A stored definition always names
	// its partitioner, so a keyspace keeps the one it was created with.
	Partitioner string
	// Erasure, when set, makes the keyspace erasure-coded (LDR, paper 000): each value is
	// stored as M chunks, any K of which rebuild it, each chunk once, at the owner of a
	// chunk id derived from the key. Replication must then be empty or "simple=1", which
	// is exactly that placement. The zero value means a replicated keyspace.
	Erasure   Erasure
	Timestamp hlc.Timestamp
	// TruncatedAt is the keyspace's last truncation (Redis's FLUSHDB): every record
	// written at or before it reads as absent, and each replica removes such records in
	// its own time. Zero means never truncated. It merges apart from the rest of the
	// definition: the later truncation wins, whichever definition does, so a truncation
	// is never lost to a concurrent change of the definition.
	TruncatedAt hlc.Timestamp
	// Dropped marks a dropped keyspace: a definition like any other (so the drop wins
	// over older definitions everywhere and loses to a later create), truncated at the
	// drop, which the catalog hides from Get and List. A keyspace created again under the
	// name keeps the drop's truncation, so no record of the dropped one reappears, even
	// from a node that missed the drop.
	Dropped bool
	// Splits balance the ordered partitioner (see ring.SplitPartitioner): sorted,
	// distinct, non-empty keys, usually quantiles of a key sample (SplitsFromSample), so
	// that keys spread over the ring as the sample did. Empty: the token is a key's first
	// 8 bytes, as before splits existed, so data placed that way stays where it is.
	Splits [][]byte
	// Moving marks a move in progress (kura rebalance, kura keyspace alter;
	// internal/service/rebalance): reads and the level use the replicas keys have under
	// Splits and Replication, and writes also go to those they have under NextSplits and
	// NextReplication, as pending replicas, until every record has been copied there and
	// the definition switches. NextSplits may be empty: the partitioner without splits
	// (an alter of an ordered keyspace keeps its splits in NextSplits).
	Moving     bool
	NextSplits [][]byte
	// NextReplication is the replication a keyspace moves to (kura keyspace alter), only
	// while Moving; empty means Replication (a rebalance, which moves split keys only).
	NextReplication string
	// Transactions is where the keyspace's lightweight transactions run:
	// TransactionsKey, one Paxos instance per key, or TransactionsPartition, one per hash
	// tag, so that a transaction may cover several keys of a tag (docs/lwt.md). Empty
	// means TransactionsKey. Fixed at creation: a key's instance changing under a round
	// in flight could let two values be chosen.
	Transactions string
	// CollectionInstances, in a keyspace of TransactionsPartition, runs the lightweight
	// transactions of a collection's element records (package element: a list's item, a
	// hash's field) on the instance of their collection key's partition, so that a
	// command that rewrites one element (a pop, HINCRBY) and a MULTI/EXEC over the
	// collection are serialized whatever the key's hash tag. False: each element record
	// runs on its own hash tag's instance, as before the option existed (docs/lwt.md,
	// "Element records on their collection's instance"). Set by the node that creates the keyspace when every member
	// runs it; fixed at creation, as Transactions is.
	CollectionInstances bool

	strategy     ring.Strategy
	partitioner  ring.Partitioner
	next         ring.Partitioner // nil unless Moving
	nextStrategy ring.Strategy    // nil unless Moving
}

// Bounds of a keyspace's splits, which every definition carries to every node (and the
// catalog pull carries all of them in one message): 4096 buckets are finer than any
// ring's vnodes, and a longer split key would distinguish nothing the partitioner reads,
// which is the 8 bytes after the prefix two neighbouring splits share.
const (
	MaxSplits        = 4096
	MaxSplitKeyBytes = 64
)

// SystemPrefix starts the names of node-local keyspaces (hints, the catalog itself);
// users cannot create keyspaces with it.
const SystemPrefix = "system"

// catalogKeyspace is where a node stores its catalog, and conflictKeyspace the settled
// implicit definitions that won over this node's own (Catalog.conflicts), so that it
// refuses their transactions after a restart too, before it meets them again.
const (
	catalogKeyspace  = SystemPrefix + "_schema"
	conflictKeyspace = SystemPrefix + "_schema_conflicts"
)

var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// DefaultKeyspace is the keyspace every node serves from its first start (see
// Catalog.EnsureDefault), so that a client that names none, as a Redis client never
// does, has somewhere to write.
const DefaultKeyspace = "default"

// ImplicitTimestamp versions the default keyspace a node defines by itself, until the
// node settles it (SettledTimestamp): its own proposal, which it neither persists nor
// sends to other nodes, and runs no lightweight transaction in (TransactionsReady). It
// is below any clock reading, so a keyspace an operator creates under that name wins
// over it. Builds before settling persisted and sent their definition at this timestamp
// and ran transactions in it: such a definition, read from the disk or from a peer,
// counts as settled.
const ImplicitTimestamp hlc.Timestamp = 1

// SettledTimestamp versions an implicit definition of the default keyspace that a node
// settled on: its own, when it founded the cluster (Settle), or the cluster's, which it
// adopted (Apply). A settled definition is persisted, travels, and is never replaced by
// another implicit one, settled or not: a key's Paxos instance changing under a round in
// flight could let two values be chosen (docs/lwt.md). Below any clock reading, so a
// keyspace an operator creates under that name still wins over it.
const SettledTimestamp hlc.Timestamp = 2

// DefaultPartitioner is the partitioner of a keyspace created without one: keys of one
// Redis hash tag share a replica set, and keys without a tag place as under "hash".
// Keyspaces created before it existed keep "hash" (their catalog entry names it).
//
// Its name sorts before "hash", which matters for the implicit default keyspace: two
// definitions at ImplicitTimestamp are ordered by their encoded values, the larger
// winning, so when a node of this build joins a cluster whose default keyspace was
// defined by an older build with "hash", the cluster's definition wins on every node
// and the keys already stored stay where they are.
const DefaultPartitioner = "grouped"

// The places a keyspace's lightweight transactions run (Keyspace.Transactions).
const (
	// TransactionsKey runs one Paxos instance per key, as keyspaces always did.
	TransactionsKey = "key"
	// TransactionsPartition runs one per partition (the hash tag its keys share under
	// the grouped partitioner), whose proposals carry every key a transaction writes.
	TransactionsPartition = "partition"
)

// Errors callers distinguish.
var (
	ErrInvalidKeyspace = errors.New("invalid keyspace")
	ErrNoKeyspace      = errors.New("no such keyspace")
)

// ValidateName returns an error wrapping ErrInvalidKeyspace unless name may name a
// keyspace an operator creates: the check of Compile, for settings that name a keyspace
// before it exists (a node's --resp-keyspace).
func ValidateName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w: name %q must be 1-48 letters, digits or _ and start with a letter", ErrInvalidKeyspace, name)
	}
	if strings.HasPrefix(strings.ToLower(name), SystemPrefix) {
		return fmt.Errorf("%w: name %q: names starting with %q are reserved", ErrInvalidKeyspace, name, SystemPrefix)
	}
	return nil
}

// Compile validates the definition and prepares its strategy and partitioner.
func (k Keyspace) Compile() (Keyspace, error) {
	if err := ValidateName(k.Name); err != nil {
		return k, err
	}
	if k.Erasure.Enabled() && k.Replication == "" {
		k.Replication = "simple=1"
	}
	strategy, err := ring.ParseReplication(k.Replication)
	if err != nil {
		return k, fmt.Errorf("%w %s: replication: %v", ErrInvalidKeyspace, k.Name, err)
	}
	if err := k.Erasure.validate(strategy); err != nil {
		return k, fmt.Errorf("%w %s: %v", ErrInvalidKeyspace, k.Name, err)
	}
	if k.Partitioner == "" {
		k.Partitioner = DefaultPartitioner
	}
	partitioner, err := ring.PartitionerByName(k.Partitioner)
	if err != nil {
		return k, fmt.Errorf("%w %s: %v", ErrInvalidKeyspace, k.Name, err)
	}
	nextStrategy, err := k.compileNextReplication(strategy)
	if err != nil {
		return k, fmt.Errorf("%w %s: %v", ErrInvalidKeyspace, k.Name, err)
	}
	if err := k.validateSplits(); err != nil {
		return k, fmt.Errorf("%w %s: %v", ErrInvalidKeyspace, k.Name, err)
	}
	if err := k.validateTransactions(); err != nil {
		return k, fmt.Errorf("%w %s: %v", ErrInvalidKeyspace, k.Name, err)
	}
	if err := k.validateCollectionInstances(); err != nil {
		return k, fmt.Errorf("%w %s: %v", ErrInvalidKeyspace, k.Name, err)
	}
	k.Transactions = cmp.Or(k.Transactions, TransactionsKey)
	if k.Partitioner == "ordered" {
		partitioner = ring.SplitPartitioner(k.Splits)
	}
	k.next, k.nextStrategy = nil, nil
	if k.Moving {
		k.next, k.nextStrategy = partitioner, nextStrategy
		if k.Partitioner == "ordered" {
			k.next = ring.SplitPartitioner(k.NextSplits)
		}
	}
	k.Replication = strategy.String()
	k.strategy, k.partitioner = strategy, partitioner
	return k, nil
}

// compileNextReplication checks NextReplication, normalises it (empty when it is the
// current replication, so that a move of split keys alone reads as a rebalance) and
// returns the strategy keys move to: current when the move keeps the replication.
func (k *Keyspace) compileNextReplication(current ring.Strategy) (ring.Strategy, error) {
	if k.NextReplication == "" {
		return current, nil
	}
	switch {
	case !k.Moving:
		return nil, errors.New("next replication without a move in progress")
	case k.Erasure.Enabled():
		return nil, fmt.Errorf("next replication with erasure %s: an erasure-coded keyspace stores each chunk once", k.Erasure)
	}
	next, err := ring.ParseReplication(k.NextReplication)
	if err != nil {
		return nil, fmt.Errorf("next replication: %v", err)
	}
	k.NextReplication = next.String()
	if k.NextReplication == current.String() {
		k.NextReplication = ""
		return current, nil
	}
	return next, nil
}

// validateSplits checks Splits and NextSplits: only an ordered, replicated keyspace has
// them (an erasure-coded one places chunks by their own hash), each sorted, distinct and
// within the bounds. A keyspace of another partitioner moves only to another
// replication.
func (k Keyspace) validateSplits() error {
	if len(k.Splits) == 0 && !k.Moving && len(k.NextSplits) == 0 {
		return nil
	}
	switch {
	case k.Moving && k.Partitioner != "ordered" && len(k.Splits) == 0 && len(k.NextSplits) == 0:
		if k.NextReplication == "" {
			return fmt.Errorf("moving with neither next split keys nor a next replication; partitioner %s has no split keys", k.Partitioner)
		}
		return nil
	case k.Partitioner != "ordered":
		return fmt.Errorf("split keys balance the ordered partitioner; partitioner %s places keys by their hash", k.Partitioner)
	case k.Erasure.Enabled():
		return fmt.Errorf("split keys with erasure %s: an erasure-coded keyspace places each chunk by its own hash", k.Erasure)
	case !k.Moving && len(k.NextSplits) > 0:
		return errors.New("next split keys without a rebalance in progress")
	}
	if err := checkSplits(k.Splits); err != nil {
		return err
	}
	if err := checkSplits(k.NextSplits); err != nil {
		return fmt.Errorf("next %v", err)
	}
	return nil
}

// validateTransactions checks Transactions: a partition's instance needs the keys of a
// tag on one replica set (the grouped partitioner) and replicas to run Paxos among.
func (k Keyspace) validateTransactions() error {
	switch {
	case k.Transactions == "" || k.Transactions == TransactionsKey:
		return nil
	case k.Transactions != TransactionsPartition:
		return fmt.Errorf("transactions %q: want %q or %q", k.Transactions, TransactionsKey, TransactionsPartition)
	case k.Partitioner != "grouped":
		return fmt.Errorf("transactions %s need the grouped partitioner, which gives the keys of a hash tag one token; partitioner %s does not", k.Transactions, k.Partitioner)
	case k.Erasure.Enabled():
		return fmt.Errorf("transactions %s with erasure %s: an erasure-coded keyspace takes no lightweight transaction", k.Transactions, k.Erasure)
	}
	return nil
}

// validateCollectionInstances checks CollectionInstances: only a keyspace whose
// transactions run per partition has a collection's partition instance to run them on.
func (k Keyspace) validateCollectionInstances() error {
	if k.CollectionInstances && k.Transactions != TransactionsPartition {
		return fmt.Errorf("element records on their collection's instance need transactions %s, not %s", TransactionsPartition, cmp.Or(k.Transactions, TransactionsKey))
	}
	return nil
}

// TransactionPartition returns the partition whose Paxos instance runs key's lightweight
// transactions when the keyspace runs them per partition: key's hash tag
// (ring.HashTag), or, with CollectionInstances, its collection key's when key is an
// element record's (ring.GroupTag). Every node must compute the same for a keyspace: a
// key on two instances is two Paxos histories, where two values can be chosen.
func (k Keyspace) TransactionPartition(key []byte) []byte {
	if k.CollectionInstances {
		return ring.GroupTag(key)
	}
	return ring.HashTag(key)
}

// PartitionTransactions reports whether the keyspace's lightweight transactions run per
// partition (TransactionsPartition).
func (k Keyspace) PartitionTransactions() bool { return k.Transactions == TransactionsPartition }

func checkSplits(splits [][]byte) error {
	if len(splits) > MaxSplits {
		return fmt.Errorf("split keys: %d, at most %d", len(splits), MaxSplits)
	}
	for i, s := range splits {
		switch {
		case len(s) == 0 || len(s) > MaxSplitKeyBytes:
			return fmt.Errorf("split key %d has %d bytes; want 1 to %d", i, len(s), MaxSplitKeyBytes)
		case i > 0 && bytes.Compare(splits[i-1], s) >= 0:
			return fmt.Errorf("split keys %d and %d (%q, %q) are not in ascending order, or equal", i-1, i, splits[i-1], s)
		}
	}
	return nil
}

// Erasure is an erasure code's shape: M chunks per value, any K of which rebuild it.
type Erasure struct {
	M, K int
}

// Enabled reports whether a keyspace with this code is erasure-coded rather than
// replicated.
func (e Erasure) Enabled() bool { return e != Erasure{} }

// String returns "M,K" as ParseErasure reads it, or "" for the zero value.
func (e Erasure) String() string {
	if !e.Enabled() {
		return ""
	}
	return fmt.Sprintf("%d,%d", e.M, e.K)
}

// ParseErasure reads "M,K" ("6,4"); "" gives the zero value (replicated). It checks the
// syntax only; Compile checks the bounds.
func ParseErasure(setting string) (Erasure, error) {
	if strings.TrimSpace(setting) == "" {
		return Erasure{}, nil
	}
	ms, ks, ok := strings.Cut(setting, ",")
	m, errM := strconv.Atoi(strings.TrimSpace(ms))
	k, errK := strconv.Atoi(strings.TrimSpace(ks))
	if !ok || errM != nil || errK != nil {
		return Erasure{}, fmt.Errorf("%w: erasure %q: want M,K (e.g. 6,4: 6 chunks, any 4 rebuild a value)", ErrInvalidKeyspace, setting)
	}
	return Erasure{M: m, K: k}, nil
}

// validate checks the code's bounds and that the placement stores each chunk once.
// K == M is allowed: plain striping without redundancy, the paper's comparison point.
func (e Erasure) validate(placement ring.Strategy) error {
	if !e.Enabled() {
		return nil
	}
	if e.K < 1 || e.K > e.M || e.M < 2 || e.M > erasure.MaxChunks {
		return fmt.Errorf("erasure %s: want 1 <= k <= m, 2 <= m <= %d", e, erasure.MaxChunks)
	}
	if placement.Name() != "simple" || placement.ReplicationFactor() != 1 {
		return fmt.Errorf("erasure %s with replication %s: an erasure-coded keyspace stores each chunk once (its redundancy is m-k chunks); omit replication or give simple=1", e, placement)
	}
	return nil
}

// Strategy is the keyspace's placement strategy; valid only on a compiled Keyspace.
func (k Keyspace) Strategy() ring.Strategy { return k.strategy }

// Partition is the keyspace's partitioner (with its Splits); valid only on a compiled
// Keyspace.
func (k Keyspace) Partition() ring.Partitioner { return k.partitioner }

// NextPartition is the partitioner keys move to while a move is in progress (Moving):
// under NextSplits for an ordered keyspace, else the keyspace's own; nil when not
// moving. Valid only on a compiled Keyspace.
func (k Keyspace) NextPartition() ring.Partitioner { return k.next }

// NextStrategy is the placement strategy keys move to while a move is in progress
// (Moving): NextReplication's, or the current one when the move keeps the replication;
// nil when not moving. Valid only on a compiled Keyspace.
func (k Keyspace) NextStrategy() ring.Strategy { return k.nextStrategy }

// ChangesReplication reports whether a move in progress changes the replication (kura
// keyspace alter) rather than only the split keys (kura rebalance).
func (k Keyspace) ChangesReplication() bool { return k.Moving && k.NextReplication != "" }

// Records is where a catalog keeps its definitions, one record a keyspace in its own
// keyspace of the node's storage engine; *storage.Engine is one. The catalog takes it
// as an interface so that the packages that read definitions (placement, the Go client)
// do not depend on the engine.
type Records interface {
	// Scan returns the live records of keyspace ks between start and end (nil: all),
	// at most limit of them (0: no limit), tombstones too when withTombstones, those
	// filter accepts (nil: all).
	Scan(ks string, start, end []byte, limit int, withTombstones bool, filter func(key []byte) bool) ([]lww.Record, error)
	// Apply stores r in keyspace ks, durably, unless a newer version is stored; it
	// reports whether r was applied.
	Apply(ks string, r lww.Record) (applied bool, err error)
}

// Catalog is a node's set of keyspaces, safe for concurrent use.
type Catalog struct {
	engine Records

	mu        sync.RWMutex
	keyspaces map[string]Keyspace
	// conflicts holds, by name, a settled implicit definition met that differs from
	// this node's settled one and wins over it (ImplicitConflict): this node keeps its
	// own and refuses transactions in the keyspace (TransactionsReady). Persisted in
	// conflictKeyspace, until an operator's definition ends it.
	conflicts map[string]Keyspace
}

// Open loads the catalog persisted in engine.
func Open(engine Records) (*Catalog, error) {
	c := &Catalog{engine: engine, keyspaces: map[string]Keyspace{}, conflicts: map[string]Keyspace{}}
	records, err := engine.Scan(catalogKeyspace, nil, nil, 0, false, nil)
	if err != nil {
		return nil, fmt.Errorf("load schema: %w", err)
	}
	for _, r := range records {
		k, err := decode(r)
		if err != nil {
			return nil, fmt.Errorf("load schema: %w", err)
		}
		if k.Timestamp == ImplicitTimestamp {
			// An older build persisted it and ran transactions in it: settled. Stored
			// again at SettledTimestamp, so that it travels as settled.
			k.Timestamp = SettledTimestamp
			if _, err := engine.Apply(catalogKeyspace, encode(k)); err != nil {
				return nil, fmt.Errorf("settle keyspace %s: %w", k.Name, err)
			}
		}
		c.keyspaces[k.Name] = k
	}
	conflicts, err := engine.Scan(conflictKeyspace, nil, nil, 0, false, nil)
	if err != nil {
		return nil, fmt.Errorf("load schema conflicts: %w", err)
	}
	for _, r := range conflicts {
		k, err := decode(r)
		if err != nil {
			return nil, fmt.Errorf("load schema conflicts: %w", err)
		}
		if own, ok := c.keyspaces[k.Name]; ok && own.Timestamp == SettledTimestamp {
			c.conflicts[k.Name] = k
		}
	}
	return c, nil
}

// Apply merges a definition another node sent, or one created here: it replaces the
// stored one as Merge says, and the later of the two truncations is kept either way.
// The result is persisted before Apply returns. It reports whether the catalog changed.
// A definition at ImplicitTimestamp comes from a build before settling, which ran
// transactions in it: it is applied as settled.
func (c *Catalog) Apply(k Keyspace) (bool, error) {
	k, err := k.Compile()
	if err != nil {
		return false, err
	}
	if k.Timestamp == ImplicitTimestamp {
		k.Timestamp = SettledTimestamp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.keyspaces[k.Name]; ok {
		truncatedAt := max(old.TruncatedAt, k.TruncatedAt)
		merged, conflict := Merge(old, k)
		if err := c.recordConflictLocked(k, merged, conflict); err != nil {
			return false, err
		}
		k = merged
		k.TruncatedAt = truncatedAt
		if k.Timestamp == old.Timestamp && bytes.Equal(encode(k).Value, encode(old).Value) {
			return false, nil
		}
	}
	if err := c.storeLocked(k); err != nil {
		return false, err
	}
	return true, nil
}

// recordConflictLocked persists and keeps in, a settled implicit definition that wins
// over this node's own (conflict), and forgets a conflict once an operator's definition
// was merged; c.mu is held.
func (c *Catalog) recordConflictLocked(in, merged Keyspace, conflict bool) error {
	switch _, known := c.conflicts[in.Name]; {
	case conflict && !known:
		if _, err := c.engine.Apply(conflictKeyspace, encode(in)); err != nil {
			return fmt.Errorf("store the conflict of keyspace %s: %w", in.Name, err)
		}
		c.conflicts[in.Name] = in
	case known && merged.Timestamp > SettledTimestamp:
		end := lww.Record{Key: []byte(in.Name), Timestamp: merged.Timestamp, Tombstone: true}
		if _, err := c.engine.Apply(conflictKeyspace, end); err != nil {
			return fmt.Errorf("end the conflict of keyspace %s: %w", in.Name, err)
		}
		delete(c.conflicts, in.Name)
	}
	return nil
}

// storeLocked persists k, unless it is this node's own implicit proposal, and keeps it;
// c.mu is held.
func (c *Catalog) storeLocked(k Keyspace) error {
	if k.Timestamp != ImplicitTimestamp {
		if _, err := c.engine.Apply(catalogKeyspace, encode(k)); err != nil {
			return fmt.Errorf("store keyspace %s: %w", k.Name, err)
		}
	}
	c.keyspaces[k.Name] = k
	return nil
}

// EnsureDefault proposes ks (its replication and transactions) as DefaultKeyspace's
// definition, at ImplicitTimestamp, unless the catalog already holds a definition of it
// (implicit or created), which it never replaces: a restart with another
// --default-replication must not move data, nor another --default-transactions switch
// instances. The proposal is neither persisted nor sent to other nodes; Settle settles
// it, and a settled definition learned from another node replaces it.
func (c *Catalog) EnsureDefault(ks Keyspace) error {
	ks.Name, ks.Timestamp = DefaultKeyspace, ImplicitTimestamp
	ks, err := ks.Compile()
	if err != nil {
		return fmt.Errorf("define the default keyspace: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.keyspaces[DefaultKeyspace]; !ok {
		c.keyspaces[DefaultKeyspace] = ks
	}
	return nil
}

// Settle settles this node's own proposal for keyspace name, as ks says (the proposal,
// or the proposal with per-key transactions; see SettleOwn): it is stamped
// SettledTimestamp and persisted, and from then on travels. It returns the settled
// definition and whether it changed anything: false when name holds no proposal (it was
// settled, or created, meanwhile), which Settle never replaces.
func (c *Catalog) Settle(ks Keyspace) (Keyspace, bool, error) {
	ks.Timestamp = SettledTimestamp
	ks, err := ks.Compile()
	if err != nil {
		return Keyspace{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.keyspaces[ks.Name]; !ok || old.Timestamp != ImplicitTimestamp {
		return old, false, nil
	}
	if err := c.storeLocked(ks); err != nil {
		return Keyspace{}, false, err
	}
	return ks, true, nil
}

// Proposal returns this node's unsettled proposal for keyspace name, if it holds one.
func (c *Catalog) Proposal(name string) (Keyspace, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keyspaces[name]
	return k, ok && k.Timestamp == ImplicitTimestamp
}

// ErrNotSettled: the keyspace's definition is this node's own proposal, not yet settled
// (see SettledTimestamp), so it runs no lightweight transaction in it.
var ErrNotSettled = errors.New("its transactions wait until it is settled")

// TransactionsReady refuses the lightweight transactions of keyspace name while this
// node may still change the keyspace's definition under them: its own proposal, not
// settled yet (ErrNotSettled), or a settled definition that another node settled
// differently and whose definition wins (ImplicitConflict). Any other keyspace, and one
// the catalog lacks, is ready (Get refuses the latter).
func (c *Catalog) TransactionsReady(name string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keyspaces[name]
	switch {
	case !ok || k.Timestamp > SettledTimestamp:
		return nil
	case k.Timestamp == ImplicitTimestamp:
		return fmt.Errorf("this node has not learned keyspace %s's definition from the cluster yet (%w)", name, ErrNotSettled)
	}
	if other, ok := c.conflicts[name]; ok {
		return fmt.Errorf("this node settled keyspace %s with %s, and another node with %s, which wins: "+
			"this node keeps its own and runs no transaction in it; wipe this node and start it again with --seeds (and the cluster's --default-replication and --default-transactions) (%w)",
			name, DescribeImplicit(k), DescribeImplicit(other), ErrNotSettled)
	}
	return nil
}

// DescribeImplicit says what distinguishes one implicit definition from another, for
// messages.
func DescribeImplicit(k Keyspace) string {
	out := fmt.Sprintf("replication %s, partitioner %s, transactions %s", k.Replication, k.Partitioner, k.Transactions)
	if k.CollectionInstances {
		out += ", element records on their collection's instance"
	}
	return out
}

// Truncate records a truncation of keyspace name at truncatedAt (merged as Apply does)
// and returns the definition as it is now, or an error wrapping ErrNoKeyspace.
func (c *Catalog) Truncate(name string, truncatedAt hlc.Timestamp) (Keyspace, error) {
	k, err := c.Get(name)
	if err != nil {
		return Keyspace{}, err
	}
	if k.Timestamp == ImplicitTimestamp {
		// The truncation travels with the definition, which must not before it settles.
		return Keyspace{}, fmt.Errorf("this node has not learned keyspace %s's definition from the cluster yet, so it cannot truncate it (%w)", name, ErrNotSettled)
	}
	k.TruncatedAt = truncatedAt
	if _, err := c.Apply(k); err != nil {
		return Keyspace{}, err
	}
	return c.Get(name)
}

// Truncations returns the truncation of every keyspace that has one, by name: what
// storage.Engine.CollectGarbage removes.
func (c *Catalog) Truncations() map[string]hlc.Timestamp {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[string]hlc.Timestamp{}
	for name, k := range c.keyspaces {
		if k.TruncatedAt != 0 {
			out[name] = k.TruncatedAt
		}
	}
	return out
}

// newerDefinition reports whether a's definition replaces b's, truncations aside (they
// merge by max): the later timestamp wins, and of two with one timestamp every node
// keeps the same one, as replicas keep the same record.
func newerDefinition(a, b Keyspace) bool {
	a.TruncatedAt, b.TruncatedAt = 0, 0
	return lww.Newer(encode(a), encode(b))
}

// Drop records the drop of keyspace name at droppedAt (merged as Apply does) and returns
// the dropped definition, or an error wrapping ErrNoKeyspace.
func (c *Catalog) Drop(name string, droppedAt hlc.Timestamp) (Keyspace, error) {
	k, err := c.Get(name)
	if err != nil {
		return Keyspace{}, err
	}
	k.Timestamp, k.TruncatedAt, k.Dropped = droppedAt, droppedAt, true
	if _, err := c.Apply(k); err != nil {
		return Keyspace{}, err
	}
	return k, nil
}

// Get returns a compiled keyspace, or an error wrapping ErrNoKeyspace (for a dropped one
// too).
func (c *Catalog) Get(name string) (Keyspace, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keyspaces[name]
	if !ok || k.Dropped {
		return Keyspace{}, fmt.Errorf("%w %q", ErrNoKeyspace, name)
	}
	return k, nil
}

// List returns every keyspace sorted by name, this node's unsettled proposal of the
// default keyspace included (it serves reads and writes).
func (c *Catalog) List() []Keyspace {
	return slices.DeleteFunc(c.all(), func(k Keyspace) bool { return k.Dropped })
}

// Definitions returns every definition sorted by name, those of dropped keyspaces
// included: what nodes exchange, so that a node that missed a drop learns it. This
// node's unsettled proposal is not one: it must not reach a node that would settle on
// it, nor one of a build before settling, which would take it for settled.
func (c *Catalog) Definitions() []Keyspace {
	return slices.DeleteFunc(c.all(), func(k Keyspace) bool { return k.Timestamp == ImplicitTimestamp })
}

// all returns every definition sorted by name, this node's unsettled proposals and
// dropped keyspaces included.
func (c *Catalog) all() []Keyspace {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Keyspace, 0, len(c.keyspaces))
	for _, k := range c.keyspaces {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Digest summarises the catalog's Definitions, drops included, in 8 bytes so two nodes
// can tell cheaply whether theirs differ.
func (c *Catalog) Digest() uint64 {
	h := fnv.New64a()
	for _, k := range c.Definitions() {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00", k.Name, k.Replication, k.Partitioner, k.Erasure, k.Timestamp)
		if k.TruncatedAt != 0 {
			fmt.Fprintf(h, "%d\x00", k.TruncatedAt)
		}
		if k.Dropped {
			h.Write([]byte("dropped\x00"))
		}
		if hasSplitFields(k) {
			fmt.Fprintf(h, "%s\x00", splitFields(k))
		}
		if k.PartitionTransactions() {
			// Only then: a keyspace of per-key instances digests as builds before the
			// option did, so that those do not pull the catalog over and over.
			fmt.Fprintf(h, "t%s\x00", k.Transactions)
		}
		if k.CollectionInstances {
			fmt.Fprintf(h, "e%s\x00", collectionInstancesWord)
		}
	}
	return h.Sum64()
}

// The catalog stores a keyspace as key = name, value = "replication\x00partitioner",
// followed by "\x00M,K" for an erasure-coded keyspace (entries written before erasure
// coding existed have two fields and read as replicated), and by "\x00" then the
// truncation as 16 hex digits for a truncated one (the erasure field then present,
// empty for a replicated keyspace). The record's timestamp is the definition's; a later
// truncation of the same definition writes a value that extends the stored one or
// differs in its larger, fixed-width hex digits, so the engine's tie-break on equal
// timestamps (the larger value wins) keeps the later truncation. A dropped keyspace's
// entry has all four fields, then "\x00dropped". A keyspace with split keys, or moving
// to others, has all four fields, the fifth ("dropped" or empty), then
// "\x00s" and its splits in hex, comma-separated, and while it moves "\x00n" and the
// next splits likewise, then, while the move changes the replication (kura keyspace
// alter), "\x00r" and the next replication (a build before alter reads the field as
// malformed and refuses the entry rather than place keys without it): hex never holds
// the separator, and entries without splits keep the bytes they had before splits
// existed. A keyspace whose transactions run per
// partition has all five fields, its split fields if any, then "\x00t" and the word;
// one of per-key instances keeps the bytes it had before the option existed. One whose
// element records run on their collection's instance (CollectionInstances) then has
// "\x00e" and collectionInstancesWord: a build before the option reads the field as
// malformed and refuses the entry rather than run its elements on other instances.
func encode(k Keyspace) lww.Record {
	value := k.Replication + "\x00" + k.Partitioner
	extended := hasSplitFields(k) || k.PartitionTransactions()
	if k.Erasure.Enabled() || k.TruncatedAt != 0 || k.Dropped || extended {
		value += "\x00" + k.Erasure.String()
	}
	if k.TruncatedAt != 0 || k.Dropped || extended {
		value += fmt.Sprintf("\x00%016x", uint64(k.TruncatedAt))
	}
	switch {
	case extended && k.Dropped:
		value += "\x00" + droppedField
	case extended:
		value += "\x00"
	case k.Dropped:
		value += "\x00" + droppedField
	}
	if hasSplitFields(k) {
		value += "\x00" + splitFields(k)
	}
	if k.PartitionTransactions() {
		value += "\x00t" + k.Transactions
	}
	if k.CollectionInstances {
		value += "\x00e" + collectionInstancesWord
	}
	return lww.Record{Key: []byte(k.Name), Value: []byte(value), Timestamp: k.Timestamp}
}

// hasSplitFields reports whether k's catalog entry carries split fields.
func hasSplitFields(k Keyspace) bool { return len(k.Splits) > 0 || k.Moving }

// splitFields is the "s..." field, then "\x00n..." while the keyspace moves, and
// "\x00r" and the next replication while the move changes it.
func splitFields(k Keyspace) string {
	out := "s" + hexList(k.Splits)
	if k.Moving {
		out += "\x00n" + hexList(k.NextSplits)
	}
	if k.ChangesReplication() {
		out += "\x00r" + k.NextReplication
	}
	return out
}

func hexList(keys [][]byte) string {
	parts := make([]string, len(keys))
	for i, key := range keys {
		parts[i] = hex.EncodeToString(key)
	}
	return strings.Join(parts, ",")
}

// parseHexList reads what hexList wrote after the one-letter tag it expects.
func parseHexList(field string, tag byte) ([][]byte, error) {
	if len(field) == 0 || field[0] != tag {
		return nil, fmt.Errorf("want a field starting with %q, got %.20q", tag, field)
	}
	if len(field) == 1 {
		return nil, nil
	}
	parts := strings.Split(field[1:], ",")
	out := make([][]byte, len(parts))
	for i, p := range parts {
		key, err := hex.DecodeString(p)
		if err != nil {
			return nil, err
		}
		out[i] = key
	}
	return out, nil
}

// droppedField ends the catalog entry of a dropped keyspace.
const droppedField = "dropped"

// collectionInstancesWord follows "e" in the catalog entry of a keyspace whose element
// records run on their collection's instance (CollectionInstances): a word, so that
// another rule could be another word.
const collectionInstancesWord = "collection"

func decode(r lww.Record) (Keyspace, error) {
	fields := strings.Split(string(r.Value), "\x00")
	if len(fields) < 2 || len(fields) > 10 {
		return Keyspace{}, fmt.Errorf("keyspace %q: malformed catalog entry", r.Key)
	}
	// An empty partitioner field was "hash" when it was written (Compile then defaulted
	// to it): decoding it as today's default would move the keyspace's keys.
	k := Keyspace{Name: string(r.Key), Replication: fields[0], Partitioner: cmp.Or(fields[1], "hash"), Timestamp: r.Timestamp}
	if len(fields) >= 3 {
		var err error
		if k.Erasure, err = ParseErasure(fields[2]); err != nil {
			return Keyspace{}, err
		}
	}
	if len(fields) >= 4 {
		truncatedAt, err := strconv.ParseUint(fields[3], 16, 64)
		if err != nil || len(fields[3]) != 16 {
			return Keyspace{}, fmt.Errorf("keyspace %q: malformed truncation %q in the catalog", r.Key, fields[3])
		}
		k.TruncatedAt = hlc.Timestamp(truncatedAt)
	}
	if len(fields) >= 5 {
		switch fields[4] {
		case droppedField:
			k.Dropped = true
		case "":
			if len(fields) == 5 {
				return Keyspace{}, fmt.Errorf("keyspace %q: malformed catalog entry", r.Key)
			}
		default:
			return Keyspace{}, fmt.Errorf("keyspace %q: malformed catalog entry", r.Key)
		}
	}
	rest := fields[min(5, len(fields)):]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "s") {
		var err error
		if k.Splits, err = parseHexList(rest[0], 's'); err != nil {
			return Keyspace{}, fmt.Errorf("keyspace %q: malformed split keys in the catalog: %w", r.Key, err)
		}
		rest = rest[1:]
		if len(rest) > 0 && strings.HasPrefix(rest[0], "n") {
			if k.NextSplits, err = parseHexList(rest[0], 'n'); err != nil {
				return Keyspace{}, fmt.Errorf("keyspace %q: malformed next split keys in the catalog: %w", r.Key, err)
			}
			k.Moving, rest = true, rest[1:]
		}
		if k.Moving && len(rest) > 0 && strings.HasPrefix(rest[0], "r") {
			k.NextReplication, rest = rest[0][1:], rest[1:]
		}
	}
	if len(rest) > 0 && strings.HasPrefix(rest[0], "t") {
		k.Transactions, rest = rest[0][1:], rest[1:]
	}
	if len(rest) > 0 && strings.HasPrefix(rest[0], "e") {
		if rest[0][1:] != collectionInstancesWord {
			return Keyspace{}, fmt.Errorf("keyspace %q: malformed element instances %q in the catalog", r.Key, rest[0][1:])
		}
		k.CollectionInstances, rest = true, rest[1:]
	}
	if len(rest) > 0 {
		return Keyspace{}, fmt.Errorf("keyspace %q: malformed catalog entry", r.Key)
	}
	return k.Compile()
}
