package node

import "time"

// walkShare is the share of the time a node's periodic walks of its storage may take:
// the counts of the records it stores (publishStored) and of the rows of its ordered
// keyspaces (publishRows) each read an index entry per live record, so their cost grows
// with the records stored while their intervals do not. A node holding little counts at
// every interval; one whose count takes longer than walkShare of its interval counts
// less often, and its gossiped counts get older in proportion, rather than the walks
// taking its CPU and device from the requests.
const walkShare = 0.01

// walkBudget spaces the runs of one periodic walk so that they take at most walkShare
// of the time. Its zero value lets the first walk run. It is used by the one goroutine
// that runs the walk.
type walkBudget struct {
	next time.Time // the walk may not start before then
}

// due reports whether the walk may run at now.
func (b *walkBudget) due(now time.Time) bool {
	return !now.Before(b.next)
}

// spent records a run of the walk that started at start and took took: the next may
// start once took / walkShare has passed since start.
func (b *walkBudget) spent(start time.Time, took time.Duration) {
	b.next = start.Add(time.Duration(float64(took) / walkShare))
}
