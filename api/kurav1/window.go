package kurav1

// StreamWindowBytes and ConnWindowBytes are the HTTP/2 flow-control windows of the
// client API, set by both ends (the Go client and the node): how much of a call's
// answer, and of all a connection's, may be sent before the receiver has read it.
// Fixed, since gRPC's own estimate of them grows only past the fastest bandwidth it has
// measured: after a run of small point reads, which it measured as fast, the window
// stayed at 64 KiB, and 256 concurrent scans (answers of a few dozen KiB each) waited
// their turn for it while the nodes sat a quarter idle (docs/performance-log.md). The
// sizes are CockroachDB's: a call may have 2 MiB unread, a connection 32 MiB.
const (
	StreamWindowBytes = 2 << 20
	ConnWindowBytes   = 16 * StreamWindowBytes
)
