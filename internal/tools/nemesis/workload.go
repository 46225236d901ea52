package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
)

// Workload describes what the clients do.
type Workload struct {
	Keyspace string
	Level    consistency.Level
	Clients  int
	// RatePerSecond bounds each client's operations per second, so that the run leaves
	// the machine some room and the history stays readable.
	RatePerSecond float64
	// Keys is the number of cold keys; HotKeys more receive half of all operations, so
	// that they are overwritten, deleted and read concurrently.
	Keys, HotKeys int
	// OpTimeout bounds each operation; one that runs out is indeterminate.
	OpTimeout time.Duration
	Seed      int64
}

// The mix of operations: the share of puts, deletes and scans; the rest are gets.
// Redis clients do gets instead of scans: SCAN returns keys without values.
const (
	putShare    = 0.45
	deleteShare = 0.10
	scanShare   = 0.05
)

// scanLimit bounds a scan; the checker reads keys past a cut-off scan as unobserved.
const scanLimit = 1000

// tally counts completions by type, for the progress lines.
type tally struct {
	ok, fail, info atomic.Int64
}

func (t *tally) add(typ Type) {
	switch typ {
	case TypeOK:
		t.ok.Add(1)
	case TypeFail:
		t.fail.Add(1)
	default:
		t.info.Add(1)
	}
}

func (t *tally) String() string {
	ok, fail, info := t.ok.Load(), t.fail.Load(), t.info.Load()
	return fmt.Sprintf("%d ops: %d ok, %d fail, %d info", ok+fail+info, ok, fail, info)
}

// runWorkload runs the clients until ctx ends, then waits for their last operations.
// Even clients speak gRPC, odd ones the Redis protocol when the nodes have RESP
// addresses (not when attached).
func (c *Cluster) runWorkload(ctx context.Context, w Workload, rec *Recorder, counts *tally) {
	// go-redis logs every failed dial; refused connections are the faults at work, and
	// the history records each failed operation already.
	redis.SetLogger(silent{})
	var ids atomic.Int64
	var wg sync.WaitGroup
	for i := range w.Clients {
		via := "grpc"
		if i%2 == 1 && !c.attached {
			via = "resp"
		}
		cl := &worker{id: i + 1, via: via, c: c, w: w, rec: rec, counts: counts, ids: &ids,
			rng: rand.New(rand.NewPCG(uint64(w.Seed), uint64(i+1))), redis: map[string]*redis.Client{}}
		wg.Go(func() {
			defer cl.close()
			cl.run(ctx)
		})
	}
	wg.Wait()
}

// worker is one client: it sends each operation to a node drawn at random, once (a
// retry would hide whether the first attempt happened), and records it.
type worker struct {
	id     int
	via    string
	c      *Cluster
	w      Workload
	rec    *Recorder
	counts *tally
	ids    *atomic.Int64
	rng    *rand.Rand
	seq    int
	redis  map[string]*redis.Client // by node id
}

func (w *worker) run(ctx context.Context) {
	interval := time.Duration(float64(time.Second) / w.w.RatePerSecond)
	next := time.Now()
	for ctx.Err() == nil {
		w.step()
		next = next.Add(interval)
		if wait := time.Until(next); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		} else {
			next = time.Now()
		}
	}
}

