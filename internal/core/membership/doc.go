// Package membership defines what kura's gossip cores share: the versioned
// per-node state, the Core interface every protocol implements, events,
// the phi-accrual failure detector and the compact binary encoding helpers.
// Two cores implement it: scuttlebutt (the baseline of paper 001) and ferry
// (kura's DC-aware protocol); simcluster runs either in the simulator and
// experiment measures them as `kura bench gossip` does.
//
// # The state model
//
// Each node owns an EndpointState: a generation (boot time; a restart brings
// a larger one and replaces everything known before), a heartbeat version
// and application states (addr, dc, status joining/normal/leaving/left/
// shutdown, tokens, load rows and bytes, power; shutdown marks a node
// stopped on purpose: down, not gone, until it restarts). Heartbeat and
// application states draw versions from one per-node counter, so "what is
// newer than version v" is a single comparison and a digest of a node is
// (generation, highest version). Only the owner creates versions; everyone else merges copies.
//
// # Cores
//
// A Core is a deterministic state machine in the manner of etcd raft: Tick
// (every TickInterval: once per one-second round, or, for Ferry, four times
// a round, so that its probes time out between rounds) and Step (one
// message) return a Ready with the
// messages to send and the events seen (joined, restarted, alive, suspect,
// dead, left, removed, state changed, synced). Shutdown announces a stop
// the node will come back from; EventSynced comes once, when the node has a
// member's view of the cluster. A core owns no goroutine, socket, timer or
// random source: time comes in as an argument, randomness from the
// *rand.Rand in its Config. Every message has a hand-written binary encoding
// (AppendTo / the protocol's Unmarshal) and WireSize computes its exact
// length without encoding, which the simulator counts.
//
// # Scuttlebutt, the baseline
//
// Cassandra 0.6 as paper 001 describes it: each round a node bumps its
// heartbeat and sends a SYN with a digest of every endpoint to a random live
// peer, sometimes to an unreachable one and to a seed; ACK and ACK2 carry
// the differences. Since heartbeats change every second, nearly every
// digest entry differs and every exchange carries O(n): O(n²) in total, and
// with two DCs about half of it crosses the WAN.
//
// # Ferry, the DC-aware protocol
//
// Ferry separates the three jobs Scuttlebutt does with one message — failure
// detection, dissemination of changes and repair — and keeps all of them
// O(1) per node per round, and cross-DC traffic independent of n.
//
// Failure detection starts inside each DC. The members of a DC form a ring
// ordered by a hash of their IDs; every round each node sends a tiny
// Heartbeat (generation, highest version) to its next Monitors (2) live
// successors. A monitor runs a phi-accrual detector (normal model) over the
// heartbeats it receives; they come like clockwork, so phi passes 8 about
// 0.4 s after a heartbeat is due. The core is ticked four times a round,
// and the monitor then probes in stages ProbeTimeout (0.5 s) apart: a direct
// probe; the direct probe again with IndirectProbes (3) other members asked
// to probe the node for it (SWIM's ping-req); then a suspicion, which it
// tells the node's other monitors (and the node). An answer at any stage
// ends it (a direct answer also says whether the prober is still a monitor,
// so stale monitor assignments during churn cause no suspicion). A
// suspicion that another monitor shares convicts at once, one that nobody
// confirms after SuspectTimeout (1 s); a monitor that still hears the node
// first-hand contradicts it, and it is dropped. The members asked to probe
// say at once that they got the request: a monitor that gets no such
// receipt may be the one cut off, and probes twice more before it suspects
// anyone (Lifeguard's local health), so a blip in its own links accuses
// nobody. So one lost message never makes a live node suspect, and a dead
// node is convicted about 2.5 s after its last heartbeat. Conviction writes
// a death notice into the node's entry: "dead at version v", pushed at once
// to every live member of the DC (see below). A live node that hears of its
// own death refutes it by bumping its heartbeat past v, which outranks the
// notice everywhere — liveness is ordered like SWIM incarnations. A
// detector's window learns intervals up to 2.5 s only: a longer silence
// restarts it, so that an outage does not teach it to tolerate seconds.
//
// A node alone in its DC has no monitors, and a DC that goes dark takes its
// monitors with it; the gateways catch both. Each gateway treats the answer
// to its per-round summary to another DC, which comes a round trip after
// each of its rounds, as that DC's heartbeat, under the monitors' phi model;
// a DC silent that long is probed, DCProbes (3) members spread over its
// ring, every RemoteProbeTimeout (1 s), and when no member answers
// ProbeAttempts (2) such rounds every live member is convicted at once:
// within about 4 s of the crash. Each DC judges the others itself. No
// message is added in steady state. A node does not believe another DC's
// verdict about a live member of its own DC (that member's monitors know
// better) but hands it to the member, which refutes it.
//
// Verdicts are announced, not gossiped: the node that convicts (a monitor,
// or a gateway judging another DC) pushes the death notices at once to
// every live member of its DC, one small message each (a notice carries no
// application states). The DC's gateways get it with everyone, echo it to
// the DC (a member that lost one notice has another at once, from another
// sender) and ferry it across at once; the node of another DC that first
// hears a verdict from across (ferried, or in a repair between gateways)
// announces it in its own DC the same way, and that DC's gateways echo it.
// A failure costs two or three small messages per node, once, and every
// live node holds the node dead within a LAN and a WAN hop of the
// conviction, whatever n. The notices are also pushed as rumours, which
// repair what they all missed.
//
// Steady state costs a constant. Heartbeats change nothing, so versions
// only move on real changes. Each round a node sends one Summary to a
// random live peer of its DC: the member count and the XOR of a hash of
// every entry (ID, generation, highest version, dead flag) of the whole
// cluster, kept incrementally per DC — a total of a few bytes whatever the
// number of DCs. Equal totals need no answer; a total that differs is
// answered with the per-DC sums (O(number of DCs)), which narrow down as
// below. Per node per round that is one ~15-byte summary and two ~8-byte
// heartbeats, plus the transport headers: about 1.5 kbit/s, so the total is
// O(n).
//
// Changes travel as rumours, then are repaired by anti-entropy. A node that
// learns a change pushes it for HotRounds (3) rounds inside the Summary
// (at most MaxHot entries, fanout 3 while it has any): an epidemic that
// reaches the DC in O(log n) rounds. Where summaries still differ, the
// exchange narrows down Merkle-style: the bucket hashes of the differing DC
// (32 per DC), then digests of the differing buckets only, then deltas (only
// the application states newer than the receiver's version) and requests.
// Only mismatches cost more than the summary.
//
// Gateways carry each DC's traffic across DC links. A DC's gateways are its
// Gateways (2) live members lowest on the ring, computed by every node from
// its own view, so all agree once views agree; when one dies or leaves, its
// death notice makes the next one take over, and a node that found a change
// (a seed admitting a joiner, a node's own state change or leave) hands it
// straight to its DC's gateways (a verdict goes to every member, gateways
// included). A gateway ferries every change of its own DC it learns, once,
// in a Push to one gateway of each other DC, which pushes it on inside its
// DC: as a rumour, or, a verdict, announced to every member at once. So a
// change crosses each DC link at most once per gateway (plus repairs), not
// once per node, and reaches every node in O(log n) rounds plus the WAN
// delay (a verdict, in the WAN delay and two LAN hops). Each round a
// gateway also sends the other DCs' gateways its Summary with Reply set: the
// repair path after loss or a partition, and the way it learns the remote
// DC is reachable. Unanswered summaries widen the set of remote members it
// tries, so a DC whose gateways all failed at once is still reached. The
// WAN thus carries Gateways × DCs × (DCs−1) summaries per round whatever
// the DC sizes: independent of n.
//
// Joining goes through a seed. A seed of the joiner's DC (or one that knows
// nobody there) admits it, pushes its state and sends it the full state
// once; a seed of another DC redirects it to the gateways of its own DC, so
// the full state does not cross a DC link. Seeds that start together keep
// asking each other until each knows the others, so the DCs meet. A burst
// of joins (a batch of nodes started together) is announced rather than
// left to the rumours, which carry MaxHot changes per summary, and to
// anti-entropy, whose exchanges compare whole buckets while views differ:
// at each tick the admitting node sends the members it admitted since the
// last (at most MaxBurst, 256) in one Push to every live member of its DC,
// and the node of another DC that first hears of them from across (a
// gateway the Push was ferried to) does the same in its DC. Its burst queue
// holds 4×MaxBurst members; a larger burst's rest spreads as before. A tick's
// Push, times the members it goes to, stays within MaxBurstBytes (16 MiB), so
// that a DC of thousands of members restarting at once does not flood its
// announcer's link; what the cap holds back goes at the next ticks.
//
// Departures: Leave sets status left, tells the monitors to stop and
// gossips a few rounds more; others never suspect a node that left.
// Shutdown sets status shutdown, pushes it at once to every live member of
// the node's DC (and across, when the node was a gateway; the other DCs
// announce it as a verdict) and goes quiet;
// peers hold it down, not left, until it restarts with a newer generation. Dead and
// departed members are forgotten after Config.RemoveAfter and their
// generation is quarantined as long again, so stale gossip cannot bring them
// back. A WAN partition looks, from each side, like the other DC going
// dark, and each side's gateways convict the other side's members; they
// keep sending summaries to a DC they hold dead, so after the heal the
// gateways meet again, the verdicts are refuted and the narrowing repair
// brings both sides' changes across.
//
// A joining node is synced (EventSynced) by the Welcome that admits it; a
// seed, which counts as joined from its first round so that it can admit
// others, once a summary shows its view equals a peer's. A seed that has not
// synced after a few rounds (it restarted, or joins a running cluster, and
// nobody comes to it) follows redirects like any joiner.
//
// A monitor also expects heartbeats from its own ring predecessors once
// their entries have been unchanged for 10 s (views agree by then), so a
// node that fails together with all its monitors is caught by the next
// node in line once those are declared dead.
package membership
