//go:build unix

package resp

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process and its waited-for children spent in the
// kernel and in user space (getrusage).
func processCPU() (sys, user, childrenSys, childrenUser time.Duration, ok bool) {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0, 0, 0, 0, false
	}
	d := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return d(self.Stime), d(self.Utime), d(children.Stime), d(children.Utime), true
}
