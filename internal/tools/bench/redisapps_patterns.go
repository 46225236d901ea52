package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/base/stats/hdr"
)

// This file is the application side of `kura bench redis-apps`: the five patterns, the
// closed-loop driver that runs one round of a pattern against one target, and the queue's
// exactly-once check.

// The patterns' names (--patterns).
const (
	patternLeaderboard = "leaderboard"
	patternSessions    = "sessions"
	patternQueue       = "queue"
	patternTags        = "tags"
	patternCounters    = "counters"
)

// The patterns' shapes: boards of the leaderboard, its top, a session's lifetime, the
// tags, how long a consumer's BRPOP waits, how long the queue's drain waits without a
// pop before it gives up, the items one load command carries, and the fields
// sessionFields writes.
const (
	appBoards        = 4
	appTopN          = 10
	appSessionTTL    = time.Hour
	appTags          = 8
	appPopWait       = 200 * time.Millisecond
	appDrainIdle     = 10 * time.Second
	appLoadChunk     = 100
	appSessionFields = 4
)

// appPattern is one application's use of Redis.
type appPattern struct {
	name     string
	commands string // for the report's scale
	// load fills the target before the rounds (nil: nothing to load).
	load func(ctx context.Context, c *appClient, o redisAppsOptions) error
	// newRun makes a round's state for the entry c.
	newRun func(ctx context.Context, o redisAppsOptions, round int, c *appClient) (appRun, error)
}

// appRun is one round of a pattern against one target.
type appRun interface {
	// work is worker w's closed loop, until deadline (the queue's consumers drain on).
	work(ctx context.Context, w *appWorker, deadline time.Time)
	// check judges what the server kept once every worker is done; nil when the pattern
	// has no check.
	check(ctx context.Context) (*AppCheck, error)
}

var appPatterns = []appPattern{
	{name: patternLeaderboard, commands: "ZADD, ZINCRBY, ZREVRANGE 0 9 WITHSCORES, ZRANK, a quarter each", load: loadLeaderboard,
		newRun: stepper(leaderboardStep)},
	{name: patternSessions, commands: "a fifth HSET of 4 fields then EXPIRE, four fifths HGETALL", load: loadSessions,
		newRun: stepper(sessionStep)},
	{name: patternQueue, commands: "half the clients LPUSH, half BRPOP, every item popped exactly once",
		newRun: func(_ context.Context, o redisAppsOptions, round int, _ *appClient) (appRun, error) {
			return newQueueRun(o, round), nil
		}},
	{name: patternTags, commands: "SADD, SREM a fifth each, SISMEMBER two fifths, SINTER of two tags a fifth", load: loadTags,
		newRun: stepper(tagsStep)},
	{name: patternCounters, commands: "INCR, the counters' sum checked", newRun: newCounterRun},
}

func appPatternNames() []string {
	names := make([]string, len(appPatterns))
	for i, p := range appPatterns {
		names[i] = p.name
	}
	return names
}

// appPatternByName finds a pattern parseChoices accepted.
func appPatternByName(name string) appPattern {
	for _, p := range appPatterns {
		if p.name == name {
			return p
		}
	}
	panic("bench: no pattern " + name)
}

// appWorker is one client of a round: its connection's node, its random source and
// what it measured.
type appWorker struct {
	id         int
	rdb        *redis.Client
	r          *rand.Rand
	timeout    time.Duration
	latencies  *hdr.Histogram
	ops        int
	errors     int
	firstError error
	lastAnswer time.Time
}

// errAppIdle is a blocking command's timeout: neither an op nor an error.
var errAppIdle = errors.New("nothing came")

// do runs one command with the worker's timeout and counts it: an op, timed, when cmd
// returns nil; an error otherwise (a failure, or an answer the pattern rules out).
func (w *appWorker) do(ctx context.Context, cmd func(ctx context.Context) error) error {
	octx, cancel := context.WithTimeout(ctx, w.timeout)
	began := time.Now()
	err := cmd(octx)
	took := time.Since(began)
	cancel()
	switch {
	case errors.Is(err, errAppIdle):
	case err != nil:
		if ctx.Err() == nil { // else interrupted: not the server's error
			w.errors++
			if w.firstError == nil {
				w.firstError = err
			}
		}
	default:
		w.ops++
		w.latencies.Record(took)
		w.lastAnswer = time.Now()
	}
	return err
}

