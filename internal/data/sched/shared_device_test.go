package sched

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestSharedDevice runs three reads, arriving one after another, on stages with a device
// per worker or one shared device, in virtual time (synctest), and checks when each
// ends and where it waited. The device takes 10 ms per read plus 1 ms per KiB.
// A shared device serves one read at a time in the order reads reached it, whatever
// the policy; a device per worker serves as many at once as there are workers. With
// IOs of 2 KiB, a read of 4 KiB goes back to the end of the device's queue after its
// first 2 KiB.
func TestSharedDevice(t *testing.T) {
	type read struct {
		class Class
		kib   int
	}
	ms := time.Millisecond
	scan4, remote0, scan2, get2 := read{ScanPage, 4}, read{RemoteGet, 0}, read{ScanPage, 2}, read{LocalGet, 2}
	for _, tc := range []struct {
		name    string
		policy  string
		workers int
		shared  bool
		ioKiB   int
		reads   []read
		// wantEnd is when each read's Do returns; wantWait and wantDeviceWait the
		// stage's and the device's waits by class.
		wantEnd        []time.Duration
		wantWait       [NumClasses]time.Duration
		wantDeviceWait [NumClasses]time.Duration
	}{
		{name: "a device per worker", policy: "fifo", workers: 3, reads: []read{scan4, remote0, get2},
			wantEnd: []time.Duration{14 * ms, 10 * ms, 12 * ms}},
		{name: "shared: one at a time in arrival order", policy: "fifo", workers: 3, shared: true, reads: []read{scan4, remote0, get2},
			wantEnd:        []time.Duration{14 * ms, 24 * ms, 36 * ms},
			wantDeviceWait: [NumClasses]time.Duration{LocalGet: 24 * ms, RemoteGet: 14 * ms}},
		{name: "shared: ReS does not reorder the device's queue", policy: "res", workers: 3, shared: true, reads: []read{scan4, scan2, get2},
			wantEnd:        []time.Duration{14 * ms, 26 * ms, 38 * ms},
			wantDeviceWait: [NumClasses]time.Duration{LocalGet: 26 * ms, ScanPage: 14 * ms}},
		{name: "one worker: ReS reorders the device's reads", policy: "res", workers: 1, reads: []read{scan4, scan2, get2},
			wantEnd:  []time.Duration{14 * ms, 38 * ms, 26 * ms},
			wantWait: [NumClasses]time.Duration{LocalGet: 14 * ms, ScanPage: 26 * ms}},
		{name: "shared, IOs of 2 KiB: the 4 KiB read queues again after its first IO", policy: "fifo", workers: 3, shared: true, ioKiB: 2, reads: []read{scan4, remote0, get2},
			wantEnd:        []time.Duration{36 * ms, 22 * ms, 34 * ms},
			wantDeviceWait: [NumClasses]time.Duration{LocalGet: 22 * ms, RemoteGet: 12 * ms, ScanPage: 22 * ms}},
		{name: "a device per worker, IOs of 2 KiB: one worker's IOs follow each other", policy: "fifo", workers: 3, ioKiB: 2, reads: []read{scan4, remote0, get2},
			wantEnd: []time.Duration{14 * ms, 10 * ms, 12 * ms}},
		{name: "shared, fewer workers than reads: the third waits for a worker, then the device", policy: "fifo", workers: 2, shared: true, reads: []read{scan4, remote0, scan2},
			wantEnd:        []time.Duration{14 * ms, 24 * ms, 36 * ms},
			wantWait:       [NumClasses]time.Duration{ScanPage: 14 * ms},
			wantDeviceWait: [NumClasses]time.Duration{RemoteGet: 14 * ms, ScanPage: 10 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := ParsePolicy(tc.policy)
				if err != nil {
					t.Fatal(err)
				}
				s, err := NewStage(Config{Workers: tc.workers, Policy: p, Device: Device{Access: 10 * ms, PerKiB: ms, IOKiB: tc.ioKiB}, SharedDevice: tc.shared})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				start := time.Now()
				ended := make([]time.Duration, len(tc.reads))
				var wg sync.WaitGroup
				for i, r := range tc.reads {
					wg.Go(func() {
						if err := s.Do(context.Background(), Task{Class: r.class, Scan: ScanID(i + 1), Nodes: 1}, func() int { return r.kib << 10 }); err != nil {
							t.Errorf("read %d: %v", i, err)
						}
						ended[i] = time.Since(start)
					})
					synctest.Wait() // read i is at the device, or queued, before read i+1 arrives
				}
				if st := s.Stats(); tc.shared && st.DeviceQueued != min(len(tc.reads), tc.workers)-1 {
					t.Errorf("%d reads wait for the device, want %d", st.DeviceQueued, min(len(tc.reads), tc.workers)-1)
				}
				wg.Wait()
				for i, want := range tc.wantEnd {
					if ended[i] != want {
						t.Errorf("read %d ended at %v, want %v", i, ended[i], want)
					}
				}
				st := s.Stats()
				var deviceTime time.Duration
				for _, r := range tc.reads {
					deviceTime += 10*ms + time.Duration(r.kib)*ms
				}
				if st.DeviceTime != deviceTime || st.SharedDevice != tc.shared || st.DeviceQueued != 0 || st.Busy != 0 {
					t.Errorf("stats %+v, want device time %v, shared %v, nothing queued or busy", st, deviceTime, tc.shared)
				}
				for c, cs := range st.ByClass {
					if cs.Wait != tc.wantWait[c] || cs.DeviceWait != tc.wantDeviceWait[c] {
						t.Errorf("%v waited %v in the stage and %v at the device, want %v and %v", Class(c), cs.Wait, cs.DeviceWait, tc.wantWait[c], tc.wantDeviceWait[c])
					}
				}
			})
		})
	}
}

