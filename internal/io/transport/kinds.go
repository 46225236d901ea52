package transport

// The kinds of kura's internode wire, each with the package that handles it. This is the
// only place a kind is numbered: the packages that send and handle a kind use its
// constant, so a reader finds every number here and two packages cannot claim the same
// one (wireKindNames, indexed by these constants, does not compile if a number is given
// twice).
//
// A new kind takes the next free number, a constant here and its name in wireKindNames.
// Numbers are never reused for another meaning: a retired kind keeps its constant and
// name, marked retired. Number 0 is never a kind, so a zeroed header cannot pass for a
// message; numbers from testKindsMin up are left to tests (RegisterKind).
const (
	// kindHello (transport) is a dialer's first frame, and an acceptor's refusal.
	kindHello Kind = 1
	// KindMutate (internal/data/replica/remote) applies a write to a replica.
	KindMutate Kind = 2
	// KindRead (internal/data/replica/remote) reads one key of a replica.
	KindRead Kind = 3
	// KindScan (internal/data/replica/remote) reads a page of a replica's rows in a key range.
	KindScan Kind = 4
	// KindChunkRead (internal/data/replica/remote) asks a chunk owner for one chunk. Its request is a
	// ReadRequest (the keyspace and the chunk key); its answer is the stored chunk itself,
	// so a remote chunk costs its shard, its 20-byte header and about 60 bytes of framing
	// and request: the generic read's answer would echo the key and wrap the record.
	KindChunkRead Kind = 5
	// KindGossip (internal/service/membership/driver) carries every gossip core message; its first byte
	// names the message type.
	KindGossip Kind = 6
	// KindGossipWhois (internal/service/membership/driver) asks a seed known only by address for its ID.
	KindGossipWhois Kind = 7
	// KindSchema (node) announces a new keyspace to every node.
	KindSchema Kind = 8
	// KindSchemaPull (node) asks a node for its whole keyspace catalog.
	KindSchemaPull Kind = 9
	// KindChord (node) carries the DHT cores' messages between nodes.
	KindChord Kind = 10
	// KindLatencyProbe (bench) is the bare transports' ping of the latency model.
	KindLatencyProbe Kind = 11
	// KindStreamRange (internal/data/replica/remote) is a scan page of a range being streamed
	// (ScanRequest.Stream).
	KindStreamRange Kind = 12
	// KindTreeDigest (internal/data/replica/remote) asks a replica for the Merkle tree of one token
	// range (anti-entropy repair); its request is a TreeDigestRequest, its answer a
	// TreeDigestResponse.
	KindTreeDigest Kind = 13
	// KindStreamGains (node) asks a node to pull the ranges it gains from a leaving or
	// removed node.
	KindStreamGains Kind = 14
	// KindRingPull (node) asks a node for its ring, every entry with its liveness: how a
	// new node learns the whole ring, dead nodes included, before it trusts its view.
	KindRingPull Kind = 15
	// KindClockPing (node) asks a peer for nothing but the wall-clock stamp on its answer:
	// how a node measures its clock against peers it has no other call to (the clock
	// guard).
	KindClockPing Kind = 16
	// KindPaxosPrepare (internal/data/replica/remote) is a lightweight transaction's prepare (promise,
	// state, data).
	KindPaxosPrepare Kind = 17
	// KindPaxosPropose (internal/data/replica/remote) is a lightweight transaction's proposal.
	KindPaxosPropose Kind = 18
	// KindPaxosCommit (internal/data/replica/remote) is a lightweight transaction's commit.
	KindPaxosCommit Kind = 19
	// KindScanKeys (internal/data/replica/remote) asks a replica for a page of its live keys in hash
	// order (SCAN's substrate); its request is a ScanKeysRequest, its answer a
	// ScanKeysResponse.
	KindScanKeys Kind = 20
	// KindOffload (internal/data/replica/remote) carries writes for a sleeping replica to one of its
	// offload holders (paper 003).
	KindOffload Kind = 21
	// KindHintsFlush (node; package powercycle serves it) asks a node to deliver now every
	// hint it holds for the caller, the writes offloaded to it included: the caller is
	// waking.
	KindHintsFlush Kind = 22
	// KindPower (node; package powercycle serves it) asks a node for a power transition:
	// "sleep" (kura power sleep, forwarded to the node itself) or "release" (a waking node
	// asks its stand-in for its addresses).
	KindPower Kind = 23
	// KindScanProgress (internal/data/replica/remote) tells a replica how many nodes a scan still waits
	// for (paper 004's RaS priority update); its request is a ScanProgressRequest, its
	// answer empty.
	KindScanProgress Kind = 24
	// KindRebalance (node) asks a node for one step of a keyspace's rebalance: sample its
	// keys, copy its records to their next replicas, or drop what it no longer holds.
	KindRebalance Kind = 25
	// KindReadMany (internal/data/replica/remote) is a batch of point reads of one keyspace
	// (Remote.GetMany, behind GetAll).
	KindReadMany Kind = 26
)

// testKindsMin is the first number left to tests' own kinds: RegisterKind takes only
// numbers from here up, so no test kind can shadow a kind of the wire.
const testKindsMin = 200

// wireKindNames names the wire's kinds in logs, metrics and KindByName. Indexing it by
// the constants makes a number given twice a compile error ("duplicate index").
var wireKindNames = [...]string{
	kindHello:        "hello",
	KindMutate:       "mutate",
	KindRead:         "read",
	KindScan:         "scan",
	KindChunkRead:    "chunk_read",
	KindGossip:       "gossip",
	KindGossipWhois:  "gossip_whois",
	KindSchema:       "schema",
	KindSchemaPull:   "schema_pull",
	KindChord:        "chord",
	KindLatencyProbe: "latency_probe",
	KindStreamRange:  "stream_range",
	KindTreeDigest:   "tree_digest",
	KindStreamGains:  "stream_gains",
	KindRingPull:     "ring_pull",
	KindClockPing:    "clock_ping",
	KindPaxosPrepare: "paxos_prepare",
	KindPaxosPropose: "paxos_propose",
	KindPaxosCommit:  "paxos_commit",
	KindScanKeys:     "scan_keys",
	KindOffload:      "offload",
	KindHintsFlush:   "hints_flush",
	KindPower:        "power",
	KindScanProgress: "scan_progress",
	KindRebalance:    "rebalance",
	KindReadMany:     "read_many",
}
