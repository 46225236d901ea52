package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/consistency"
)

func init() {
	Register(Bench{
		Name:    "redis-races",
		Summary: "Redis's conditional writes raced by many clients: kura's lightweight transactions against redis-server",
		Setup:   setupRedisRaces,
	})
}

// raceOptions are the bench's flags.
type raceOptions struct {
	trials     int
	clients    int
	increments int
}

func setupRedisRaces(fs *flag.FlagSet) Runner {
	trials := fs.Int("trials", 300, "trials per check and target")
	clients := fs.Int("clients", 8, "clients racing in each trial, spread over the target's nodes")
	increments := fs.Int("increments", 10, "INCRs per client in an INCR trial")
	return func(ctx context.Context, env Env) (*Report, error) {
		opts := raceOptions{trials: *trials, clients: *clients, increments: *increments}
		if opts.trials < 1 || opts.clients < 2 || opts.increments < 1 {
			return nil, errors.New("--trials and --increments must be positive, --clients at least 2")
		}
		return runRedisRaces(ctx, env, opts)
	}
}

// RaceRow is one check on one target: how many of its trials broke the command's promise.
type RaceRow struct {
	Target     string `json:"target"`
	Check      string `json:"check"`
	Trials     int    `json:"trials"`
	Violations int    `json:"violations"`
	Errors     int    `json:"errors"` // trials in which a client got an error reply
	// Detail describes the first violation, if any.
	Detail string `json:"detail,omitempty"`
}

// raceCheck runs one trial of a check with one client per element of clients, all
// released at once, and describes the broken promise ("" when kept).
type raceCheck struct {
	name  string
	trial func(ctx context.Context, clients []*redis.Client, key string, opts raceOptions) (violation string, err error)
}

var raceChecks = []raceCheck{
	{"set-nx-one-winner", raceSetNX},
	{"getdel-one-taker", raceGetDel},
	{"set-get-chain", raceSetGet},
	{"incr-none-lost", raceIncr},
}

func runRedisRaces(ctx context.Context, env Env, opts raceOptions) (*Report, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("%w: redis-server not found", ErrNoRedisTools)
	}
	var targets []redisTarget
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	for _, start := range []func(context.Context) (redisTarget, error){
		startVolatileRedis,
		func(ctx context.Context) (redisTarget, error) {
			return startKuraDCs(ctx, "kura-3-serial", []int{3}, "simple=3", consistency.Quorum, "")
		},
		func(ctx context.Context) (redisTarget, error) {
			return startKuraDCs(ctx, "kura-2dc-serial", []int{2, 1}, "dc1=2,dc2=1", consistency.Quorum, "")
		},
	} {
		t, err := start(ctx)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
		env.Progressf("started %s on %v", t.name, t.addrs)
	}
	var rows []RaceRow
	progress := env.StartProgress("redis-races", float64(len(targets)*len(raceChecks)*opts.trials))
	defer progress.Done()
	for _, t := range targets {
		// One client per racer, each on the next node, so that a cluster's racers go
		// through different coordinators.
		clients := make([]*redis.Client, opts.clients)
		for i := range clients {
			clients[i] = redis.NewClient(&redis.Options{Addr: t.addrs[i%len(t.addrs)], MaxRetries: -1, PoolSize: 1})
			defer clients[i].Close()
		}
		for _, check := range raceChecks {
			row := RaceRow{Target: t.name, Check: check.name, Trials: opts.trials}
			progress.Add(0, "%s: %s, %d trials", t.name, check.name, opts.trials)
			for trial := range opts.trials {
				progress.Add(float64(min(trial, 1)), "")
				key := fmt.Sprintf("race:%s:%d", check.name, trial)
				violation, err := check.trial(ctx, clients, key, opts)
				switch {
				case err != nil:
					row.Errors++
					if row.Detail == "" {
						row.Detail = "error: " + err.Error()
					}
				case violation != "":
					row.Violations++
					if row.Detail == "" || row.Violations == 1 {
						row.Detail = violation
					}
				}
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
			progress.Add(1, "%s: %s, %d trials: %d violations, %d with errors", t.name, check.name, row.Trials, row.Violations, row.Errors)
			rows = append(rows, row)
		}
	}
	return &Report{
		Bench: "redis-races",
		Scale: fmt.Sprintf("%d trials per check, %d racing clients (one connection each, spread over the target's nodes), %d INCRs per client; %d cores shared by every process",
			opts.trials, opts.clients, opts.increments, runtime.NumCPU()),
		Rows:    rows,
		Summary: raceSummary(rows),
		Notes: []string{
			"targets: redis = redis-server; kura-3-serial = three in-memory nodes in one DC, replication 3; kura-2dc-serial = dc1 two nodes, dc2 one, replication dc1=2,dc2=1 (no WAN emulation); kura connections at QUORUM, so conditional writes run at SERIAL",
			"set-nx-one-winner: every client SET key id NX, exactly one may get OK; getdel-one-taker: a value is set, every client GETDEL, exactly one may get it; set-get-chain: every client SET key id GET, the old values returned and the final value must be each id once, with the initial value returned once; incr-none-lost: every client INCRs, the final value must be their sum",
		},
	}, nil
}

