package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/base/stats/hdr"
)

// This file is the YCSB side of `kura bench peers`: the core workloads, the key choosers
// and the closed-loop driver that runs one workload against any peer through the
// peerClient it is given.

// opKind is one kind of YCSB operation.
type opKind int

const (
	opRead opKind = iota
	opUpdate
	opScan
)

// workloadMix is one YCSB workload: the shares of its operations, which add up to 1.
type workloadMix struct {
	Name   string
	Read   float64
	Update float64
	Scan   float64
}

// The workloads, in the order a run measures them. YCSB's E inserts new keys with 5 %
// of its operations; here they update loaded keys instead, so that every workload runs on
// the same key count and a scan's length does not depend on the workloads run before it.
var peerWorkloads = []workloadMix{
	{Name: "A", Read: 0.5, Update: 0.5},
	{Name: "B", Read: 0.95, Update: 0.05},
	{Name: "C", Read: 1},
	{Name: "E", Scan: 0.95, Update: 0.05},
	{Name: "W", Update: 1},
}

// workloadByName finds a workload by its letter (case-insensitive).
func workloadByName(name string) (workloadMix, bool) {
	for _, w := range peerWorkloads {
		if strings.EqualFold(w.Name, name) {
			return w, true
		}
	}
	return workloadMix{}, false
}

// choose picks the operation for a uniform draw u in [0, 1).
func (w workloadMix) choose(u float64) opKind {
	switch {
	case u < w.Read:
		return opRead
	case u < w.Read+w.Update:
		return opUpdate
	}
	if w.Scan > 0 {
		return opScan
	}
	// Rounding left u past the last share: the last kind the mix has.
	return opUpdate
}

// maxScanLength is YCSB workload E's maxscanlength: a scan reads 1 to 100 records, the
// count uniform.
const maxScanLength = 100

// zipfianTheta is YCSB's zipfian constant: item 0 draws about 1/zeta(n) of the requests.
const zipfianTheta = 0.99

// zipfian draws item numbers in [0, n) by YCSB's ZipfianGenerator (Gray et al., "Quickly
// generating billion-record synthetic databases"), item 0 the most popular. It holds
// only constants, so one generator serves every worker, each with its own source.
type zipfian struct {
	n                   int
	theta, alpha, zetan float64
	eta, half           float64
}

// newZipfian precomputes the constants for n items: zeta(n) is a sum over every item,
// paid once per run.
func newZipfian(n int) *zipfian {
	z := &zipfian{n: n, theta: zipfianTheta, alpha: 1 / (1 - zipfianTheta)}
	for i := 1; i <= n; i++ {
		z.zetan += 1 / math.Pow(float64(i), z.theta)
	}
	zeta2 := 1 + 1/math.Pow(2, z.theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-z.theta)) / (1 - zeta2/z.zetan)
	z.half = 1 + math.Pow(0.5, z.theta)
	return z
}

// next maps a uniform draw u in [0, 1) to an item.
func (z *zipfian) next(u float64) int {
	uz := u * z.zetan
	switch {
	case uz < 1:
		return 0
	case uz < z.half:
		return min(1, z.n-1)
	}
	return min(z.n-1, int(float64(z.n)*math.Pow(z.eta*u-z.eta+1, z.alpha)))
}

// keyChooser picks the key number of the next operation.
type keyChooser interface {
	pick(r *rand.Rand) int
}

// uniformKeys picks every key alike.
type uniformKeys struct{ n int }

func (u uniformKeys) pick(r *rand.Rand) int { return r.IntN(u.n) }

// scrambledZipfianKeys is YCSB's ScrambledZipfianGenerator: zipfian popularity, but the
// popular items hashed over the key space, so that the hot keys are not neighbours (and
// not all on one node of a ring, nor at the start of every scan).
type scrambledZipfianKeys struct{ z *zipfian }

func (s scrambledZipfianKeys) pick(r *rand.Rand) int {
	return scramble(s.z.next(r.Float64()), s.z.n)
}

// scramble hashes item i (FNV-1a over its 8 bytes, as YCSB's fnvhash64) into [0, n).
func scramble(i, n int) int {
	h := fnv.New64a()
	var b [8]byte
	for k := range b {
		b[k] = byte(uint64(i) >> (8 * k))
	}
	h.Write(b[:])
	return int(h.Sum64() % uint64(n))
}

// The distributions a run may choose keys by.
const (
	distZipfian = "zipfian"
	distUniform = "uniform"
)

// newKeyChooser returns the chooser of distribution dist over n keys.
func newKeyChooser(dist string, n int) (keyChooser, error) {
	switch dist {
	case distZipfian:
		return scrambledZipfianKeys{newZipfian(n)}, nil
	case distUniform:
		return uniformKeys{n}, nil
	}
	return nil, fmt.Errorf("distribution %q: want zipfian or uniform", dist)
}

// ycsbKey is key number i: YCSB's "user" prefix and the number zero-padded, so that key
// order is number order and a scan from key i reads keys i, i+1...
func ycsbKey(i int) []byte { return fmt.Appendf(nil, "user%010d", i) }

// errNoScan is what a peer without range scans (Redis) answers a scan.
var errNoScan = errors.New("no range scans")

// peerClient is a system's client as the driver uses it: safe for concurrent use by every
// worker. Each call is one YCSB operation.
type peerClient interface {
	read(ctx context.Context, key []byte) error
	update(ctx context.Context, key, value []byte) error
	// scan reads up to n records from start on, in the order the system keeps them.
	scan(ctx context.Context, start []byte, n int) error
	close()
}

// batcher is a client that can send several operations in one round trip (Redis
// pipelining). It returns how many of them failed, and the first failure.
type batcher interface {
	batch(ctx context.Context, ops []batchOp) (failed int, first error)
}

