package datapath

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/collection/counter"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// counter runs the commands of conflict-free counters (docs/redis-types.md "Counters")
// through the coordinator as the Redis front end does, by internal/core/collection/counter's rule:
// incr node=ID key=K [by=N] [without=header] is a batch of one step by the node's writer
// (its actor the node, incarnation 1): a read of the counter, then one write of the
// header, the shard and any offsets, answering the counter after the step; without=header
// leaves the header out of the write, as when the header's copies have not reached the
// replicas yet (coord.WriteCounter writes the header and the shard as separate records);
// counter node=ID key=K prints the
// value, or absent; delcounter node=ID key=K deletes as DEL does, the header by a
// transaction at SERIAL, then an offset for every shard a read finds.
func (s *scenario) counter(d *datadriven.TestData, keyspace string, arg func(string) string, cl consistency.Level,
	timed func(func(ctx context.Context) (string, error)) (string, error)) (string, error) {
	node := arg("node")
	co, err := s.c.Coordinator(node)
	if err != nil {
		return "", err
	}
	key := []byte(arg("key"))
	return timed(func(ctx context.Context) (string, error) {
		switch d.Cmd {
		case "incr":
			step := int64(1)
			if by := arg("by"); by != "" {
				if step, err = strconv.ParseInt(by, 10, 64); err != nil {
					return "", err
				}
			}
			if without := arg("without"); without != "" && without != "header" {
				return "", fmt.Errorf("incr leaves out only the header, not %q", without)
			}
			return s.increment(ctx, co, keyspace, node, key, step, arg("without") == "", cl)
		case "delcounter":
			res, err := co.Update(ctx, keyspace, key, consistency.Serial, func(_ lww.Record, found bool) (lww.Record, bool, error) {
				return lww.Record{Tombstone: true}, found, nil
			})
			if err != nil || !res.Applied {
				return "not found", err
			}
			read, err := co.ReadCounter(ctx, keyspace, key, cl)
			if err != nil {
				return "", err
			}
			offsets := counter.Reset(key, counter.Fold(key, read.Elements), "", 0)
			_, err = co.WriteCounter(ctx, keyspace, key, coord.CounterWrite{Stamped: offsets}, cl)
			return fmt.Sprintf("deleted, %d shards removed", len(offsets)), err
		}
		read, err := co.ReadCounter(ctx, keyspace, key, cl)
		if err != nil || !read.Live {
			return "absent", err
		}
		sum, ok := counter.Sum(counter.Fold(key, read.Elements), "")
		if !ok {
			return "", counter.ErrSum
		}
		return fmt.Sprintf("counter %d (%d records)", sum, len(read.Elements)), nil
	})
}

// increment is one batch of node's writer of key, step its only increment; withHeader
// false leaves the header out of its write.
func (s *scenario) increment(ctx context.Context, co *coord.Coordinator, keyspace, node string, key []byte, step int64, withHeader bool, cl consistency.Level) (string, error) {
	id := node + "\x00" + string(key)
	if s.counters == nil {
		s.counters = map[string]counter.Writer{}
	}
	w, ok := s.counters[id]
	if !ok {
		w = counter.Writer{Actor: counter.Actor(node, 1)}
	}
	read, err := co.ReadCounter(ctx, keyspace, key, cl)
	if err != nil {
		return "", err
	}
	if read.Live && read.Header.Type != lww.Counter {
		return "", fmt.Errorf("key %q holds a %v", key, read.Header.Type)
	}
	plan, err := w.Increment(key, counter.Read{Live: read.Live, DiedAt: read.DiedAt(), Elements: read.Elements}, []int64{step})
	if err == nil {
		err = plan.Errs[0]
	}
	if err != nil {
		return "", err
	}
	if plan.Write {
		header := lww.Record{Type: lww.Counter}
		if read.Live {
			header.ExpiresAt = read.Header.ExpiresAt
		}
		write := coord.CounterWrite{
			Elements: []lww.Record{{Key: counter.ShardKey(key, w.Actor), Value: counter.EncodeTotal(plan.Total)}},
			Stamped:  plan.Offsets,
		}
		if withHeader {
			write.Header = &header
		}
		t, err := co.WriteCounter(ctx, keyspace, key, write, cl)
		if t != 0 {
			// Written or perhaps written: the writer's next total carries it.
			w.Total, w.At = plan.Total, t
			s.counters[id] = w
		}
		if err != nil {
			return "", err
		}
	}
	return strconv.FormatInt(plan.Values[0], 10), nil
}
