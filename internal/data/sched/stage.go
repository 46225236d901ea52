package sched

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ScanID names one scan across the nodes it reads (chosen by its coordinator).
type ScanID uint64

// Task is what the queue knows about one read.
type Task struct {
	Class Class
	Scan  ScanID // ScanPage only; 0 when none
	Nodes int    // ScanPage: how many nodes the scan still waits for (RaS)
	Limit int    // ScanPage: the scan's limit (RaS)
	// Since is, for a scan page, when its request's first page arrived (zero: this
	// page's arrival): Fair counts a request's wait from there, so that a long scan is
	// overdue as a whole, not page by page.
	Since time.Time
}

// DefaultWorkers is the read stage's default pool size: Cassandra's concurrent_reads.
const DefaultWorkers = 32

// ErrClosed is returned by Do on a closed Stage, and to the reads still queued when it
// closes.
var ErrClosed = errors.New("sched: read stage closed")

// Config configures a Stage.
type Config struct {
	Workers int // bounded pool size; 0 means DefaultWorkers (Cassandra's concurrent_reads: 32)
	Policy  Policy
	Device  Device
	// SharedDevice makes the workers share one Device, as the paper's read threads
	// shared a disk: a worker that ran its read waits its turn at the device in arrival
	// order, then holds it for the read's time. False (the default) gives each worker a
	// device of its own. It needs a Device.
	SharedDevice bool
	Fair         Fairness // tunes the Fair discipline; zero fields are the defaults
}

// Stage is a node's read stage: a bounded pool of workers fed by a Queue ordered by the
// node's read policy. Every read the node serves goes through Do.
//
// A worker is a slot, not a goroutine: a read runs on its caller's goroutine once it
// holds a slot, and hands the slot to the next queued read when done. At most Workers
// reads run (or hold their emulated device) at once, the rest wait in the queue in the
// policy's order, and the Stage starts no goroutine of its own, so it cannot leak one.
// Its methods are safe for concurrent use.
type Stage struct {
	workers int
	device  Device
	shared  *sharedDevice // nil: each worker holds a device of its own

	mu      sync.Mutex
	q       *Queue
	idle    int                 // free slots; while > 0 the queue is empty
	waiting map[*Item]chan bool // queued reads: true hands them a slot, false says closed
	closed  bool
	served  [NumClasses]uint64
	wait    [NumClasses]time.Duration
	read    [NumClasses]uint64 // bytes
	held    time.Duration      // device time of the reads that ran
}

// NewStage returns a read stage configured by cfg; it rejects negative workers, device
// times or fairness settings.
func NewStage(cfg Config) (*Stage, error) {
	switch {
	case cfg.Workers < 0:
		return nil, fmt.Errorf("sched: %d read workers: want 0 (default %d) or more", cfg.Workers, DefaultWorkers)
	case cfg.Device.Access < 0 || cfg.Device.PerKiB < 0 || cfg.Device.IOKiB < 0:
		return nil, fmt.Errorf("sched: device %v: negative time or IO size", cfg.Device)
	case cfg.SharedDevice && cfg.Device == Device{}:
		return nil, errors.New("sched: a shared device needs a device time")
	case cfg.Fair.ScanWait < 0 || cfg.Fair.RemoteSlack < 0 || cfg.Fair.ScanPass < 0:
		return nil, fmt.Errorf("sched: fairness %+v: negative", cfg.Fair)
	case cfg.Policy.Queue > Fair:
		return nil, fmt.Errorf("sched: unknown queue discipline %v", cfg.Policy.Queue)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	s := &Stage{
		workers: cfg.Workers,
		device:  cfg.Device,
		q:       NewQueue(cfg.Policy, cfg.Fair),
		idle:    cfg.Workers,
		waiting: map[*Item]chan bool{},
	}
	if cfg.SharedDevice {
		s.shared = &sharedDevice{}
	}
	return s, nil
}

// Do queues t, waits for a worker as the policy orders, runs fn on it, then holds the
// worker for the device time of the bytes fn reports (with a shared device, for its turn
// at the device too). A ctx done while queued removes t
// and returns ctx.Err() without running fn. It returns ErrClosed, without running fn,
// when the stage is or gets closed before t has a worker.
func (s *Stage) Do(ctx context.Context, t Task, fn func() (bytesRead int)) error {
	if err := s.acquire(ctx, t); err != nil {
		return err
	}
	defer s.release()
	n := fn()
	c, d := min(t.Class, ScanPage), s.device.Time(n)
	s.mu.Lock()
	s.read[c] += uint64(max(n, 0))
	s.held += d
	s.mu.Unlock()
	// The device is held even if ctx ends meanwhile: a real device would be busy too.
	switch {
	case d <= 0:
	case s.shared != nil:
		s.shared.hold(c, s.device.IOs(n))
	default:
		time.Sleep(d)
	}
	return nil
}

// acquire returns once the calling read holds a worker, or with why it will not.
func (s *Stage) acquire(ctx context.Context, t Task) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	c := min(t.Class, ScanPage)
	if s.idle > 0 {
		s.idle--
		s.served[c]++
		s.mu.Unlock()
		return nil
	}
	it := s.q.Push(t, time.Now())
	ready := make(chan bool, 1)
	s.waiting[it] = ready
	s.mu.Unlock()

	select {
	case ok := <-ready:
		if !ok {
			return ErrClosed
		}
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if s.q.Remove(it) {
		delete(s.waiting, it)
		s.mu.Unlock()
		return ctx.Err()
	}
	s.mu.Unlock()
	// It was handed a slot (or the stage closed) as ctx ended: pass the slot on.
	if <-ready {
		s.release()
	}
	return ctx.Err()
}

// release hands the caller's worker to the read the policy serves next, or frees it.
func (s *Stage) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.q.Pop(time.Now())
	if it == nil {
		s.idle++
		return
	}
	c := it.task.Class
	s.served[c]++
	s.wait[c] += time.Since(it.arrival)
	ready := s.waiting[it]
	delete(s.waiting, it)
	ready <- true
}