// step draws one operation, runs it and records its invoke and completion. The run's
// end does not cancel it: an operation cut short would only be indeterminate.
func (w *worker) step() {
	n := w.c.nodes[w.rng.IntN(len(w.c.nodes))]
	e := Event{Type: TypeInvoke, Op: w.ids.Add(1), Client: w.id, Via: w.via, Node: n.ID}
	switch r := w.rng.Float64(); {
	case r < putShare:
		w.seq++
		e.F, e.Key, e.Value = Put, w.key(), fmt.Sprintf("c%d-%d", w.id, w.seq)
	case r < putShare+deleteShare:
		e.F, e.Key = Delete, w.key()
	case r < putShare+deleteShare+scanShare && w.via == "grpc":
		e.F, e.Limit = Scan, scanLimit
	default:
		e.F, e.Key = Get, w.key()
	}
	// Half the gRPC reads go as a GetMany of the key and another, the batched path a
	// client's waiting reads take (coord.GetAll); only the first key's answer is part
	// of the history. Half the gRPC puts go as a PutMany with a second write, the
	// batched path of waiting writes (coord.PutEach): both are part of the history, the
	// second as an operation of its own.
	var companion *Event
	if (e.F == Get || e.F == Put) && w.via == "grpc" && w.rng.IntN(2) == 0 {
		companion = &Event{Type: TypeInvoke, Client: w.id, Via: w.via, Node: n.ID, F: e.F, Key: w.key()}
		if e.F == Put {
			w.seq++
			companion.Op, companion.Value = w.ids.Add(1), fmt.Sprintf("c%d-%d", w.id, w.seq)
		}
	}
	w.rec.Record(e)
	if companion != nil && companion.F == Put {
		w.rec.Record(*companion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.w.OpTimeout)
	defer cancel()
	var done, companionDone Event
	if w.via == "grpc" {
		done, companionDone = w.grpc(ctx, n, e, companion)
	} else {
		done = w.resp(ctx, n, e)
	}
	w.complete(e, done)
	if companion != nil && companion.F == Put {
		w.complete(*companion, companionDone)
	}
}

// complete records done, the completion of operation e, and counts it.
func (w *worker) complete(e, done Event) {
	done.Op, done.Client, done.Via, done.Node, done.F, done.Key = e.Op, e.Client, e.Via, e.Node, e.F, e.Key
	w.rec.Record(done)
	w.counts.add(done.Type)
}

// key draws a key: a hot one half of the time.
func (w *worker) key() string {
	if w.w.HotKeys > 0 && (w.w.Keys == 0 || w.rng.IntN(2) == 0) {
		return fmt.Sprintf("hot-%02d", w.rng.IntN(w.w.HotKeys))
	}
	return fmt.Sprintf("key-%04d", w.rng.IntN(w.w.Keys))
}

// grpc runs an operation through the generated client, so that reads return their
// version's timestamp. With a companion, a Get reads both keys in one GetMany (the
// companion's answer is not returned), and a Put writes both in one PutMany, the
// companion's completion returned second.
func (w *worker) grpc(ctx context.Context, n *node, e Event, companion *Event) (done, companionDone Event) {
	kv := kurav1.NewKVClient(n.conn)
	level := kurav1.Consistency(kurav1.Consistency_value[w.w.Level.String()])
	ks, key := w.w.Keyspace, []byte(e.Key)
	var err error
	switch e.F {
	case Put:
		if companion == nil {
			var resp *kurav1.PutResponse
			if resp, err = kv.Put(ctx, &kurav1.PutRequest{Keyspace: ks, Key: key, Value: []byte(e.Value), Consistency: level}); err == nil {
				done.Timestamp = resp.GetTimestamp()
			}
			break
		}
		var many *kurav1.PutManyResponse
		many, err = kv.PutMany(ctx, &kurav1.PutManyRequest{Keyspace: ks, Consistency: level, Items: []*kurav1.PutManyItem{
			{Key: key, Value: []byte(e.Value)}, {Key: []byte(companion.Key), Value: []byte(companion.Value)}}})
		if err == nil && len(many.GetResults()) != 2 {
			err = status.Errorf(codes.Internal, "PutMany of 2 items answered %d", len(many.GetResults()))
		}
		if err != nil {
			// The call failed whole: both writes ended as it did.
			companionDone = putDone(nil, err)
			break
		}
		return putDone(many.GetResults()[0], nil), putDone(many.GetResults()[1], nil)
	case Delete:
		var resp *kurav1.DeleteResponse
		if resp, err = kv.Delete(ctx, &kurav1.DeleteRequest{Keyspace: ks, Key: key, Consistency: level}); err == nil {
			done.Timestamp = resp.GetTimestamp()
		}
	case Get:
		var resp *kurav1.GetResponse
		if companion == nil {
			resp, err = kv.Get(ctx, &kurav1.GetRequest{Keyspace: ks, Key: key, Consistency: level})
		} else {
			var many *kurav1.GetManyResponse
			many, err = kv.GetMany(ctx, &kurav1.GetManyRequest{Keyspace: ks, Keys: [][]byte{key, []byte(companion.Key)}, Consistency: level})
			switch {
			case err != nil:
			case len(many.GetResults()) != 2:
				err = status.Errorf(codes.Internal, "GetMany of 2 keys answered %d", len(many.GetResults()))
			case many.GetResults()[0].GetCode() != 0:
				first := many.GetResults()[0]
				err = status.Error(codes.Code(first.GetCode()), first.GetMessage())
			default:
				resp = many.GetResults()[0].GetResponse()
			}
		}
		if err == nil {
			done.Found, done.Value, done.Timestamp = resp.GetFound(), string(resp.GetValue()), resp.GetTimestamp()
		}
	case Scan:
		var resp *kurav1.ScanResponse
		if resp, err = kv.Scan(ctx, &kurav1.ScanRequest{Keyspace: ks, Limit: int32(e.Limit), Consistency: level}); err == nil {
			for _, it := range resp.GetItems() {
				done.Items = append(done.Items, Item{Key: string(it.GetKey()), Value: string(it.GetValue()), Timestamp: it.GetTimestamp()})
			}
		}
	}
	done.Type = classifyGRPC(err)
	if err != nil {
		done.Error = status.Convert(err).Message()
	}
	return done, companionDone
}

// putDone is the completion of a put answered by result, an item of a PutMany, or
// ended by err.
func putDone(result *kurav1.PutManyResult, err error) Event {
	if err == nil && result.GetCode() != 0 {
		err = status.Error(codes.Code(result.GetCode()), result.GetMessage())
	}
	done := Event{Type: classifyGRPC(err), Timestamp: result.GetResponse().GetTimestamp()}
	if err != nil {
		done.Error = status.Convert(err).Message()
	}
	return done
}

// classifyGRPC tells an operation that definitely did not happen from one that may
// have: the coordinator's "unavailable:" is answered before anything is written, a
// request the server rejected as invalid did nothing, and a connection that could not
// be made sent nothing. Anything else (a timeout, a connection lost mid-request, an
// internal error) is indeterminate.
func classifyGRPC(err error) Type {
	if err == nil {
		return TypeOK
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.InvalidArgument, codes.NotFound:
		return TypeFail
	case codes.Unavailable:
		if strings.HasPrefix(st.Message(), "unavailable:") || strings.Contains(st.Message(), "Error while dialing") {
			return TypeFail
		}
	}
	return TypeInfo
}

// resp runs an operation through the Redis protocol, on a connection to n set to the
// run's keyspace and level. Its answers carry no timestamps.
func (w *worker) resp(ctx context.Context, n *node, e Event) Event {
	rdb := w.redisClient(n)
	var done Event
	var err error
	switch e.F {
	case Put:
		err = rdb.Set(ctx, e.Key, e.Value, 0).Err()
	case Delete:
		var deleted int64
		deleted, err = rdb.Del(ctx, e.Key).Result()
		done.Noop = err == nil && deleted == 0
	case Get:
		done.Value, err = rdb.Get(ctx, e.Key).Result()
		done.Found = err == nil
		if errors.Is(err, redis.Nil) {
			err = nil
		}
	}
	done.Type = classifyRESP(err)
	if err != nil {
		done.Error = err.Error()
	}
	return done
}

// classifyRESP is classifyGRPC for the Redis protocol: UNAVAILABLE replies and refused
// connections did nothing; TIMEOUT replies, other errors and broken connections may
// have.
func classifyRESP(err error) Type {
	if err == nil {
		return TypeOK
	}
	var reply redis.Error
	if errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "UNAVAILABLE ") {
		return TypeFail
	}
	var netErr *net.OpError
	if errors.As(err, &netErr) && netErr.Op == "dial" {
		return TypeFail
	}
	return TypeInfo
}

// redisClient returns the worker's connection to n, made on first use: one connection,
// no retries (a retried write could happen twice, the first attempt unrecorded).
func (w *worker) redisClient(n *node) *redis.Client {
	if rdb, ok := w.redis[n.ID]; ok {
		return rdb
	}
	ks, level := w.w.Keyspace, w.w.Level.String()
	rdb := redis.NewClient(&redis.Options{
		Addr: n.resp, Protocol: 2, DisableIdentity: true,
		PoolSize: 1, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		DialTimeout: w.w.OpTimeout, ReadTimeout: w.w.OpTimeout, WriteTimeout: w.w.OpTimeout,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			if err := cn.Do(ctx, "KURA.KEYSPACE", ks).Err(); err != nil {
				return err
			}
			return cn.Do(ctx, "KURA.CONSISTENCY", level).Err()
		},
	})
	w.redis[n.ID] = rdb
	return rdb
}

func (w *worker) close() {
	for _, rdb := range w.redis {
		rdb.Close()
	}
}

// silent is a go-redis logger that drops everything.
type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}
