package rebalance

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
)

// losingPeers loses the first lost requests for a step (a partition or a one-way cut:
// no answer ever comes) and answers the others with answer.
type losingPeers struct {
	unused
	lost   int
	answer []byte
	mu     sync.Mutex
	calls  int
}

func (p *losingPeers) Step(ctx context.Context, _ cluster.Node, _ []byte) ([]byte, error) {
	p.mu.Lock()
	p.calls++
	lose := p.calls <= p.lost
	p.mu.Unlock()
	if lose {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return p.answer, nil
}

// TestAskStepAsksAgainWhenNoAnswerComes: a request for a step whose answer never comes
// is asked again after stepAskRingDelays ring delays, as often as it takes, and not
// counted against stepAttempts (explorer seeds 26, 9015, 9021, 9118, 9194: a step's
// request or answer lost to a partition or a one-way cut left kura keyspace alter
// waiting until the operator's timeout); the request's context still ends it.
func TestAskStepAsksAgainWhenNoAnswerComes(t *testing.T) {
	answer, err := proto.Marshal(&kurav1.RebalanceStepResponse{Rows: 42})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		lost      int
		limit     time.Duration // the asker's context
		wantRows  int64
		wantCalls int
	}{
		{"answered at once", 0, time.Hour, 42, 1},
		{"one request lost", 1, time.Hour, 42, 2},
		{"more lost than stepAttempts", stepAttempts + 2, 10 * time.Hour, 42, stepAttempts + 3},
		{"lost until the asker gives up", 1000, 10 * time.Second, 0, 2}, // asked at 0s and 7s
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRebalancer(t, Config{})
				peers := &losingPeers{unused: unused{t}, lost: tc.lost, answer: answer}
				r.peers = peers
				ctx, cancel := context.WithTimeout(context.Background(), tc.limit)
				defer cancel()
				resp, err := r.askStep(ctx, cluster.Node{ID: "b", DC: "dc1", Status: cluster.StatusNormal}, []byte("step"))
				switch {
				case tc.wantRows == 0 && err == nil:
					t.Errorf("answered %v, want the asker's timeout", resp)
				case tc.wantRows != 0 && (err != nil || resp.GetRows() != tc.wantRows):
					t.Errorf("got %v, %v; want %d rows", resp, err, tc.wantRows)
				}
				if peers.calls != tc.wantCalls {
					t.Errorf("%d requests, want %d", peers.calls, tc.wantCalls)
				}
			})
		})
	}
}

// blockingStore holds every scan until release is closed, counting them.
type blockingStore struct {
	unused
	release chan struct{}
	mu      sync.Mutex
	scans   int
}

func (s *blockingStore) Each(string, bool, func(lww.Record) error) error {
	s.mu.Lock()
	s.scans++
	s.mu.Unlock()
	<-s.release
	return nil
}

// nowClock reads a wall clock that stands still.
type nowClock struct{ unused }

func (nowClock) Now() hlc.Timestamp { return 1 }

// oneRing places a, b and c of newRebalancer.
type oneRing struct{ unused }

func (oneRing) Ring() (*ring.Ring, error) {
	var members []ring.Member
	for i, id := range []string{"a", "b", "c"} {
		members = append(members, ring.Member{ID: id, DC: "dc1", Tokens: []ring.Token{ring.Token(i * 1000)}})
	}
	return ring.New(members)
}

// TestHandleStepSharesARun: a step asked again while it runs (its asker had no answer
// yet) waits for the run under way instead of starting a second one, and that run
// outlives the request that started it, which its asker gave up on.
func TestHandleStepSharesARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRebalancer(t, Config{})
		store := &blockingStore{unused: unused{t}, release: make(chan struct{})}
		r.store, r.placement, r.clock = store, oneRing{unused{t}}, nowClock{unused{t}}
		payload, err := proto.Marshal(&kurav1.RebalanceStepRequest{Keyspace: "ordered", Definition: 7, Step: stepSample})
		if err != nil {
			t.Fatal(err)
		}
		first, giveUp := context.WithCancel(context.Background())
		firstDone := make(chan error, 1)
		go func() {
			_, err := r.HandleStep(first, payload)
			firstDone <- err
		}()
		synctest.Wait()
		giveUp()
		if err := <-firstDone; err == nil {
			t.Error("the request given up on was answered")
		}
		secondDone := make(chan error, 1)
		go func() {
			_, err := r.HandleStep(context.Background(), payload)
			secondDone <- err
		}()
		synctest.Wait()
		close(store.release)
		if err := <-secondDone; err != nil {
			t.Errorf("the second request: %v", err)
		}
		if store.scans != 1 {
			t.Errorf("%d scans, want the one run both requests shared", store.scans)
		}
	})
}