// SetPolicy switches the policy; it takes effect for the next pop, queued tasks
// re-ordered.
func (s *Stage) SetPolicy(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.q.SetPolicy(p)
}

// Policy is the stage's current policy.
func (s *Stage) Policy() Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.Policy()
}

// Progress is RaS's priority update: scan now waits for nodes nodes; its queued pages
// (and later ones) are ordered with that count. Ignored unless the policy has RaS.
func (s *Stage) Progress(scan ScanID, nodes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.q.Policy().RaS {
		s.q.Update(scan, nodes)
	}
}

// ClassStats is the read stage's account of one class of reads.
type ClassStats struct {
	Queued int           // waiting for a worker now
	Served uint64        // given a worker since the stage started
	Wait   time.Duration // total time the served ones waited in the queue
	// ReadBytes is what the served ones read, by their own count: with Served, the
	// work they cost a device (Device.Work), which a scan's parallel rounds can make
	// larger than its limit needs.
	ReadBytes uint64
	// DeviceWait is, with a shared device, the total time the ones that ran waited for
	// it after their read, holding their workers: the device's own queue, in arrival
	// order whatever the policy.
	DeviceWait time.Duration
}

// Stats is a snapshot of the read stage, for metrics.
type Stats struct {
	ByClass [NumClasses]ClassStats // indexed by Class
	Workers int                    // the pool size
	Busy    int                    // workers running a read or holding its device time
	// ScanPagesOverdue counts the scan pages served past their Fair deadline since the
	// stage started: served by deadline, not in RaS's order.
	ScanPagesOverdue uint64
	// SharedDevice says the workers share one device (Config.SharedDevice);
	// DeviceQueued is then how many reads wait for it now.
	SharedDevice bool
	DeviceQueued int
	// DeviceTime is the device time of the reads that ran: each holds its worker's
	// device, or the shared one, that long after its read.
	DeviceTime time.Duration
}

// Stats returns a snapshot of the stage's counters.
func (s *Stage) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Workers: s.workers, Busy: s.workers - s.idle, ScanPagesOverdue: s.q.OverduePops(), DeviceTime: s.held}
	var deviceWait [NumClasses]time.Duration
	if s.shared != nil {
		st.SharedDevice = true
		deviceWait, st.DeviceQueued = s.shared.stats()
	}
	for c := range st.ByClass {
		st.ByClass[c] = ClassStats{Queued: s.q.Queued(Class(c)), Served: s.served[c], Wait: s.wait[c], ReadBytes: s.read[c], DeviceWait: deviceWait[c]}
	}
	return st
}

// Close stops the stage: queued reads return ErrClosed, and so does Do from now on.
// Reads already running finish. Close may be called more than once.
func (s *Stage) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for it := s.q.Pop(time.Now()); it != nil; it = s.q.Pop(time.Now()) {
		s.waiting[it] <- false
		delete(s.waiting, it)
	}
}
