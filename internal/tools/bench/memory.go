package bench

import (
	"bufio"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memoryWatch measures the peak memory of one run of a bench: the process's peak
// resident set, which is what the machine has to hold, and the Go heap's peak, which is
// what the run's data needs. On Linux the kernel keeps the resident peak (VmHWM), reset
// at the start of the run; elsewhere the peak of the memory the Go runtime mapped is
// sampled instead.
type memoryWatch struct {
	kernelPeak bool
	stop       chan struct{}
	wg         sync.WaitGroup
	mu         sync.Mutex
	peakHeap   uint64
	peakMapped uint64
}

// memorySampleEvery is how often the heap is sampled: often enough to catch a peak that
// lasts a garbage-collection cycle.
const memorySampleEvery = 20 * time.Millisecond

// watchMemory starts measuring.
func watchMemory() *memoryWatch {
	w := &memoryWatch{stop: make(chan struct{})}
	// What earlier runs left is returned to the system first, so that it does not count;
	// then writing 5 to clear_refs resets the peak resident set to what remains.
	debug.FreeOSMemory()
	w.kernelPeak = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	w.sample()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		ticker := time.NewTicker(memorySampleEvery)
		defer ticker.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-ticker.C:
				w.sample()
			}
		}
	}()
	return w
}

// sample reads the heap's objects and the runtime's mapped memory.
func (w *memoryWatch) sample() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.peakHeap = max(w.peakHeap, s[0].Value.Uint64())
	w.peakMapped = max(w.peakMapped, s[1].Value.Uint64())
}

// Stop ends the measurement and returns the peaks in bytes.
func (w *memoryWatch) Stop() (peakRSS, peakHeap uint64) {
	close(w.stop)
	w.wg.Wait()
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	peakRSS = w.peakMapped
	if w.kernelPeak {
		if hwm, ok := residentPeak(); ok {
			peakRSS = hwm
		}
	}
	return peakRSS, w.peakHeap
}

// residentPeak reads VmHWM, the process's peak resident set, from /proc/self/status.
func residentPeak() (uint64, bool) {
	return residentPeakOf("self")
}

// residentPeakOf reads VmHWM, the peak resident set of process pid ("self" or a number),
// from /proc/PID/status.
func residentPeakOf(pid string) (uint64, bool) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		value, found := strings.CutPrefix(lines.Text(), "VmHWM:")
		if !found {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		return kb * 1024, err == nil
	}
	return 0, false
}