// TestSharedDeviceKeepsBusy runs many reads of random sizes from many goroutines at
// once on a stage whose workers share a device, in virtual time: the device serves one
// read at a time and never idles while one waits, so the last read ends exactly when
// the device times of all of them, back to back, are over.
func TestSharedDeviceKeepsBusy(t *testing.T) {
	for _, tc := range []struct {
		policy string
		ioKiB  int
	}{{"fifo", 0}, {"A", 0}, {"kura", 0}, {"fifo", 4}, {"A", 4}} {
		t.Run(fmt.Sprintf("%s io %d KiB", tc.policy, tc.ioKiB), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := ParsePolicy(tc.policy)
				if err != nil {
					t.Fatal(err)
				}
				dev := Device{Access: 3 * time.Millisecond, PerKiB: 100 * time.Microsecond, IOKiB: tc.ioKiB}
				s, err := NewStage(Config{Workers: 8, Policy: p, Device: dev, SharedDevice: true})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				start := time.Now()
				var mu sync.Mutex
				var total time.Duration
				var wg sync.WaitGroup
				for g := range 20 {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(g), 1))
						for range 10 {
							task := Task{Class: Class(rng.IntN(NumClasses)), Scan: ScanID(1 + rng.IntN(4)), Nodes: 1 + rng.IntN(3), Limit: rng.IntN(100)}
							n := rng.IntN(64 << 10)
							if err := s.Do(context.Background(), task, func() int { return n }); err != nil {
								t.Errorf("Do: %v", err)
							}
							mu.Lock()
							total += dev.Time(n)
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				if got := time.Since(start); got != total {
					t.Fatalf("200 reads took %v on the shared device, want %v, their device times back to back", got, total)
				}
				if st := s.Stats(); st.DeviceTime != total || st.Busy != 0 || st.DeviceQueued != 0 {
					t.Fatalf("stats %+v, want device time %v, nothing busy or queued", st, total)
				}
			})
		})
	}
}
