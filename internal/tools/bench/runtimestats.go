package bench

import (
	"math"
	"runtime/metrics"
	"time"
)

// runtimeSample is what the Go runtime says of the whole bench process at one moment:
// the costs that every node and client of a single-process cluster share, for a
// breakdown of its latency. The CPU times and the live heap are as of the last
// collection, which sets them; a row of seconds spans several.
type runtimeSample struct {
	gcCPUSeconds, cpuSeconds float64
	gcPauses, schedLatencies *metrics.Float64Histogram
	heapLiveBytes            uint64
	// osRunWait is the operating system's side: how long the process's threads have
	// waited for a CPU so far (osRunWait).
	osRunWait time.Duration
}

// The runtime metrics a runtimeSample reads.
var runtimeMetrics = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/sched/pauses/total/gc:seconds",
	goSchedMetric,
	"/gc/heap/live:bytes",
}

func readRuntime() runtimeSample {
	s := make([]metrics.Sample, len(runtimeMetrics))
	for i, name := range runtimeMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	float := func(v metrics.Value) float64 {
		if v.Kind() != metrics.KindFloat64 {
			return 0
		}
		return v.Float64()
	}
	hist := func(v metrics.Value) *metrics.Float64Histogram {
		if v.Kind() != metrics.KindFloat64Histogram {
			return nil
		}
		return v.Float64Histogram()
	}
	r := runtimeSample{gcCPUSeconds: float(s[0].Value), cpuSeconds: float(s[1].Value), gcPauses: hist(s[2].Value), schedLatencies: hist(s[3].Value),
		osRunWait: osRunWait()}
	if s[4].Value.Kind() == metrics.KindUint64 {
		r.heapLiveBytes = s[4].Value.Uint64()
	}
	return r
}

// runtimeBreakdown is a window's share of the process's shared costs.
type runtimeBreakdown struct {
	// GCCPUPct is the collector's CPU time over the process's (its estimate of both).
	GCCPUPct float64
	// GCPauseMsMax is the longest stop-the-world pause of the collector in the window,
	// and GoSchedWaitMsMax the longest a goroutine ready to run waited for a CPU: each
	// the upper bound of the runtime histogram's highest bucket that counted one.
	GCPauseMsMax, GoSchedWaitMsMax float64
	// HeapLiveMB is the heap the last collection before the window's end found live.
	HeapLiveMB float64
}

func breakdown(from, to runtimeSample) runtimeBreakdown {
	var b runtimeBreakdown
	if cpu := to.cpuSeconds - from.cpuSeconds; cpu > 0 {
		b.GCCPUPct = round(100*(to.gcCPUSeconds-from.gcCPUSeconds)/cpu, 1)
	}
	b.GCPauseMsMax = round(1000*histogramMax(from.gcPauses, to.gcPauses), 2)
	b.GoSchedWaitMsMax = round(1000*histogramMax(from.schedLatencies, to.schedLatencies), 2)
	b.HeapLiveMB = round(float64(to.heapLiveBytes)/(1<<20), 1)
	return b
}

// histogramMax is the upper bound of the highest bucket that counted a value between two
// reads of one runtime histogram (its lower bound for the open last bucket); 0 if none.
func histogramMax(before, after *metrics.Float64Histogram) float64 {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return 0
	}
	for i := len(after.Counts) - 1; i >= 0; i-- {
		if after.Counts[i] > before.Counts[i] {
			if hi := after.Buckets[i+1]; !math.IsInf(hi, 1) {
				return hi
			}
			return after.Buckets[i]
		}
	}
	return 0
}

// osRunWaitMax is the largest wait for a CPU of the operating system that the process's
// threads accumulated, summed, between two consecutive samples; a thread that exited
// takes its wait with it, so a drop counts as none.
func osRunWaitMax(samples []runtimeSample) time.Duration {
	var worst time.Duration
	for i := 1; i < len(samples); i++ {
		worst = max(worst, samples[i].osRunWait-samples[i-1].osRunWait)
	}
	return worst
}