// raceSummary counts violations per target.
func raceSummary(rows []RaceRow) map[string]any {
	summary := map[string]any{}
	for _, r := range rows {
		key := r.Target + "_violations"
		n, _ := summary[key].(int)
		summary[key] = n + r.Violations
	}
	return summary
}

// race runs fn once per client, all released together, and returns their results, or
// the first client's error.
func race[T any](clients []*redis.Client, fn func(i int, c *redis.Client) (T, error)) ([]T, error) {
	results := make([]T, len(clients))
	errs := make([]error, len(clients))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = fn(i, c)
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

func raceSetNX(ctx context.Context, clients []*redis.Client, key string, _ raceOptions) (string, error) {
	won, err := race(clients, func(i int, c *redis.Client) (bool, error) {
		return c.SetNX(ctx, key, strconv.Itoa(i), 0).Result()
	})
	if err != nil {
		return "", err
	}
	winners := 0
	for _, w := range won {
		if w {
			winners++
		}
	}
	if winners != 1 {
		return fmt.Sprintf("%s: %d SET NX winners", key, winners), nil
	}
	return "", nil
}

func raceGetDel(ctx context.Context, clients []*redis.Client, key string, _ raceOptions) (string, error) {
	if err := clients[0].Set(ctx, key, "prize", 0).Err(); err != nil {
		return "", err
	}
	took, err := race(clients, func(_ int, c *redis.Client) (bool, error) {
		v, err := c.GetDel(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return v == "prize", err
	})
	if err != nil {
		return "", err
	}
	takers := 0
	for _, t := range took {
		if t {
			takers++
		}
	}
	if takers != 1 {
		return fmt.Sprintf("%s: GETDEL handed the value to %d clients", key, takers), nil
	}
	return "", nil
}

func raceSetGet(ctx context.Context, clients []*redis.Client, key string, _ raceOptions) (string, error) {
	if err := clients[0].Set(ctx, key, "initial", 0).Err(); err != nil {
		return "", err
	}
	olds, err := race(clients, func(i int, c *redis.Client) (string, error) {
		return c.SetArgs(ctx, key, strconv.Itoa(i), redis.SetArgs{Get: true}).Result()
	})
	if err != nil {
		return "", err
	}
	final, err := clients[0].Get(ctx, key).Result()
	if err != nil {
		return "", err
	}
	// Every value written is replaced exactly once, except the last one standing, and
	// the initial value is replaced exactly once.
	seen := map[string]int{final: 1}
	for _, old := range olds {
		seen[old]++
	}
	for _, v := range append([]string{"initial"}, ids(len(clients))...) {
		if seen[v] != 1 {
			return fmt.Sprintf("%s: value %q returned or kept %d times (final %q)", key, v, seen[v], final), nil
		}
	}
	return "", nil
}

func raceIncr(ctx context.Context, clients []*redis.Client, key string, opts raceOptions) (string, error) {
	if _, err := race(clients, func(_ int, c *redis.Client) (struct{}, error) {
		for range opts.increments {
			if err := c.Incr(ctx, key).Err(); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	}); err != nil {
		return "", err
	}
	got, err := clients[0].Get(ctx, key).Int()
	if err != nil {
		return "", err
	}
	if want := len(clients) * opts.increments; got != want {
		return fmt.Sprintf("%s: %d after %d INCRs: %d lost", key, got, want, want-got), nil
	}
	return "", nil
}

// ids returns "0" … "n-1", the values the racing clients write.
func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}
