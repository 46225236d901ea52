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
//     arrival plus Fairness.RemoteSlack (250 ms by default). Local gets go first, as
//     under ReS, but not ahead of a remote get that has waited RemoteSlack. Gets cost
//     alike, so their order among themselves does not change how long they wait in all
//     (a queue's conservation law), only who waits: the slack is a bound, long enough
//     that under load Fair orders gets as ReS does. With 1 ms, gets went nearly in
//     arrival order, and in kura bench scheduling's drain (each client's second query
//     sent when its first is answered) that order alone made kura's gets 2 to 3 %
//     slower than A's.
//   - Scan pages go among themselves in the order above (RaS's, or push order), when
//     no get waits.
//   - A scan page has a deadline: the arrival of its request's first page at this node
//     (Task.Since; the page's own arrival when Since is zero) plus Fairness.ScanWait (5 s
//     by default) for each node its scan waits for (Task.Nodes, at least 1). A progress
//     update that lowers the count brings the deadline forward; nothing moves it back.
//     A page past its deadline is overdue; a long scan is overdue as a whole: once it
//     is, each later page is overdue as soon as it is queued. Overdue pages go before
//     the scan pages that are not overdue, earliest deadline first (then push order),
//     whatever RaS says: so no stream of smaller scans starves a large one. A scan
//     that waits for fewer nodes, which RaS serves first, is due sooner too, so among
//     requests of similar age the deadlines keep RaS's order.
//   - A scan page has been held back by gets once Fairness.ScanPass gets (64 by
//     default) have popped while it was queued. While an overdue page that gets have
//     held back waits, overdue pages alternate with gets: an overdue page, then a get
//     if one waits, then an overdue page, and so on. Overdue pages that gets have not
//     held back wait for the gets, as under ReS: their wait is other scans', which
//     taking turns from gets would not shorten.
//
// The bound. Once a scan page P is overdue it stays overdue (deadlines only come
// forward), and every pop is a get, P, or an overdue page with an earlier deadline
// (overdue pages pop earliest deadline first, and before the others). At most ScanPass
// gets pop while P waits before P has been held back; from then on, of any two
// consecutive pops at least one is an overdue page. So P pops within ScanPass + 2(k+1)
// pops of becoming overdue, however many gets and scans arrive, where k is the number
// of overdue pages with earlier deadlines that pop ahead of it. A deadline is at least
// ScanWait after its request's arrival, so only requests that arrived ScanWait or more
// before P's deadline can be due earlier, whatever their counts and updates: none that
// arrives later can. A request queues its pages one after another, so each of those has
// at most one page queued at a time; but it may queue its next page while P waits, so
// k is at most the pages those requests still have to read at this node, not only
// those queued when P became overdue (k = 0 when none has a page left to read here). In
// time: with W workers and reads that hold a worker at most R each (read plus device
// time), every worker is busy while P is queued and each one that finishes pops the
// next read, so at least jW pops happen within j·R of P becoming overdue; P therefore
// starts within R·⌈(ScanPass+2(k+1))/W⌉ of becoming overdue. The first page of a
// request whose scan waits for n nodes, queued on its arrival, starts within
// n·ScanWait + R·⌈(ScanPass+2(k+1))/W⌉ of the request's arrival at this node (n being
// the count it arrived with, or a lower one an update brought); a later page queued
// once the request is past its deadline is overdue at once and starts within
// R·⌈(ScanPass+2(k+1))/W⌉ of being queued, so an overdue request moves on by a page at
// least that often rather than never. The bound is per node and per page, not on a
// scan's total latency across its nodes; it assumes Pop's clock does not go back (the
// Stage passes time.Now()) and that the policy stays Fair (ReS would starve the scan
// again). Under ReS and A nothing bounds the wait: a steady stream of gets starves the
// scans, and under RaS a stream of smaller scans starves a large one.
//
// What it costs and gives. Until some scan page is past its deadline, Fair orders
// exactly as ReS does for gets and as A does among scans (with RaS), so gets keep ReS's
// benefit and scans RaS's; after that, gets keep it until they have held a scan back,
// and the overdue pages go by deadline, which departs from RaS's order only between
// requests whose arrivals are ScanWait or more apart. A smaller ScanWait or ScanPass
// bounds the scans' tail sooner and takes more of the workers from gets, and of RaS's
// order from scans, under overload.
//
// Why this design. The first Fair served at most 16 gets in a row while a scan page
// waited: gets came out only ~11 % faster than FIFO at 9:1 with kura bench
// scheduling, against ~30 % with ReS, since a scan page costs about 5 gets of device
// time. Its successor kept A's order until a scan had waited ScanWait (2 s), then
// served overdue pages oldest request first, alternating with gets. In the bench's 5:5
// mix, though, nearly every scan waits longer than 2 s, behind other scans rather than
// gets (gets are 4 % of the device time there): most pages were overdue, lost RaS's
// order and took every other turn from the gets, and kura came out behind A on both
// (scans 8 % slower than FIFO where A's were 12 % faster, gets 77 % faster against
// 82 %). What ScanWait measures is a scan held back for long, by anything; what takes
// turns from gets is only worth it when gets are what held it back, which ScanPass
// measures. The next, with one ScanWait (5 s) for every scan, still came out behind A
// at 5:5 (scans 14 to 36 % slower in three runs): a scan page waits 3 to 5 s at its
// node on average there, so many pages passed 5 s and went oldest request first,
// ahead of the pages RaS would have served, those of scans nearly done. A deadline of
// ScanWait per node waited for keeps RaS's order among them, since a scan waiting for
// fewer nodes is due sooner, and still bounds every wait. The default ScanWait, 5 s, is
// half the default replica timeout (10 s): the page of a scan that waits for that node
// alone is overdue well before its coordinator would give up on it. A scan that waits
// for n nodes is due n·ScanWait after its arrival, past the replica timeout when n > 1;
// but as its other nodes answer, progress updates bring the deadlines of its remaining
// pages forward, down to ScanWait for the last.
//
// # The stage
//
// Stage.Do queues a read, waits for a worker in the policy's order, runs the read, then
// holds the worker for the Device's emulated service time of the bytes it read (a
// production feature the benches switch on, like the transport's WAN emulation: on one
// machine the rows sit in the page cache). With Config.SharedDevice the workers share
// one device instead, as threads share a disk: after its read a worker waits its turn
// at the device in arrival order, whatever the policy, so the policy orders only the
// reads beyond the W that hold a worker (R above then includes that turn: at most W-1
// other reads' device times, or with Device.IOKiB at most W-1 other IOs before each of
// its own). A worker is a slot rather than a goroutine:
// the read runs on its caller's goroutine, and the stage starts none. SetPolicy
// re-orders the queued reads at run time; Stats reports per class the reads queued now,
// served and their total wait.
//
// The Queue is pure and deterministic (no goroutines, times passed in), so each policy's
// order is tested on scripted queues; the Stage only locks it and hands out slots.
package sched
