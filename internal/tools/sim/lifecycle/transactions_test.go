package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/tools/nemesis"
)

// The scenarios' lightweight transactions: counters incremented under load through
// several nodes and read at SERIAL, held by nemesis's checker to what was acknowledged
// (no increment lost, none counted twice), the instances they ran on, a transaction
// over two keys of one hash tag, and each node's definition of a keyspace.

// transactionCommand runs the scenario commands about transactions; ok is false for a
// command it does not know.
func (s *scenario) transactionCommand(ctx context.Context, d *datadriven.TestData, arg func(string) string, list func(string) []string) (out string, ok bool, err error) {
	switch d.Cmd {
	case "definition":
		// How each running node defines keyspace name: what its transactions run on, and
		// whether it settled the definition.
		return s.definitions(arg("name")), true, nil
	case "increments":
		// A client incrementing counters c0..c(counters-1) in turn, one every interval,
		// through the nodes of via in turn, in the background: what the nodes answered is
		// recorded for the counters command.
		counters, count, err := counterArgs(arg("counters"), arg("count"))
		if err != nil {
			return "", true, err
		}
		every, err := time.ParseDuration(arg("every"))
		if err != nil {
			return "", true, err
		}
		ks, via := arg("keyspace"), list("via")
		s.loads.Add(1)
		go func() {
			defer s.loads.Done()
			for i := range count {
				s.increment(ks, via[i%len(via)], fmt.Sprintf("c%d", i%counters))
				<-time.After(every) // virtual time: the bubble's clock
			}
		}()
		return "started", true, nil
	case "counters":
		// Reads every counter at SERIAL through each node of via (once the increments
		// ended: await), then judges the whole history of the counters.
		counters, _, err := counterArgs(arg("counters"), "0")
		if err != nil {
			return "", true, err
		}
		return s.judgeCounters(ctx, arg("keyspace"), counters, list("via")), true, nil
	case "instances":
		// Which nodes hold the acceptor state of each key's instance and of its
		// partition's, for the keys named: which instances the transactions ran on.
		return s.instances(arg("keyspace"), list("keys")), true, nil
	case "multi":
		// One transaction over the keys named (one hash tag), as Redis's MULTI/EXEC of an
		// INCR of each: it writes each key's count plus one.
		run, err := s.c.Running(arg("node"))
		if err != nil {
			return "", true, err
		}
		return multi(ctx, run.Coordinator(), arg("keyspace"), list("keys")), true, nil
	}
	return "", false, nil
}

func counterArgs(counters, count string) (int, int, error) {
	c, err := strconv.Atoi(counters)
	if err != nil || c < 1 {
		return 0, 0, fmt.Errorf("counters=%q: want a count of 1 or more", counters)
	}
	n, err := strconv.Atoi(count)
	return c, n, err
}

// definitions says how each running node defines keyspace name.
func (s *scenario) definitions(name string) string {
	var out []string
	for _, id := range s.c.Nodes() {
		run, err := s.c.Running(id)
		if err != nil {
			continue
		}
		ks, err := run.Keyspace(name)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", id, err))
		case ks.Timestamp == schema.ImplicitTimestamp:
			out = append(out, fmt.Sprintf("%s: transactions %s, not settled", id, ks.Transactions))
		case ks.Timestamp == schema.SettledTimestamp:
			out = append(out, fmt.Sprintf("%s: transactions %s, settled", id, ks.Transactions))
		default:
			out = append(out, fmt.Sprintf("%s: transactions %s, created", id, ks.Transactions))
		}
	}
	return strings.Join(out, "\n")
}

