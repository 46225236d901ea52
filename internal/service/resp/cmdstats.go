package resp

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// commandStats are INFO commandstats' counters of one command since the start or CONFIG
// RESETSTAT, as Redis 7.0 keeps them: calls run, the time they took, calls rejected
// before running (wrong number of arguments, not authenticated), and calls run that
// answered an error. They live on the command's entry, found already to run it, so
// counting costs a command three atomic adds and no lookup.
type commandStats struct {
	calls, elapsedNs, rejected, failed atomic.Int64
}

// ran counts calls run together in elapsed, failed of them answering an error.
func (st *commandStats) ran(calls int64, elapsed time.Duration, failed int64) {
	st.calls.Add(calls)
	st.elapsedNs.Add(int64(elapsed))
	if failed > 0 {
		st.failed.Add(failed)
	}
}

// reset zeroes the counters (CONFIG RESETSTAT).
func (st *commandStats) reset() {
	for _, counter := range []*atomic.Int64{&st.calls, &st.elapsedNs, &st.rejected, &st.failed} {
		counter.Store(0)
	}
}

// resetStats zeroes INFO's Stats and Commandstats counters (CONFIG RESETSTAT).
func (s *Server) resetStats() {
	s.stats.reset()
	for _, cmd := range s.allCommands() {
		cmd.stats.reset()
	}
}

// writeCommandstatsInfo writes a line per command called or rejected since the start or
// CONFIG RESETSTAT, in Redis 7.0's words; a subcommand is named "client|list". Redis
// lists them in its table's order, kura in name order. A pipeline's GETs and SETs, run
// as a batch (pipeline.go), share the batch's time: usec is the time spent reading for
// GET and writing for SET.
func writeCommandstatsInfo(b *strings.Builder, c *conn, _ Info) {
	for _, cmd := range c.s.allCommands() {
		st := &cmd.stats
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rejected == 0 && failed == 0 {
			continue
		}
		usec := st.elapsedNs.Load() / int64(time.Microsecond)
		perCall := 0.0
		if calls > 0 {
			perCall = float64(usec) / float64(calls)
		}
		infoLine(b, "cmdstat_"+cmd.name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			calls, usec, perCall, rejected, failed))
	}
}
