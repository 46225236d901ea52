package storage

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// TestApplyOpsGathersInArrivalOrder gives applyOps one batch as a stripe's leader does:
// the same user key in two keyspaces, one of them written several times. Each op must be
// compared with the ops before it, so last-writer-wins, the live-key index and the row
// cache end as if the records had come one by one, through the row cache or past it.
func TestApplyOpsGathersInArrivalOrder(t *testing.T) {
	for _, throughCache := range []bool{true, false} {
		t.Run(fmt.Sprint("throughCache=", throughCache), func(t *testing.T) {
			testApplyOpsGathersInArrivalOrder(t, throughCache)
		})
	}
}

func testApplyOpsGathersInArrivalOrder(t *testing.T, throughCache bool) {
	e := openMem(t, Options{})
	mustApply(t, e, "ks", put("k", "stored", 5))
	ops := []*applyOp{
		{ks: "ks", r: put("k", "older than stored", 3)},
		{ks: "ks", r: put("k", "newer", 7)},
		{ks: "other", r: put("k", "first", 2)},
		{ks: "ks", r: put("k", "older than the batch's", 6)},
		{ks: "other", r: del("k", 4)},
		{ks: "ks", r: put("k", "newer", 7)}, // equal to the batch's: not Newer
		{ks: "ks", r: del("k", 8)},
		{ks: "ks", r: put("k", "last", 9)},
	}
	wantApplied := []bool{false, true, true, false, true, false, true, true}
	var keys [][]byte
	for _, op := range ops {
		op.key = encodeKey(op.ks, op.r.Key)
		op.throughCache = throughCache
		keys = append(keys, op.key)
	}
	if err := e.enter(); err != nil {
		t.Fatal(err)
	}
	unlock := e.lockKeys(keys)
	err := e.applyOps(ops)
	unlock()
	e.closeMu.RUnlock()
	if err != nil {
		t.Fatalf("applyOps: %v", err)
	}
	for i, op := range ops {
		if op.applied != wantApplied[i] {
			t.Errorf("op %d (%s in %q): applied = %t, want %t", i, describe(op.r), op.ks, op.applied, wantApplied[i])
		}
	}
	for ks, want := range map[string]string{"ks": "k@9=last", "other": "k@4:deleted"} {
		// The row cache, which applyOps filled or emptied, before a Get fills it.
		key := encodeKey(ks, []byte("k"))
		if _, hit, _ := e.rows.get(e.stripeOf(key), key); hit != throughCache {
			t.Errorf("row cache holds %q's key: %t, want %t", ks, hit, throughCache)
		}
		if got, _ := mustGet(t, e, ks, "k"); describe(got) != want {
			t.Errorf("Get(%q) = %s, want %s", ks, describe(got), want)
		}
		got, _, err := readRecord(e.db, []byte("k"), key)
		if err != nil || describe(got) != want {
			t.Errorf("database holds %s (%v) in %q, want %s", describe(got), err, ks, want)
		}
	}
	for ks, want := range map[string]int64{"ks": 1, "other": 0} {
		if got, err := e.CountLive(ks, 100, 0); err != nil || got != want {
			t.Errorf("CountLive(%q) = %d, %v; want %d", ks, got, err, want)
		}
	}
}

// applyCall is one Apply of a concurrent test, with the points of a logical clock at
// which it started and returned.
type applyCall struct {
	r          lww.Record
	applied    bool
	start, end int64
}

// checkLinearizable checks calls, concurrent Applies of one key that all returned nil,
// against last-writer-wins in real-time order: an applied record must be Newer than
// every record whose Apply returned before it started (that record, or a newer one, was
// stored by then), and a record not applied must have lost to one at least as new whose
// Apply started before it returned (nothing else could have been stored).
func checkLinearizable(t *testing.T, calls []applyCall) {
	t.Helper()
	for i, c := range calls {
		beaten := false
		for j, o := range calls {
			if i == j {
				continue
			}
			if c.applied && o.end < c.start && !lww.Newer(c.r, o.r) {
				t.Errorf("%s applied, though %s was stored or beaten before it started", describe(c.r), describe(o.r))
			}
			if o.start < c.end && !lww.Newer(c.r, o.r) {
				beaten = true
			}
		}
		if !c.applied && !beaten {
			t.Errorf("%s not applied, though no record at least as new was written before it returned", describe(c.r))
		}
	}
}

