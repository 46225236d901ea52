package coord

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// Background tasks beyond the bound wait for a running one to end.
func TestTasksBackgroundBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTasks(nil, 2)
		release := make(chan struct{})
		var started atomic.Int32
		for range 2 {
			if !ts.background(func() { started.Add(1); <-release }) {
				t.Fatal("background refused a task before close")
			}
		}
		third := make(chan bool)
		go func() { third <- ts.background(func() { started.Add(1) }) }()
		synctest.Wait()
		if got := started.Load(); got != 2 {
			t.Fatalf("%d tasks started with a bound of 2, want 2", got)
		}
		release <- struct{}{} // one of the two ends: the third gets its slot
		if !<-third {
			t.Fatal("the third task was refused")
		}
		synctest.Wait()
		if got := started.Load(); got != 3 {
			t.Fatalf("%d tasks started once a slot freed, want 3", got)
		}
		close(release)
		ts.close()
	})
}

// close waits for the background tasks and the requests running, then refuses
// background tasks; requests still run.
func TestTasksCloseWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTasks(nil, 4)
		releaseRepair, releaseRequest := make(chan struct{}), make(chan struct{})
		ts.background(func() { <-releaseRepair })
		ts.request(func() { <-releaseRequest })
		closed := make(chan struct{})
		go func() { ts.close(); close(closed) }()
		for _, release := range []chan struct{}{releaseRepair, releaseRequest} {
			synctest.Wait()
			select {
			case <-closed:
				t.Fatal("close returned with a task running")
			default:
			}
			close(release)
		}
		<-closed
		if ts.background(func() { t.Error("a background task ran after close") }) {
			t.Fatal("background took a task after close")
		}
		ran := make(chan struct{})
		ts.request(func() { close(ran) })
		<-ran
	})
}
