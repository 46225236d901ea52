// Package sched is a node's read stage (paper 004): a bounded pool of workers fed by a
// queue with a pluggable policy. Every read a node serves, for itself or for another
// coordinator (point reads, LDR chunk reads, scan pages), goes through its Stage;
// writes do not.
//
// # Why
//
// With a FIFO read stage, as in Cassandra's SEDA READ stage, a get that arrives behind a
// few scan pages waits for all of them although it needs a fraction of their work. And
// a scan that spans several nodes finishes when its slowest node answers. The paper
// fixes the first by priority (ReS) and the second by asking the nodes at once (P, the
// coordinator's part of a Policy) and by serving first the scans closest to done (RaS).
//
// # Classes and disciplines
//
// Reads come in three classes: LocalGet (a point read this node coordinates), RemoteGet
// (one served for another coordinator) and ScanPage (one page of a scan: PageRows rows
// or PageBytes bytes, so that a long scan yields its worker between pages). Within a
// class of gets the order is always arrival. The Discipline orders the classes:
//
//   - FIFO, the paper's O: arrival order.
//   - ReS: strict priority, LocalGet > RemoteGet > ScanPage. Gets never wait behind a
//     queued scan page; a scan page waits while any get is queued, so a steady stream of
//     gets starves scans.
//   - Fair, kura's own: ReS with a bound on how long gets hold scans back, below.
//
// RaS (Policy.RaS) orders scan pages among themselves under any discipline: fewer nodes
// the scan still waits for (Task.Nodes) first, then smaller limit, then arrival (under
// Fair, the bounded form below). Under FIFO it picks which scan page takes each turn
// FIFO gives to a scan page, so gets keep their FIFO places. Progress updates
// (Stage.Progress, Queue.Update) lower a scan's count as its other nodes answer and
// re-order its queued pages, and its pages queued later.
//
// # Fair: gets first, scans never held back for long
//
// Fair is ReS with a bound on how long gets can hold scan pages back. It serves gets
// before scan pages, but never more than Fairness.GetRun gets (16 by default) in a row
// while a scan page waits: after that run, the first scan page goes, and the count
// starts again. Gets served while no scan page waits do not count.
//
// Within each kind the order is by deadline, so that nothing waits unboundedly behind
// its own kind either. A local get's deadline is its arrival and a remote get's its
// arrival plus Fairness.RemoteSlack (1 ms by default): local gets go first, as under
// ReS, but not ahead of a remote get that has waited 1 ms. A scan page's deadline is its
// arrival, plus under RaS an offset that orders scan pages the RaS way: NodeSlack (50 ms
// by default) per node its scan waits for beyond the first (counting up to 16 nodes) and
// up to NodeSlack/2 for its limit (up to 10,000, the paper's largest). A Progress update
// moves the offset of the scan's pages, raising a scan whose other nodes answered.
//
// The bound. While scan pages wait, at most GetRun gets pop between two scan pages. A
// scan page waits for the scan pages with an earlier deadline, which were all pushed
// before its own deadline (arrival plus less than 16 × NodeSlack under RaS; arrival
// without RaS: the pages queued before it). So a page pushed while n such pages are
// ahead of it pops within (n+1)·(GetRun+1) pops, however many gets keep arriving; with
// W workers and reads taking at most R each (read plus device time), within
// R·⌈(n+1)·(GetRun+1)/W⌉, since every worker that finishes pops the next read. Under ReS
// nothing bounds it: a steady stream of gets starves the scans. Likewise a get pops
// before every get pushed after its deadline.
//
// What it costs and gives. A get waits behind a scan page only when GetRun gets have
// just gone ahead of waiting scan pages, that is when gets themselves queue up: one
// scan page per GetRun+1 pops at most, so gets keep nearly all of ReS's benefit.
// Scan pages take their turns no later than under ReS, and get a bounded share when
// gets saturate the workers; among themselves they keep RaS's order within NodeSlack,
// while a scan waiting for many nodes is not starved by a stream of smaller ones. A
// larger GetRun makes Fair closer to ReS for gets and the scan bound longer.
//
// Why a count and not a deadline across classes: the first design gave scan pages a
// deadline too (arrival plus a 50 ms slack) and served the earliest deadline across all
// reads. But under the bench's load the queue is mostly scan pages, which wait long
// behind one another, not behind gets; they are past any such slack, so every new get
// would queue behind them as under FIFO, losing ReS's benefit. The starvation to bound
// is gets holding scans back, and that is what GetRun counts.
//
// # The stage
//
// Stage.Do queues a read, waits for a worker in the policy's order, runs the read, then
// holds the worker for the Device's emulated service time of the bytes it read (a
// production feature the benches switch on, like the transport's WAN emulation: on one
// machine the rows sit in the page cache). A worker is a slot rather than a goroutine:
// the read runs on its caller's goroutine, and the stage starts none. SetPolicy
// re-orders the queued reads at run time; Stats reports per class the reads queued now,
// served and their total wait.
//
// The Queue is pure and deterministic (no goroutines, times passed in), so each policy's
// order is tested on scripted queues; the Stage only locks it and hands out slots.
package sched
