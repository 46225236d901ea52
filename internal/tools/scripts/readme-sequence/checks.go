package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	kurav1 "github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
)

// appKeyspace is the keyspace README.md creates and the writers write.
const appKeyspace = "app"

// ledger holds every write a client saw acknowledged: key -> value. Each key is written
// once, with a value of its own, so a read of another value is wrong, not merely stale.
type ledger struct {
	mu    sync.Mutex
	acked map[string]string
	next  int
}

func newLedger() *ledger { return &ledger{acked: map[string]string{}} }

// fresh names the next key and its value.
func (l *ledger) fresh(step string) (key, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	return fmt.Sprintf("seq-%07d", l.next), fmt.Sprintf("%s-%07d", step, l.next)
}

func (l *ledger) ack(key, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[key] = value
}

// snapshot is the acknowledged writes so far, in key order.
func (l *ledger) snapshot() (keys, values []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.acked {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		values = append(values, l.acked[k])
	}
	return keys, values
}

// writers puts fresh keys at QUORUM into app through a client of the live nodes until
// stopped, and records the acknowledged ones.
type writers struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	acked    int
	failed   int
	lastFail string
}

// startWriters starts n writers through the nodes at addrs (client addresses).
func startWriters(ctx context.Context, l *ledger, step string, addrs []string, n int) (*writers, error) {
	c, err := client.Dial(ctx, addrs, client.Options{})
	if err != nil {
		return nil, err
	}
	w := &writers{stop: make(chan struct{})}
	for range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				key, value := l.fresh(step)
				putCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := c.Put(putCtx, appKeyspace, []byte(key), []byte(value), consistency.Quorum)
				cancel()
				w.mu.Lock()
				if err == nil {
					l.ack(key, value)
					w.acked++
				} else {
					w.failed++
					w.lastFail = err.Error()
				}
				w.mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	go func() { w.wg.Wait(); c.Close() }()
	return w, nil
}

// halt stops the writers and says what they did.
func (w *writers) halt() string {
	close(w.stop)
	w.wg.Wait()
	s := fmt.Sprintf("%d writes acknowledged at QUORUM, %d not", w.acked, w.failed)
	if w.failed > 0 {
		s += " (last: " + w.lastFail + ")"
	}
	return s
}

// keyCount is the outcome of reading every acknowledged key through one node.
type keyCount struct {
	keys, missing, wrong, errors int
	firstProblem                 string
}

func (k keyCount) clean() bool { return k.missing == 0 && k.wrong == 0 && k.errors == 0 }

// readAllAt reads every acknowledged key at ONE with n as the coordinator.
func readAllAt(ctx context.Context, n *node, keys, values []string) keyCount {
	count := keyCount{keys: len(keys)}
	problem := func(s string) {
		if count.firstProblem == "" {
			count.firstProblem = s
		}
	}
	conn, err := client.DialNode(n.client, client.Options{})
	if err != nil {
		count.errors = len(keys)
		problem(err.Error())
		return count
	}
	defer conn.Close()
	kv := kurav1.NewKVClient(conn)
	const batch = 512
	for start := 0; start < len(keys); start += batch {
		end := min(start+batch, len(keys))
		req := &kurav1.GetManyRequest{Keyspace: appKeyspace, Consistency: kurav1.Consistency_ONE}
		for _, k := range keys[start:end] {
			req.Keys = append(req.Keys, []byte(k))
		}
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := kv.GetMany(callCtx, req)
		cancel()
		if err != nil {
			count.errors += end - start
			problem(client.Explain(err).Error())
			continue
		}
		for i, r := range resp.GetResults() {
			key, want := keys[start+i], values[start+i]
			switch {
			case r.GetCode() != 0:
				count.errors++
				problem(key + ": " + r.GetMessage())
			case !r.GetResponse().GetFound():
				count.missing++
				problem(key + " missing")
			case string(r.GetResponse().GetValue()) != want:
				count.wrong++
				problem(fmt.Sprintf("%s is %q, want %q", key, r.GetResponse().GetValue(), want))
			}
		}
	}
	return count
}

// lwtState is what the lightweight-transaction checks learned so far: the counter's
// last value, which a later INCR must pass.
type lwtState struct {
	counter int64
}

// lwtKeys are the keys of the transaction check: one counter, and two keys of one hash
// tag that a MULTI/EXEC increments together, so they stay equal.
const (
	lwtCounter = "{t}counter"
	lwtA       = "{t}a"
	lwtB       = "{t}b"
)

// transactAt runs, through n's Redis port in the default keyspace, an INCR and a
// MULTI/EXEC of two INCRs on keys of one hash tag, and checks what they answer: the
// counter above any value seen before, the two keys equal.
func (s *lwtState) transactAt(ctx context.Context, n *node) error {
	rdb := redis.NewClient(&redis.Options{Addr: n.resp, MaxRetries: -1, ReadTimeout: 15 * time.Second, WriteTimeout: 15 * time.Second})
	defer rdb.Close()
	v, err := rdb.Incr(ctx, lwtCounter).Result()
	if err != nil {
		return fmt.Errorf("INCR %s: %w", lwtCounter, err)
	}
	if v <= s.counter {
		return fmt.Errorf("INCR %s answered %d, not above %d answered before", lwtCounter, v, s.counter)
	}
	s.counter = v
	var a, b *redis.IntCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		a = p.Incr(ctx, lwtA)
		b = p.Incr(ctx, lwtB)
		return nil
	}); err != nil {
		return fmt.Errorf("MULTI INCR %s INCR %s EXEC: %w", lwtA, lwtB, err)
	}
	if a.Val() != b.Val() {
		return fmt.Errorf("MULTI INCR %s INCR %s EXEC answered %d and %d, not equal", lwtA, lwtB, a.Val(), b.Val())
	}
	return nil
}

// definitionAt is the default keyspace's definition as n describes it.
func definitionAt(ctx context.Context, n *node) (string, error) {
	conn, err := client.DialNode(n.client, client.Options{})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ks, err := kurav1.NewAdminClient(conn).DescribeKeyspace(callCtx, &kurav1.DescribeKeyspaceRequest{Name: "default"})
	if err != nil {
		return "", client.Explain(err)
	}
	transactions := ks.GetTransactions()
	if transactions == "" {
		transactions = "key"
	}
	out := "replication " + ks.GetReplication() + ", partitioner " + ks.GetPartitioner() + ", transactions " + transactions
	if ks.GetCollectionInstances() {
		out += ", element records on their collection's instance"
	}
	return out, nil
}

// errStopped ends polling when the run is interrupted.
var errStopped = errors.New("interrupted")

// poll runs try every second until it returns nil or timeout passes; it returns the
// last error, and how long it took.
func poll(ctx context.Context, timeout time.Duration, try func() error) (time.Duration, error) {
	began := time.Now()
	for {
		err := try()
		if err == nil {
			return time.Since(began), nil
		}
		if time.Since(began) > timeout {
			return time.Since(began), err
		}
		select {
		case <-ctx.Done():
			return time.Since(began), fmt.Errorf("%w (last: %v)", errStopped, err)
		case <-time.After(time.Second):
		}
	}
}