// writePath is one way a record reaches a writeQueue: alone, in its stripe's queue, or
// in a batch with a record of a key of its own, in the queue of batches.
type writePath struct {
	name  string
	apply func(e *Engine, ks string, r lww.Record) (applied bool, err error)
}

var writePaths = []writePath{
	{"alone", (*Engine).Apply},
	{"in a batch", applyInBatch},
	// The two queues' leaders race for the key's stripe lock.
	{"alone and in batches", func(e *Engine, ks string, r lww.Record) (bool, error) {
		if r.Timestamp%2 == 0 {
			return e.Apply(ks, r)
		}
		return applyInBatch(e, ks, r)
	}},
}

func applyInBatch(e *Engine, ks string, r lww.Record) (bool, error) {
	n, err := e.ApplyBatch(ks, []lww.Record{r, ownRecord(r)})
	if err == nil && n == 0 {
		return false, fmt.Errorf("the record of a key of its own was not applied")
	}
	return n == 2, err
}

// ownRecord is the record a batch of writePaths carries beside r, of a key no other
// batch writes.
func ownRecord(r lww.Record) lww.Record {
	return put(fmt.Sprint("own-", ownKeys.Add(1)), "own", r.Timestamp)
}

var ownKeys atomic.Int64

// applyConcurrently has one goroutine per record apply it to keyspace ks of e by path,
// all released at once, and returns the calls in the order of records. A failed Apply
// fails the test.
func applyConcurrently(t *testing.T, e *Engine, ks string, path writePath, records []lww.Record) []applyCall {
	t.Helper()
	var clock atomic.Int64
	calls := make([]applyCall, len(records))
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range records {
		wg.Go(func() {
			<-release
			calls[i].r = r
			calls[i].start = clock.Add(1)
			applied, err := path.apply(e, ks, r)
			calls[i].end = clock.Add(1)
			calls[i].applied = applied
			if err != nil {
				t.Errorf("Apply(%s): %v", describe(r), err)
			}
		})
	}
	close(release)
	wg.Wait()
	return calls
}

// TestConcurrentAppliesToOneKey races many writers on one key, as a hot key under a
// zipfian load sees, so that their writes are gathered into shared batches. The newest
// record must end stored, and every writer's applied must be the truth of its write;
// alone, and in batches of several records, which share batches of their own.
func TestConcurrentAppliesToOneKey(t *testing.T) {
	for _, path := range writePaths {
		t.Run(path.name, func(t *testing.T) { testConcurrentAppliesToOneKey(t, path) })
	}
}

func testConcurrentAppliesToOneKey(t *testing.T, path writePath) {
	const writers = 64
	e := openMem(t, Options{})
	for round := range 20 {
		// Distinct timestamps, shuffled so that writes arrive out of order. Each round's
		// span of writers+1 timestamps (the puts', then the delete's) lies above the
		// round before, so that the record a round starts from, which checkLinearizable
		// does not see, is older than all of the round's.
		base := round * (writers + 1)
		records := make([]lww.Record, writers)
		for i, ts := range rand.Perm(writers) {
			records[i] = put("hot", fmt.Sprint("v", ts), hlc.Timestamp(base+ts+1))
		}
		if round%2 == 1 {
			records[0] = del("hot", hlc.Timestamp(base+writers+1))
		}
		calls := applyConcurrently(t, e, "ks", path, records)
		checkLinearizable(t, calls)
		newest := records[0]
		for _, c := range calls {
			if lww.Newer(c.r, newest) {
				newest = c.r
			}
		}
		for _, c := range calls {
			if c.r.Timestamp == newest.Timestamp && !c.applied {
				t.Errorf("round %d: the newest record %s was not applied", round, describe(c.r))
			}
		}
		if got, _ := mustGet(t, e, "ks", "hot"); describe(got) != describe(newest) {
			t.Fatalf("round %d: stored %s, want the newest %s", round, describe(got), describe(newest))
		}
	}

	// Identical records: exactly one writer may claim the write.
	same := make([]lww.Record, writers)
	for i := range same {
		same[i] = put("same", "v", 1)
	}
	calls := applyConcurrently(t, e, "ks", path, same)
	checkLinearizable(t, calls)
	applied := 0
	for _, c := range calls {
		if c.applied {
			applied++
		}
	}
	if applied != 1 {
		t.Errorf("%d concurrent Applies of one record reported %d applied, want exactly 1", writers, applied)
	}
}