// batchOp is one operation of a batch.
type batchOp struct {
	kind       opKind
	key, value []byte
}

// driveOptions bound one closed-loop run.
type driveOptions struct {
	workers int
	// pipeline is how many operations a worker sends per round trip; above 1 the client
	// must be a batcher.
	pipeline int
	// duration ends the run; ops, when positive, ends it earlier after that many.
	duration  time.Duration
	ops       int
	opTimeout time.Duration
	value     int // bytes per value
	seed      uint64
}

// driveResult is what a run measured.
type driveResult struct {
	ops, errors int
	elapsed     time.Duration
	latencies   *hdr.Histogram // of the operations that succeeded (round trips when pipelined)
	firstError  error
}

// opsPerS is the run's throughput: the operations that succeeded per second.
func (r driveResult) opsPerS() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// percentileMs is the q-quantile of the run's latencies, as stats.Percentile, to the
// histogram's precision (hdr.SignificantDigits).
func (r driveResult) percentileMs(q float64) float64 {
	return float64(r.latencies.Percentile(q)) / float64(time.Millisecond)
}

// latencyFlush is how many latencies a worker of drive keeps before it adds them to the
// run's histogram: one histogram per run rather than per worker (about 440 KiB each),
// and the run's lock taken once per latencyFlush operations rather than per operation.
const latencyFlush = 1024

// drive runs mix against c with opts.workers closed-loop workers (each sends its next
// operation when the last one returns, as YCSB's threads do), keys from keys. With
// opts.pipeline above 1, a worker sends that many operations per round trip, and the
// latencies are of the round trips.
func drive(ctx context.Context, c peerClient, mix workloadMix, keys keyChooser, opts driveOptions) driveResult {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		total   = driveResult{latencies: hdr.New()}
		started atomic.Int64 // operations begun, for opts.ops
	)
	deadline := time.Now().Add(opts.duration)
	start := time.Now()
	for w := range opts.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(opts.seed, uint64(w)))
			value := make([]byte, opts.value)
			for i := range value {
				value[i] = byte(r.UintN(256)) // incompressible, as YCSB's random values
			}
			var mine driveResult
			latencies := make([]time.Duration, 0, latencyFlush)
			flush := func() {
				mu.Lock()
				defer mu.Unlock()
				for _, d := range latencies {
					total.latencies.Record(d)
				}
				latencies = latencies[:0]
			}
			batch := make([]batchOp, max(opts.pipeline, 1))
			for ctx.Err() == nil && time.Now().Before(deadline) {
				if opts.ops > 0 && started.Add(int64(len(batch))) > int64(opts.ops) {
					break
				}
				for i := range batch {
					batch[i] = batchOp{kind: mix.choose(r.Float64()), key: ycsbKey(keys.pick(r)), value: value}
				}
				octx, cancel := context.WithTimeout(ctx, opts.opTimeout)
				began := time.Now()
				var failed int
				var err error
				if len(batch) > 1 {
					failed, err = c.(batcher).batch(octx, batch)
				} else if err = runOp(octx, c, batch[0], r); err != nil {
					failed = 1
				}
				took := time.Since(began)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						break // interrupted: not the system's error
					}
					mine.errors += failed
					if mine.firstError == nil {
						mine.firstError = err
					}
				}
				if failed < len(batch) {
					mine.ops += len(batch) - failed
					if latencies = append(latencies, took); len(latencies) == latencyFlush {
						flush()
					}
				}
			}
			flush()
			mu.Lock()
			defer mu.Unlock()
			total.ops += mine.ops
			total.errors += mine.errors
			if total.firstError == nil {
				total.firstError = mine.firstError
			}
		}()
	}
	wg.Wait()
	total.elapsed = time.Since(start)
	return total
}

// runOp runs one operation through c; a scan's length is drawn from r.
func runOp(ctx context.Context, c peerClient, op batchOp, r *rand.Rand) error {
	switch op.kind {
	case opRead:
		return c.read(ctx, op.key)
	case opUpdate:
		return c.update(ctx, op.key, op.value)
	default:
		return c.scan(ctx, op.key, 1+r.IntN(maxScanLength))
	}
}

// loadPeerKeys writes keys 0..n-1 once each with opts.workers workers, every value
// opts.value random bytes; progress is told every tenth of the way.
func loadPeerKeys(ctx context.Context, c peerClient, n int, opts driveOptions, progress func(done int)) error {
	var (
		next     atomic.Int64
		firstErr error
		mu       sync.Mutex
		wg       sync.WaitGroup
	)
	step := max(1, n/10)
	for w := range opts.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(opts.seed, uint64(w)))
			value := make([]byte, opts.value)
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				for k := range value {
					value[k] = byte(r.UintN(256))
				}
				octx, cancel := context.WithTimeout(ctx, opts.opTimeout)
				err := c.update(octx, ycsbKey(i), value)
				cancel()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("load key %s: %w", ycsbKey(i), err)
					}
					mu.Unlock()
					return
				}
				if (i+1)%step == 0 && progress != nil {
					progress(i + 1)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// parseDistributions reads --distribution: zipfian, uniform or both, comma-separated.
func parseDistributions(s string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(s, ",") {
		d = strings.TrimSpace(strings.ToLower(d))
		if d != distZipfian && d != distUniform {
			return nil, fmt.Errorf("--distribution %q: want zipfian, uniform or both, comma-separated", s)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// parseWorkloads reads --workloads: letters among A, B, C, E and W, comma-separated.
func parseWorkloads(s string) ([]workloadMix, error) {
	var out []workloadMix
	for _, name := range strings.Split(s, ",") {
		w, ok := workloadByName(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("--workloads %q: want A, B, C, E or W, comma-separated", s)
		}
		out = append(out, w)
	}
	return out, nil
}