// increment runs one increment of key through node via, at SERIAL, and records it.
func (s *scenario) increment(keyspace, via, key string) {
	run, err := s.c.Running(via)
	if err != nil {
		return // the client's node is down: it would not connect
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	invoke := s.record(nemesis.Event{Type: nemesis.TypeInvoke, Node: via, F: nemesis.Incr, Key: key})
	res, err := run.Coordinator().Update(ctx, keyspace, []byte(key), consistency.Serial, nemesis.Increment)
	s.rec.Record(nemesis.IncrementDone(invoke, res, err))
}

// record numbers an invocation and records it.
func (s *scenario) record(e nemesis.Event) nemesis.Event {
	s.mu.Lock()
	s.opID++
	e.Op = s.opID
	s.mu.Unlock()
	return s.rec.Record(e)
}

// judgeCounters reads each counter at SERIAL through each node of via, recording the
// reads, and judges the counters' history: the checker's verdict, and how the increments
// ended (each outcome's reasons, without their counts, which depend on timing).
func (s *scenario) judgeCounters(ctx context.Context, keyspace string, counters int, via []string) string {
	var failedReads []string
	for _, id := range via {
		run, err := s.c.Running(id)
		if err != nil {
			failedReads = append(failedReads, err.Error())
			continue
		}
		for k := range counters {
			key := fmt.Sprintf("c%d", k)
			invoke := s.record(nemesis.Event{Type: nemesis.TypeInvoke, Node: id, F: nemesis.Get, Key: key})
			rec, found, err := run.Coordinator().Get(ctx, keyspace, []byte(key), consistency.Serial)
			done := nemesis.Event{Type: nemesis.TypeOK, Op: invoke.Op, Node: id, F: nemesis.Get, Key: key}
			if err != nil {
				done.Type, done.Error = nemesis.TypeInfo, err.Error()
				failedReads = append(failedReads, fmt.Sprintf("%s through %s: %s", key, id, firstLine(err)))
			} else if done.Found = found && !rec.Tombstone; done.Found {
				done.Value, done.Timestamp = string(rec.Value), uint64(rec.Timestamp)
			}
			s.rec.Record(done)
		}
	}
	events := s.rec.Events()
	outcomes := map[string]map[string]bool{}
	for _, e := range events {
		if e.F != nemesis.Incr || e.Type == nemesis.TypeInvoke {
			continue
		}
		why := "acknowledged"
		if e.Type != nemesis.TypeOK {
			why = string(e.Type) + ": " + strings.TrimPrefix(strings.SplitN(e.Error, "\n", 2)[0], "unavailable: ")
		}
		if outcomes[e.Node] == nil {
			outcomes[e.Node] = map[string]bool{}
		}
		outcomes[e.Node][why] = true
	}
	var out []string
	for _, v := range nemesis.Check(events).Verdicts {
		if v.Check != "counter" {
			continue
		}
		line := fmt.Sprintf("counter check: %d violations", v.Violations)
		for _, ex := range v.Examples {
			line += "\n  " + ex
		}
		out = append(out, line)
	}
	for _, id := range slices.Sorted(maps.Keys(outcomes)) {
		out = append(out, fmt.Sprintf("increments through %s: %s", id, strings.Join(slices.Sorted(maps.Keys(outcomes[id])), "; ")))
	}
	for _, why := range failedReads {
		out = append(out, "serial read failed: "+why)
	}
	return strings.Join(out, "\n")
}

// instances says, for each kind of instance (a key's, its partition's), on which
// running nodes some key of keys has acceptor state.
func (s *scenario) instances(keyspace string, keys []string) string {
	held := map[bool][]string{}
	for _, id := range s.c.Nodes() {
		run, err := s.c.Running(id)
		if err != nil {
			continue
		}
		for _, partition := range []bool{false, true} {
			for _, key := range keys {
				in := paxos.Instance{Key: []byte(key)}
				if partition {
					in = paxos.Instance{Key: ring.HashTag([]byte(key)), Partition: true}
				}
				st, err := run.PaxosState(keyspace, in)
				if err == nil && !st.Promised.IsZero() {
					held[partition] = append(held[partition], id)
					break
				}
			}
		}
	}
	on := func(ids []string) string {
		if len(ids) == 0 {
			return "none"
		}
		return strings.Join(ids, ",")
	}
	return fmt.Sprintf("key instances on %s\npartition instances on %s", on(held[false]), on(held[true]))
}

// multi runs one transaction over keys that writes each one's count plus one.
func multi(ctx context.Context, co *coord.Coordinator, keyspace string, names []string) string {
	keys := make([][]byte, len(names))
	for i, k := range names {
		keys[i] = []byte(k)
	}
	res, err := co.UpdateBatch(ctx, keyspace, keys, nil, consistency.Serial, func(_ hlc.Timestamp, cur []coord.KeyRecord) ([]lww.Record, bool, any, error) {
		next := make([]lww.Record, len(cur))
		for i, r := range cur {
			rec, _, err := nemesis.Increment(r.Record, r.Found)
			if err != nil {
				return nil, false, nil, err
			}
			rec.Key = r.Key
			next[i] = rec
		}
		return next, true, nil, nil
	})
	if err != nil {
		return "error: " + firstLine(err)
	}
	var out []string
	for _, r := range res.Records {
		out = append(out, fmt.Sprintf("%s=%s", r.Key, r.Value))
	}
	return "applied: " + strings.Join(out, " ")
}