// stepRun is a round of a pattern without state: each worker runs the step until the
// deadline.
type stepRun func(ctx context.Context, w *appWorker)

func (s stepRun) work(ctx context.Context, w *appWorker, deadline time.Time) {
	for ctx.Err() == nil && time.Now().Before(deadline) {
		s(ctx, w)
	}
}

func (stepRun) check(context.Context) (*AppCheck, error) { return nil, nil }

// stepper makes a pattern's newRun from a step that needs the options only.
func stepper(step func(ctx context.Context, w *appWorker, o redisAppsOptions)) func(context.Context, redisAppsOptions, int, *appClient) (appRun, error) {
	return func(_ context.Context, o redisAppsOptions, _ int, _ *appClient) (appRun, error) {
		return stepRun(func(ctx context.Context, w *appWorker) { step(ctx, w, o) }), nil
	}
}

// runAppRound runs one round of p against c's server: o.clients workers for
// o.duration, the server's processes' CPU time read around it; n is the round's number.
func runAppRound(ctx context.Context, p appPattern, c *appClient, o redisAppsOptions, n int) (appRound, *AppCheck, error) {
	run, err := p.newRun(ctx, o, n, c)
	if err != nil {
		return appRound{}, nil, err
	}
	workers := make([]*appWorker, o.clients)
	cpuBefore := processesCPU(c.pids)
	start := time.Now()
	deadline := start.Add(o.duration)
	var wg sync.WaitGroup
	for i := range workers {
		w := &appWorker{id: i, rdb: c.node(i), r: rand.New(rand.NewPCG(uint64(n+1), uint64(i))), timeout: o.opTimeout, latencies: hdr.New()}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.work(ctx, w, deadline)
		}()
	}
	wg.Wait()
	cpu := processesCPU(c.pids) - cpuBefore
	var r appRound
	latencies, last := hdr.New(), start
	for _, w := range workers {
		r.Ops += w.ops
		r.Errors += w.errors
		if w.firstError != nil && r.FirstError == "" {
			r.FirstError = w.firstError.Error()
		}
		latencies.Merge(w.latencies)
		if w.lastAnswer.After(last) {
			last = w.lastAnswer
		}
	}
	elapsed := last.Sub(start)
	r.ElapsedS = round(elapsed.Seconds(), 3)
	if r.Ops > 0 {
		r.OpsPerS = round(float64(r.Ops)/elapsed.Seconds(), 1)
		r.CPUUsPerOp = round(float64(cpu.Microseconds())/float64(r.Ops), 2)
		ms := func(q float64) float64 { return round(float64(latencies.Percentile(q))/float64(time.Millisecond), 3) }
		r.LatencyMsP50, r.LatencyMsP99, r.LatencyMsP999 = ms(0.5), ms(0.99), ms(0.999)
	}
	if ctx.Err() != nil {
		return appRound{}, nil, ctx.Err()
	}
	check, err := run.check(ctx)
	return r, check, err
}

