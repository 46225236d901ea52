// Package sim is a deterministic virtual-time simulator for protocol cores.
//
// A protocol core (membership gossip, Chord routing, ...) is a state machine
// that owns no goroutine, socket, timer or random source. The simulator drives
// many such cores in one goroutine: it keeps a virtual clock and an event queue
// (ordered by time, ties broken by insertion sequence), delivers messages over a
// simulated network and ticks every node at its own interval. Everything random
// (loss, jitter, tick phases, and the cores' own *rand.Rand sources from
// math/rand/v2, one per Simulator.NewRand call) derives from Config.Seed, so
// the same seed gives the same run, byte for byte, as long as the driver
// adds nodes and calls NewRand in the same order.
//
// # Using it from a core
//
// Wrap the core in a type that implements Node:
//
//	type Node interface {
//		Step(now time.Duration, env Envelope) []Envelope // a message arrived
//		Tick(now time.Duration) []Envelope               // the node's periodic timer fired
//	}
//
// Every message a node returns is an Envelope{From, To, Kind, Msg}; Msg only has
// to report its encoded size (Message.WireSize), and Kind labels it for the byte
// counters. Node identifiers are plain strings; every node belongs to one DC.
// Outside actions (a client request, "leave now") are injected with
// Simulator.Do, which runs a function against a node at the current virtual time
// and sends whatever it returns; Simulator.At schedules any callback.
//
// # The network
//
// A LinkModel gives, for each ordered pair of DCs, a LinkSpec: one-way latency,
// uniform jitter in [0, Jitter), loss probability and bandwidth. LinkSpec has the
// same fields as topology.LinkSpec, so a topology plugs in with a conversion:
//
//	links := sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
//		l, err := topo.Link(from, to)
//		return sim.LinkSpec(l), err
//	})
//
// Bandwidth serialises messages: between two different DCs, on the directed DC
// link (all senders of DC a share the a→b link, as they share a WAN circuit);
// inside a DC, on the sender's own NIC (a DC fabric is not one wire). A
// bandwidth of 0 means unlimited. Delivery time is
// max(now, link free) + wireBytes*8/bandwidth + latency + jitter; jitter may
// reorder messages, as independent connections would. Network.Partition(a, b)
// drops every message between DCs a and b in both directions until Heal.
//
// # Counting bytes as on the wire
//
// Every sent message is counted per (fromDC, toDC, kind): messages and wire
// bytes, where wire bytes = WireSize + HeaderOverheadBytes per TCP segment and a
// message of p payload bytes takes max(1, ceil(p/SegmentPayloadBytes))
// segments. The defaults are 52 header bytes (IPv4 20 + TCP 20 + timestamp
// option 12, what tcpdump counts above the link layer for a Linux TCP stream)
// and a 1448-byte payload per segment (1500-byte MTU less those headers).
// Pure TCP ACKs are not counted. Messages lost or blocked by a partition are
// still counted as sent and also as dropped. Counters are cumulative;
// Network.Counters takes a snapshot and Counters.Sub gives the window between
// two snapshots.
//
// # Crashes
//
// Crash stops a node: it no longer ticks and messages arriving for it are
// dropped. Restart installs a fresh Node under the same identifier (a process
// that lost its memory) and resumes ticking.
package sim
