package coord

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
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

// close waits for the background tasks and the tasks requests wait for, then refuses
// background tasks and counts no more; the tasks requests wait for still run.
func TestTasksCloseWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTasks(nil, 4)
		releaseRepair, releaseRequest := make(chan struct{}), make(chan struct{})
		ts.background(func() { <-releaseRepair })
		counted := ts.start()
		ts.run(func() {
			<-releaseRequest
			ts.end(counted)
		})
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
		if ts.start() {
			t.Fatal("a task was counted after close")
		}
		ran := make(chan struct{})
		ts.run(func() { close(ran) })
		<-ran
	})
}

// An ANY write met by a hint for a down replica sends the write to the live replicas in
// the background, which Close waits for; once the coordinator is closed, the live
// replicas are hinted instead. Either way every replica gets the write or a hint.
func TestAnyWriteAroundClose(t *testing.T) {
	for _, tt := range []struct {
		name        string
		closeFirst  bool
		wantApplied []string
		wantHinted  []string
	}{
		{"open", false, []string{"n1", "n2"}, []string{"n3"}},
		{"closed", true, nil, []string{"n1", "n2", "n3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
			parts.takesHints = true
			c.view.(*cluster.Directory).SetState("n3", cluster.StateDown)
			if tt.closeFirst {
				c.Close()
			}
			if _, err := c.Put(context.Background(), "ks", []byte("k"), []byte("v"), 0, consistency.Any); err != nil {
				t.Fatalf("ANY put: %v", err)
			}
			c.Close() // waits for the background writes
			var applied []string
			for _, id := range []string{"n1", "n2", "n3"} {
				if len(parts.replicas[id].writes()) > 0 {
					applied = append(applied, id)
				}
			}
			parts.hintsMu.Lock()
			hinted := slices.Sorted(slices.Values(parts.hinted))
			parts.hintsMu.Unlock()
			if !slices.Equal(applied, tt.wantApplied) || !slices.Equal(hinted, tt.wantHinted) {
				t.Errorf("applied on %v, hinted for %v; want applied on %v, hinted for %v", applied, hinted, tt.wantApplied, tt.wantHinted)
			}
		})
	}
}
