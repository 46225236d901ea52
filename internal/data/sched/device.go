package sched

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Device emulates a storage device's service time per read, held by the worker after the
// real Pebble read: Access per read plus PerKiB per KiB read. The zero Device adds nothing.
// IOKiB matters only for a device the workers share (Config.SharedDevice): a read holds
// it for one IO of at most IOKiB at a time, then queues again for the next, as a
// thread reading sequentially has one IO outstanding at a time; 0 is one IO per read.
//
// It exists because on one machine the rows of a bench sit in the page cache, so a read
// costs microseconds and a read stage never queues; the paper's nodes read from disk.
// Like the transport's WAN emulation it is a production feature the benches switch on
// (--emulate-disk), not a test hook: the worker stays busy as if the device were.
type Device struct {
	Access time.Duration // per read: a seek or a flash read
	PerKiB time.Duration // per KiB the read returned: the transfer
	IOKiB  int           // the largest transfer of one IO; 0: a read is one IO
}

// ParseDevice reads "ACCESS+PERKIB", e.g. "2ms+20us", or "ACCESS" alone, optionally
// followed by "/IOKiB", e.g. "2ms+20us/64KiB"; "" or "0" is none. ACCESS and PERKIB are
// Go durations, not negative; IO is a positive whole number of KiB.
func ParseDevice(s string) (Device, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return Device{}, nil
	}
	var io int
	if times, ioText, ok := strings.Cut(s, "/"); ok {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(ioText), "KiB"))
		if err != nil || n < 1 || !strings.HasSuffix(strings.TrimSpace(ioText), "KiB") {
			return Device{}, fmt.Errorf("sched: device %q: want an IO size in KiB after /, e.g. 2ms+20us/64KiB", s)
		}
		s, io = strings.TrimSpace(times), n
	}
	parts := strings.Split(s, "+")
	if len(parts) > 2 {
		return Device{}, fmt.Errorf("sched: device %q: want ACCESS+PERKIB, e.g. 2ms+20us", s)
	}
	var ds [2]time.Duration
	for i, part := range parts {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return Device{}, fmt.Errorf("sched: device %q: want ACCESS+PERKIB, e.g. 2ms+20us: %v", s, err)
		}
		if d < 0 {
			return Device{}, fmt.Errorf("sched: device %q: negative duration %v", s, d)
		}
		ds[i] = d
	}
	d := Device{Access: ds[0], PerKiB: ds[1], IOKiB: io}
	if io > 0 && d.Access == 0 && d.PerKiB == 0 {
		return Device{}, fmt.Errorf("sched: device %q: no device time", s)
	}
	return d, nil
}

// String is the form ParseDevice reads: "0" for none, else "ACCESS+PERKIB", with
// "/IOKiB" when IOKiB is set.
func (d Device) String() string {
	if d == (Device{}) {
		return "0"
	}
	s := d.Access.String() + "+" + d.PerKiB.String()
	if d.IOKiB > 0 {
		s += "/" + strconv.Itoa(d.IOKiB) + "KiB"
	}
	return s
}

// Time is how long a read of bytesRead bytes holds the device: Access plus PerKiB per
// KiB, pro rata. A negative byte count counts as none.
func (d Device) Time(bytesRead int) time.Duration {
	if bytesRead < 0 {
		bytesRead = 0
	}
	return d.Access + time.Duration(int64(d.PerKiB)*int64(bytesRead)/1024)
}

// IOs returns the device time of each IO of a read of bytesRead bytes, which add up to
// Time(bytesRead): the first carries Access and at most IOKiB of transfer, each next
// one at most IOKiB more. A read is one IO when IOKiB is 0. Access is paid once: the
// reads of other workers that come between two IOs cost the device no extra seek here,
// so that the device's work does not depend on how reads interleave.
func (d Device) IOs(bytesRead int) []time.Duration {
	bytesRead = max(bytesRead, 0)
	if d.IOKiB <= 0 || bytesRead <= d.IOKiB<<10 {
		return []time.Duration{d.Time(bytesRead)}
	}
	transfer := func(bytes int) time.Duration { return time.Duration(int64(d.PerKiB) * int64(bytes) / 1024) }
	var out []time.Duration
	for done := 0; done < bytesRead; {
		next := min(done+d.IOKiB<<10, bytesRead)
		out = append(out, transfer(next)-transfer(done))
		done = next
	}
	out[0] += d.Access
	return out
}

// Work is the device time of reads reads that read bytesRead bytes in all: Time summed
// over them, pro rata, since Time is linear in the bytes.
func (d Device) Work(reads, bytesRead uint64) time.Duration {
	return time.Duration(reads)*d.Access + time.Duration(int64(d.PerKiB)*int64(bytesRead)/1024)
}

// sharedDevice is one emulated device that all of a node's workers share, as the
// paper's 32 read threads shared one disk: a worker that ran its read waits its turn in
// arrival order, the disk's own queue, whatever the read policy, then holds the device
// for the read's time. Its methods are safe for concurrent use.
//
// It keeps the device's timeline rather than handing the device from one goroutine to
// the next: an IO starts when the one before it ends, as a disk starts the next
// request it holds, not when the Go scheduler wakes its worker, which on a loaded
// machine would leave the device idle between IOs and take its throughput.
type sharedDevice struct {
	mu     sync.Mutex
	freeAt time.Time // when the last IO given the device ends
	queued int       // IOs given the device that have not started
	wait   [NumClasses]time.Duration
}

// hold runs a read's IOs on the device, each for its time: an IO starts once every IO
// that reached the device before it has ended, and the read's next IO queues again
// after it. It does not watch a context: the read was issued, and a real device serves
// it whether or not its caller still wants the answer.
func (sd *sharedDevice) hold(c Class, ios []time.Duration) {
	for _, d := range ios {
		sd.io(c, d)
	}
}

// io queues an IO of d at the device and returns when the device has served it.
func (sd *sharedDevice) io(c Class, d time.Duration) {
	sd.mu.Lock()
	now := time.Now()
	start := now
	if sd.freeAt.After(now) {
		start = sd.freeAt
	}
	sd.freeAt = start.Add(d)
	sd.wait[c] += start.Sub(now)
	waits := start.After(now)
	if waits {
		sd.queued++
	}
	sd.mu.Unlock()

	if waits {
		time.Sleep(time.Until(start))
		sd.mu.Lock()
		sd.queued--
		sd.mu.Unlock()
	}
	time.Sleep(time.Until(start.Add(d)))
}

// stats returns the time the reads of each class waited for the device and how many
// reads wait for it now.
func (sd *sharedDevice) stats() (wait [NumClasses]time.Duration, queued int) {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	return sd.wait, sd.queued
}
