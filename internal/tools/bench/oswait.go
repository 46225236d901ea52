package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// taskStatsGlob matches the scheduler statistics of each of this process's threads on
// Linux: the time it ran, the time it waited on a run queue for a CPU while ready to
// run, and its time slices (the kernel's Documentation/scheduler/sched-stats.rst).
const taskStatsGlob = "/proc/self/task/*/schedstat"

// osRunWait returns how long this process's threads have waited, summed, for a CPU of
// the operating system while ready to run: the wait the Go runtime cannot see, when other
// processes (or more threads than cores) hold the machine's CPUs and this process's
// threads, with the goroutines they run, are not scheduled at all. It is 0 where the
// statistics cannot be read.
func osRunWait() time.Duration {
	files, _ := filepath.Glob(taskStatsGlob)
	var total time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited meanwhile
		}
		total += runQueueWait(b)
	}
	return total
}

// runQueueWait reads the run-queue wait, the second field (ns), of a schedstat line; 0
// when the line has no such field.
func runQueueWait(schedstat []byte) time.Duration {
	fields := bytes.Fields(schedstat)
	if len(fields) < 2 {
		return 0
	}
	ns, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ns)
}