// loadChunks fills groups (boards, tags; 1 for the sessions) of n items each, one
// command per chunk of up to appLoadChunk items of a group, in parallel over o.clients
// workers, each on its node.
func loadChunks(ctx context.Context, c *appClient, o redisAppsOptions, groups, n int, send func(ctx context.Context, rdb *redis.Client, group, from, to int) error) error {
	perGroup := (n + appLoadChunk - 1) / appLoadChunk
	var next atomic.Int64
	errs := make([]error, o.clients)
	var wg sync.WaitGroup
	for w := range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= groups*perGroup {
					return
				}
				from := (k % perGroup) * appLoadChunk
				octx, cancel := context.WithTimeout(ctx, o.opTimeout)
				err := send(octx, c.node(w), k/perGroup, from, min(n, from+appLoadChunk))
				cancel()
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

func boardKey(b int) string   { return "board:" + strconv.Itoa(b) }
func playerName(i int) string { return "player:" + strconv.Itoa(i) }

// loadLeaderboard gives every board o.items players with random scores.
func loadLeaderboard(ctx context.Context, c *appClient, o redisAppsOptions) error {
	return loadChunks(ctx, c, o, appBoards, o.items, func(ctx context.Context, rdb *redis.Client, board, from, to int) error {
		r := rand.New(rand.NewPCG(uint64(board), uint64(from)))
		var members []redis.Z
		for i := from; i < to; i++ {
			members = append(members, redis.Z{Score: float64(r.IntN(100000)), Member: playerName(i)})
		}
		return rdb.ZAdd(ctx, boardKey(board), members...).Err()
	})
}

func leaderboardStep(ctx context.Context, w *appWorker, o redisAppsOptions) {
	key, player := boardKey(w.r.IntN(appBoards)), playerName(w.r.IntN(o.items))
	switch u := w.r.Float64(); {
	case u < 0.25:
		score := float64(w.r.IntN(100000))
		w.do(ctx, func(ctx context.Context) error {
			return w.rdb.ZAdd(ctx, key, redis.Z{Score: score, Member: player}).Err()
		})
	case u < 0.5:
		by := float64(1 + w.r.IntN(100))
		w.do(ctx, func(ctx context.Context) error { return w.rdb.ZIncrBy(ctx, key, by, player).Err() })
	case u < 0.75:
		w.do(ctx, func(ctx context.Context) error {
			top, err := w.rdb.ZRevRangeWithScores(ctx, key, 0, appTopN-1).Result()
			if err == nil && len(top) != appTopN {
				err = fmt.Errorf("ZREVRANGE %s 0 %d answered %d members of a loaded board", key, appTopN-1, len(top))
			}
			return err
		})
	default:
		w.do(ctx, func(ctx context.Context) error {
			err := w.rdb.ZRank(ctx, key, player).Err()
			if errors.Is(err, redis.Nil) {
				err = fmt.Errorf("ZRANK %s %s: a loaded player is missing", key, player)
			}
			return err
		})
	}
}

func sessionKey(i int) string { return "session:" + strconv.Itoa(i) }

// sessionFields are a session's fields and values, as HSET takes them.
func sessionFields(i int, r *rand.Rand) []any {
	return []any{"user", "user:" + strconv.Itoa(i), "last_seen", strconv.FormatInt(time.Now().Unix(), 10),
		"ip", fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), r.IntN(256)), "cart", strconv.Itoa(r.IntN(20))}
}

// loadSessions writes o.items sessions, each with its lifetime.
func loadSessions(ctx context.Context, c *appClient, o redisAppsOptions) error {
	return loadChunks(ctx, c, o, 1, o.items, func(ctx context.Context, rdb *redis.Client, _, from, to int) error {
		r := rand.New(rand.NewPCG(uint64(from), 0))
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := from; i < to; i++ {
				p.HSet(ctx, sessionKey(i), sessionFields(i, r)...)
				p.Expire(ctx, sessionKey(i), appSessionTTL)
			}
			return nil
		})
		for _, cmd := range cmds {
			err = errors.Join(err, cmd.Err())
		}
		return err
	})
}

func sessionStep(ctx context.Context, w *appWorker, o redisAppsOptions) {
	i := w.r.IntN(o.items)
	key := sessionKey(i)
	if w.r.Float64() < 0.2 {
		fields := sessionFields(i, w.r)
		if w.do(ctx, func(ctx context.Context) error { return w.rdb.HSet(ctx, key, fields...).Err() }) == nil {
			w.do(ctx, func(ctx context.Context) error { return w.rdb.Expire(ctx, key, appSessionTTL).Err() })
		}
		return
	}
	w.do(ctx, func(ctx context.Context) error {
		session, err := w.rdb.HGetAll(ctx, key).Result()
		if err == nil && len(session) != appSessionFields {
			err = fmt.Errorf("HGETALL %s answered %d fields of a loaded session, want %d", key, len(session), appSessionFields)
		}
		return err
	})
}

func tagKey(t int) string { return "tag:" + strconv.Itoa(t) }

// tagItem is item i's name.
func tagItem(i int) string { return "item:" + strconv.Itoa(i) }

