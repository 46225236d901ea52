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
//   - Fair, kura's own: ReS, with a bound on how long gets hold a scan back, below.
//
// RaS (Policy.RaS) orders scan pages among themselves under any discipline: fewer nodes
// the scan still waits for (Task.Nodes) first, then smaller limit, then push order;
// without RaS, scan pages go in push order. Under FIFO it picks which scan page takes
// each turn FIFO gives to a scan page, so gets keep their FIFO places. Progress updates
// (Stage.Progress, Queue.Update) lower a scan's count as its other nodes answer and
// re-order its queued pages, and its pages queued later.
//
// # Fair: gets first, scans not held back for long
//
// Fair is ReS for gets and A's order for scans until a scan has waited too long:
//
//   - Gets go first, by deadline: a local get's is its arrival, a remote get's its
//     arrival plus Fairness.RemoteSlack (1 ms by default). Local gets go first, as
//     under ReS, but not ahead of a remote get that has waited RemoteSlack.
//   - Scan pages go among themselves in the order above (RaS's, or push order), when
//     no get waits.
//   - A scan page whose request has waited Fairness.ScanWait (2 s by default) at this
//     node is overdue. The wait counts from Task.Since, the arrival of the request's
//     first page at this node (the page's own arrival when Since is zero), so a long
//     scan is overdue as a whole: once it is, each later page is overdue as soon as it
//     is queued. Overdue pages go oldest request first (by Since, then push order),
//     whatever RaS says, and alternate with gets: an overdue page, then a get if one
//     waits, then an overdue page, and so on. Without gets waiting, overdue pages go
//     before the scan pages that are not overdue.
//
// The bound. While an overdue page waits, of any two consecutive pops at least one is
// an overdue page, and overdue pages pop oldest request first. So a scan page P pops
// within 2(k+1) pops of becoming overdue, however many gets arrive, where k is the
// number of overdue pages of older requests that pop ahead of it. Only requests whose
// first page arrived earlier are older (Since being a request's arrival, none that
// arrives later is), and a request queues its pages one after another, so each older
// request has at most one page queued at a time; but it may queue its next page while P
// waits, so k is at most the pages the older requests still have to read at this node,
// not only those queued when P became overdue (k = 0 when no older request has a page
// left to read here). In time: with W workers and reads that hold a worker at most R
// each (read plus device time), every worker is busy while P is queued and each one
// that finishes pops the next read, so at least jW pops happen within j·R of P becoming
// overdue; P therefore starts within R·⌈2(k+1)/W⌉ of becoming overdue. The first page
// of a request, queued on its arrival, starts within ScanWait + R·⌈2(k+1)/W⌉ of the
// request's arrival at this node; a later page queued once the request has waited
// ScanWait is overdue at once and starts within R·⌈2(k+1)/W⌉ of being queued, so an
// overdue request moves on by a page at least every R + R·⌈2(k+1)/W⌉ rather than never.
// The bound is per node and per page, not on a scan's total latency across its nodes;
// it assumes Pop's clock does not go back (the Stage passes time.Now()) and that the
// policy stays Fair (ReS would starve the scan again). Under ReS and A nothing bounds
// the wait: a steady stream of gets starves the scans.
//
// What it costs and gives. Until some scan has waited ScanWait, Fair orders exactly as
// ReS does for gets and as A does among scans (with RaS), so gets keep ReS's benefit
// and scans RaS's. A get waits behind a queued scan page only while some page is
// overdue, which under load happens once gets alone have kept the workers busy for
// ScanWait; even then at most every other pop is an overdue page. A smaller ScanWait
// bounds the scans' tail sooner and takes more of the workers from gets under overload.
//
// Why this design. The previous Fair, measured with kura bench scheduling at 1000
// clients, lost both benefits it had to keep. It served at most GetRun (16) gets in a
// row while a scan page waited, then a scan page: gets came out only ~11 % faster than
// FIFO at 9:1, against ~30 % with ReS, because a scan page of ~50 rows costs about 5
// gets of device time, so one page per 16 gets takes about a quarter of the workers'
// time from gets whenever gets queue, which is exactly when their latency matters. It
// also gave scan pages deadlines among themselves (an arrival time plus a slack per
// node the scan waits for, to approximate RaS's order while bounding it), which lost
// RaS's benefit for the scans' mean. Keeping A's order and adding a time bound gives up
// nothing until a scan has waited ScanWait, and bounds the tail after that: the
// starvation to bound is a scan held back for long, and ScanWait is what measures it.
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
