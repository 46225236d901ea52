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
//   - Fair, kura's own: earliest deadline first, described below.
//
// RaS (Policy.RaS) orders scan pages among themselves under any discipline: fewer nodes
// the scan still waits for (Task.Nodes) first, then smaller limit, then arrival. Under
// FIFO it picks which scan page takes each turn FIFO gives to a scan page. Progress
// updates (Stage.Progress, Queue.Update) lower a scan's count as its other nodes answer
// and re-order its queued pages, and its pages queued later.
//
// # Fair: earliest deadline first
//
// Each read gets a deadline, its arrival plus its class's slack (Slack): a local get
// none, a remote get Slack.Remote (1 ms by default) and a scan page Slack.Scan (50 ms by
// default). Fair serves the earliest deadline, ties by arrival. So while no scan page
// has waited longer than its slack, gets go first exactly as under ReS (and local before
// remote ones that waited less than 1 ms); a scan page that has waited its slack goes
// ahead of every get that arrived after its deadline.
//
// Under RaS a scan page's slack grows with the scan: each node it waits for beyond the
// first adds Slack.Scan/4 (counting up to 16 nodes) and its limit adds up to another
// Slack.Scan/4 (in proportion, up to a limit of 10,000, the paper's largest). So among
// scan pages that arrive close together, the ones RaS would pick go first, and one that
// waits for 12 nodes yields to gets for 3.75 × Slack.Scan instead of 1×. A Progress
// update shortens the slack of the scan's queued pages: as in RaS, a scan its other
// nodes have finished is raised.
//
// The bound. A read pushed at time a with slack s is popped before every read pushed
// after a+s: any such read has a deadline no earlier than its arrival, later than a+s
// (arrivals are kept non-decreasing, and ties go to the earlier push). The slack is at
// most Slack.Remote for gets and 5 × Slack.Scan for scan pages (Slack.Scan without
// RaS). In time: a scan page waits at most its slack plus the time the workers take to
// serve the reads with an earlier deadline, all of which arrived by a+s; with W workers,
// reads taking at most R each (read plus device time) and gets arriving at no more than
// λ per second, that is at most s + R·⌈(Q+λs+1)/W⌉ for Q reads queued when it arrived.
// However long the stream of gets, later gets cannot push it back; under ReS nothing
// bounds its wait.
//
// What it costs and gives: gets are delayed only by scan pages already past their
// deadline, which under ReS would have waited longer still; scans wait at most their
// slack behind newer gets, so their wait is FIFO's plus at most about a slack's worth of
// gets, and less when gets do not saturate the workers. A larger Slack.Scan makes gets
// more like ReS and the scan bound longer; a smaller one the other way.
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