// loadTags puts each item in each tag with probability one half, the share the
// pattern's SADDs and SREMs keep on average.
func loadTags(ctx context.Context, c *appClient, o redisAppsOptions) error {
	return loadChunks(ctx, c, o, appTags, o.items, func(ctx context.Context, rdb *redis.Client, tag, from, to int) error {
		r := rand.New(rand.NewPCG(uint64(tag), uint64(from)))
		var members []any
		for i := from; i < to; i++ {
			if r.IntN(2) == 0 {
				members = append(members, tagItem(i))
			}
		}
		if len(members) == 0 {
			return nil
		}
		return rdb.SAdd(ctx, tagKey(tag), members...).Err()
	})
}

func tagsStep(ctx context.Context, w *appWorker, o redisAppsOptions) {
	t := w.r.IntN(appTags)
	key, item := tagKey(t), tagItem(w.r.IntN(o.items))
	switch u := w.r.Float64(); {
	case u < 0.2:
		w.do(ctx, func(ctx context.Context) error { return w.rdb.SAdd(ctx, key, item).Err() })
	case u < 0.4:
		w.do(ctx, func(ctx context.Context) error { return w.rdb.SRem(ctx, key, item).Err() })
	case u < 0.8:
		w.do(ctx, func(ctx context.Context) error { return w.rdb.SIsMember(ctx, key, item).Err() })
	default:
		other := tagKey((t + 1 + w.r.IntN(appTags-1)) % appTags)
		w.do(ctx, func(ctx context.Context) error { return w.rdb.SInter(ctx, key, other).Err() })
	}
}

// queueRun is a round of the queue: the first half of the workers push numbered items,
// the others pop them, and the ledger records every push and pop for the check.
type queueRun struct {
	key       string
	producers int
	deadline  time.Duration // how long the consumers drain without a pop
	ledger    queueLedger
	// producing counts the producers still pushing; progress is when the last pop came
	// or the producers stopped (Unix nanoseconds), for the drain's end.
	producing atomic.Int64
	progress  atomic.Int64
}

func newQueueRun(o redisAppsOptions, round int) *queueRun {
	q := &queueRun{key: "queue:" + strconv.Itoa(round), producers: o.clients / 2, deadline: appDrainIdle,
		ledger: queueLedger{pushed: map[string]bool{}, pops: map[string]int{}}}
	q.producing.Store(int64(q.producers))
	return q
}

func (q *queueRun) work(ctx context.Context, w *appWorker, deadline time.Time) {
	if w.id < q.producers {
		for seq := 0; ctx.Err() == nil && time.Now().Before(deadline); seq++ {
			item := strconv.Itoa(w.id) + ":" + strconv.Itoa(seq)
			err := w.do(ctx, func(ctx context.Context) error { return w.rdb.LPush(ctx, q.key, item).Err() })
			q.ledger.push(item, err == nil)
		}
		if q.producing.Add(-1) == 0 {
			q.progress.Store(time.Now().UnixNano())
		}
		return
	}
	for ctx.Err() == nil {
		if q.producing.Load() == 0 && (q.ledger.waiting() == 0 || time.Since(time.Unix(0, q.progress.Load())) > q.deadline) {
			return
		}
		w.do(ctx, func(ctx context.Context) error {
			// Sent as is: go-redis's BRPop rounds a wait under a second up to one.
			got, err := w.rdb.Do(ctx, "BRPOP", q.key, strconv.FormatFloat(appPopWait.Seconds(), 'f', -1, 64)).StringSlice()
			switch {
			case errors.Is(err, redis.Nil):
				return errAppIdle
			case err != nil:
				return err
			case len(got) != 2:
				return fmt.Errorf("BRPOP answered %q, want the key and an item", got)
			}
			q.ledger.pop(got[1])
			q.progress.Store(time.Now().UnixNano())
			return nil
		})
	}
}

func (q *queueRun) check(context.Context) (*AppCheck, error) { return q.ledger.check(), nil }

// queueLedger records a queue's pushes, answered or not, and its pops.
type queueLedger struct {
	mu     sync.Mutex
	pushed map[string]bool // item -> its LPUSH was answered
	pops   map[string]int
	// unpopped counts the answered pushes not popped yet: the drain is done at 0.
	unpopped int
}

// push records an item's LPUSH, which a consumer may have popped already: the
// answer reaches the producer after the item reaches the queue.
func (l *queueLedger) push(item string, answered bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pushed[item] = answered
	if answered && l.pops[item] == 0 {
		l.unpopped++
	}
}

