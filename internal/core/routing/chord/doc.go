// Package chord is the DHT routing core of kura: Chord, and ML-Chord (paper 000's
// multi-layered DHT), as a pure state machine with no I/O.
//
// # Identifiers
//
// Identifiers are 64 bits (m = 64): a node sits at the single vnode token the store's
// ring derives from its name (NodeID), a key at its hash-partitioner token (KeyID), so
// the DHT and the store agree on every owner. A key's owner is its successor, the first
// node at or after it on the circle.
//
// # Protocol
//
// Every node keeps, per ring, a predecessor, a successor list and a finger table, and
// runs Chord's join, stabilize / notify, fix_fingers and check_predecessor, a graceful
// leave, and failure handling: a peer that misses a request's deadline (a GetNeighbors, a
// Ping, or the HopAck of a forwarded lookup) is taken out of every table until it speaks
// again, and lookups forwarded to it are routed around it. Lookups are recursive: each hop
// forwards the request, counting hops and inter-DC hops; the owner answers the origin
// directly.
//
// Three rules beyond the paper's Chord let a cluster started all at once converge in a
// few rounds instead of one round per node: a node that hears of a predecessor it does
// not keep passes it on to its predecessor (handleNotify); stabilize walks to a nearer
// successor at once (handleNeighbors); and a node not yet on a ring holds the join
// requests it gets and answers them the moment it is on one (hold).
//
// Three protocols share this machinery (see route.go for the exact next-hop rules):
//
//   - chord: the global ring only; the paper's baseline.
//   - mlchord-paper: adds a local ring over the own DC's nodes, joined through a
//     bootstrap node of the own DC (alone if there is none), and routes by the paper's
//     Fig. 4 as printed: local fingers first, global ones when no local finger precedes
//     the key.
//   - mlchord: kura's ML-Chord. The Fig. 4 rule alone does not keep its promise of one
//     inter-DC hop: when the last own-DC node x before a key has no local finger in
//     (x, key), it jumps to a global finger in another DC, yet the owner may be x's own
//     local successor, behind a run of remote nodes; the request then comes back, a second
//     crossing (about a quarter of lookups at 2 × 500 nodes). kura's node therefore keeps
//     a gap list, a global successor list that runs on until it reaches the own DC again
//     (paged along the ring when a successor's own list is shorter). With it, x knows the
//     owner of every key in (x, next own-DC node], so it sends the request straight
//     there: 0 inter-DC hops when the owner is local, exactly 1 otherwise, for any number
//     and size of DCs. The same list routes any key that falls inside it straight to its
//     owner, which cuts total hops, and tells the local ring its successor, which heals a
//     local ring split by a join through a bootstrap of another DC.
//
// # Driving a Node
//
// Node.Step takes a message, Node.Tick the passage of time, Node.Lookup, Node.Join and
// Node.Leave the node's own actions; each returns an Output: messages to send and lookups
// that finished. Times are durations since any fixed origin, as the simulator keeps them.
// Messages have a compact binary encoding (Message.Marshal, Unmarshal) and report its
// length (Message.WireSize) so the simulator counts bytes without encoding. Layout builds
// nodes with fully stabilised tables directly, for experiments without churn and tests.
package chord