// TestConcurrentWritesToOneKeySurviveACrash crashes, on Pebble's strict in-memory
// filesystem, a machine whose writers race on one key: at the crash point every sync
// from then on is lost. Every write acknowledged before the crash must survive reopening,
// and the stored record must be at least as new as each of them; alone, and in batches
// of two records, whose other record must survive too.
func TestConcurrentWritesToOneKeySurviveACrash(t *testing.T) {
	const writers, perWriter = 16, 40
	for _, batched := range []bool{false, true} {
		for _, crashAfter := range []int{1, writers * perWriter / 3, writers * perWriter * 2 / 3} {
			t.Run(fmt.Sprint("batched=", batched, " after ", crashAfter, " acks"), func(t *testing.T) {
				fs := vfs.NewCrashableMem()
				e, err := Open(Options{Dir: "db", FS: fs})
				if err != nil {
					t.Fatal(err)
				}
				// acked holds the records acknowledged before the crash; the disk's crash
				// clone is taken under mu, so each of them was synced before it.
				var (
					mu       sync.Mutex
					acked    []lww.Record
					ackedOwn []lww.Record // the batches' other records
					crashed  *vfs.MemFS
				)
				release := make(chan struct{})
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						<-release
						for i := range perWriter {
							// Interleaved timestamps: writers overtake each other.
							r := put("hot", fmt.Sprint("w", w, "-", i), hlc.Timestamp(i*writers+w+1))
							var own lww.Record
							var err error
							if batched {
								own = ownRecord(r)
								_, err = e.ApplyBatch("ks", []lww.Record{r, own})
							} else {
								_, err = e.Apply("ks", r)
							}
							if err != nil {
								t.Errorf("apply %s: %v", describe(r), err)
								return
							}
							mu.Lock()
							if crashed == nil {
								acked = append(acked, r)
								if batched {
									ackedOwn = append(ackedOwn, own)
								}
								if len(acked) == crashAfter {
									crashed = fs.CrashClone(vfs.CrashCloneCfg{})
								}
							}
							mu.Unlock()
						}
					})
				}
				close(release)
				wg.Wait()
				e = reopenOn(t, e, crashed)
				defer e.Close()
				got, found := mustGet(t, e, "ks", "hot")
				if !found {
					t.Fatalf("after the crash the key is gone; %d writes were acknowledged", len(acked))
				}
				for _, r := range acked {
					if lww.Newer(r, got) {
						t.Errorf("after the crash the key holds %s, older than the acknowledged %s", describe(got), describe(r))
					}
				}
				// What is stored was written by someone: its value names its timestamp.
				var w, i int
				if _, err := fmt.Sscanf(string(got.Value), "w%d-%d", &w, &i); err != nil || got.Timestamp != hlc.Timestamp(i*writers+w+1) {
					t.Errorf("after the crash the key holds %s, which no writer wrote", describe(got))
				}
				for _, own := range ackedOwn {
					if got, found := mustGet(t, e, "ks", string(own.Key)); !found || describe(got) != describe(own) {
						t.Errorf("after the crash key %q holds %s (found %t), want the acknowledged %s", own.Key, describe(got), found, describe(own))
					}
				}
			})
		}
	}
}