func (l *queueLedger) pop(item string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pops[item]++
	if l.pops[item] == 1 && l.pushed[item] {
		l.unpopped--
	}
}

// waiting is how many answered pushes are not popped yet.
func (l *queueLedger) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unpopped
}

// check counts the items pushed and never popped (lost) and the pops of an item after
// its first or of an item never pushed (duplicated). An item whose LPUSH failed may be
// in the queue or not: popped once, or never, it is neither.
func (l *queueLedger) check() *AppCheck {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &AppCheck{}
	for item, answered := range l.pushed {
		if !answered {
			c.Unconfirmed++
			continue
		}
		c.Writes++
		if l.pops[item] == 0 {
			c.Lost++
		}
	}
	for item, n := range l.pops {
		c.Found += n
		if _, known := l.pushed[item]; !known {
			c.Duplicated += n
		} else {
			c.Duplicated += n - 1
		}
	}
	c.OK = c.Lost == 0 && c.Duplicated == 0
	return c
}

// counterRun is a round of the counters: INCRs over the entry's own keys (a key keeps the
// kind of counter it was made as), and the check that the counters' sum grew by the
// INCRs answered.
type counterRun struct {
	c                *appClient
	keys             []string
	before           int64
	answered, failed atomic.Int64
}

func newCounterRun(ctx context.Context, o redisAppsOptions, _ int, c *appClient) (appRun, error) {
	r := &counterRun{c: c, keys: make([]string, o.items)}
	for i := range r.keys {
		r.keys[i] = "counter:" + c.name + ":" + strconv.Itoa(i)
	}
	var err error
	r.before, err = r.sum(ctx, o.opTimeout)
	return r, err
}

func (r *counterRun) work(ctx context.Context, w *appWorker, deadline time.Time) {
	for ctx.Err() == nil && time.Now().Before(deadline) {
		key := r.keys[w.r.IntN(len(r.keys))]
		if w.do(ctx, func(ctx context.Context) error { return w.rdb.Incr(ctx, key).Err() }) == nil {
			r.answered.Add(1)
		} else if ctx.Err() == nil {
			r.failed.Add(1)
		}
	}
}

// sum reads every counter through the first node (MGET, a chunk of keys at a time); a
// missing key counts 0.
func (r *counterRun) sum(ctx context.Context, timeout time.Duration) (int64, error) {
	var total int64
	for from := 0; from < len(r.keys); from += appLoadChunk {
		octx, cancel := context.WithTimeout(ctx, timeout)
		values, err := r.c.node(0).MGet(octx, r.keys[from:min(len(r.keys), from+appLoadChunk)]...).Result()
		cancel()
		if err != nil {
			return 0, fmt.Errorf("read the counters: %w", err)
		}
		for i, v := range values {
			if v == nil {
				continue
			}
			s, _ := v.(string)
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("counter %s holds %q, not an integer", r.keys[from+i], v)
			}
			total += n
		}
	}
	return total, nil
}

// counterCommitWait bounds how long check waits for increments it has not read yet.
const counterCommitWait = 10 * time.Second

// check reads the counters until they hold every answered increment, for at most
// counterCommitWait: kura answers an INCR once a quorum accepted it and sends the commit
// after (docs/lwt.md), so a read through another node than the INCR's may miss the last
// increments for about a round trip. One still missing after the wait is lost.
func (r *counterRun) check(ctx context.Context) (*AppCheck, error) {
	answered, failed := int(r.answered.Load()), int(r.failed.Load())
	deadline := time.Now().Add(counterCommitWait)
	for {
		after, err := r.sum(ctx, time.Minute)
		if err != nil {
			return nil, err
		}
		c := counterCheck(answered, failed, int(after-r.before))
		if c.Lost == 0 || time.Now().After(deadline) {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// counterCheck judges a round of INCRs by one each: the counters grew by found, which
// must be the increments answered plus at most those that failed (each may or may not
// have been applied).
func counterCheck(answered, failed, found int) *AppCheck {
	c := &AppCheck{Writes: answered, Unconfirmed: failed, Found: found,
		Lost: max(0, answered-found), Duplicated: max(0, found-answered-failed)}
	c.OK = c.Lost == 0 && c.Duplicated == 0
	return c
}
