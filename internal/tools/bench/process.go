package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: Linux reports them in clock
// ticks of 1/100 s (USER_HZ) on every architecture Go runs kura on.
const userHZ = 100

// processCPU reads the CPU time process pid has used, user and system, from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(data))
}

// parseProcStatCPU reads utime and stime, the 14th and 15th fields of a /proc/PID/stat
// line. The command name (the 2nd field) may hold spaces and parentheses, so the fields
// are counted from the last ')'.
func parseProcStatCPU(stat string) (time.Duration, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is the 3rd field (state): utime is the 14th, so fields[11].
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat %q: too few fields", stat)
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// processesCPU is the CPU time the processes pids have used in all; a process that is
// gone counts nothing.
func processesCPU(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if cpu, err := processCPU(pid); err == nil {
			total += cpu
		}
	}
	return total
}

// ownCPU is this process's CPU time so far, user and system, every thread.
func ownCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
