package datapath

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// The scenario commands of transactions over several keys of one partition (keyspaces
// created with transactions=partition, docs/lwt.md):
//
//	txn node=ID keys=K,K,... cl=SERIAL      adds one to each key, in one transaction
//	txnread node=ID keys=K,K,... cl=SERIAL  reads the keys in one transaction
//	txnrace execs=ID,... incrs=ID,... readers=ID,... keys=K,K single=K each=N [crash=ID]
//	txnadd nodes=ID,... key=K each=N         hash K gains a field per transaction
//
// txnrace runs, at once, a client per node of execs adding one to every key of keys in
// one transaction, a client per node of incrs adding one to single alone (a key of the
// same tag, a batch of one on the partition's instance), and a client per node of
// readers reading keys in one transaction, each N times in a row at SERIAL. The client
// of crash loses every commit its node sends from its second transaction on, and its
// node crashes the moment one of them is acknowledged: no commit of it reached anyone, so the rounds after
// must complete it whole. It prints each client's results and what the readers saw.

// incrEach is the transaction that adds one to each key read (absent counts as 0).
func incrEach(_ hlc.Timestamp, cur []coord.KeyRecord) ([]lww.Record, bool, any, error) {
	next := make([]lww.Record, len(cur))
	for i, r := range cur {
		n := 0
		if r.Found {
			var err error
			if n, err = strconv.Atoi(string(r.Record.Value)); err != nil {
				return nil, false, nil, err
			}
		}
		next[i] = lww.Record{Key: r.Key, Value: []byte(strconv.Itoa(n + 1))}
	}
	return next, true, nil, nil
}

// readOnly is the transaction that writes nothing: its result is the keys as read.
func readOnly(hlc.Timestamp, []coord.KeyRecord) ([]lww.Record, bool, any, error) {
	return nil, false, nil, nil
}

// describeKeys prints records as values separated by spaces, "-" for an absent one.
func describeKeys(records []coord.KeyRecord) string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = "-"
		if r.Found {
			out[i] = string(r.Record.Value)
		}
	}
	return strings.Join(out, " ")
}

// describeWritten prints the values written, separated by spaces.
func describeWritten(records []lww.Record) string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = string(r.Value)
	}
	return strings.Join(out, " ")
}

// partition runs the commands above.
func (s *scenario) partition(d *datadriven.TestData, keyspace string, arg func(string) string, cl consistency.Level,
	timed func(func(ctx context.Context) (string, error)) (string, error)) (string, error) {
	keys := splitKeys(arg("keys"))
	switch d.Cmd {
	case "txn", "txnread":
		co, err := s.c.Coordinator(arg("node"))
		if err != nil {
			return "", err
		}
		fn := incrEach
		if d.Cmd == "txnread" {
			fn = readOnly
		}
		return timed(func(ctx context.Context) (string, error) {
			res, err := co.UpdateBatch(ctx, keyspace, keys, nil, cl, fn)
			switch {
			case err != nil:
				return "", err
			case res.Applied:
				return fmt.Sprintf("applied, was %s, now %s", describeKeys(res.Previous), describeWritten(res.Records)), nil
			}
			return "read " + describeKeys(res.Previous), nil
		})
	}
	if d.Cmd == "txnadd" {
		return s.txnAdd(keyspace, []byte(arg("key")), arg, cl)
	}
	return s.txnRace(d, keyspace, keys, arg, cl)
}

// addCountedField is the transaction that reads hash key whole (a collection of the
// transaction) and adds the field named by the number of fields it found, with the
// header: two transactions that read the same fields would write the same field, and
// the hash would have fewer fields than transactions applied.
func addCountedField(key []byte) coord.BatchFunc {
	return func(_ hlc.Timestamp, cur []coord.KeyRecord) ([]lww.Record, bool, any, error) {
		field := fmt.Sprintf("f%d", len(cur[0].Elements))
		return []lww.Record{
			{Key: key, Type: lww.Hash},
			{Key: element.Key(key, element.HashField, []byte(field)), Value: []byte(field)},
		}, true, field, nil
	}
}

// txnAdd runs, at once, a client per node of nodes running addCountedField on key each
// times in a row, then reads the hash: it prints how many transactions were applied, how
// many fields the hash has, and whether any field was written twice.
func (s *scenario) txnAdd(keyspace string, key []byte, arg func(string) string, cl consistency.Level) (string, error) {
	each, err := strconv.Atoi(arg("each"))
	if err != nil {
		return "", fmt.Errorf("each: %w", err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	written := map[string]int{}
	failed := map[string]int{}
	nodes := strings.Split(arg("nodes"), ",")
	for i, id := range nodes {
		co, err := s.c.Coordinator(id)
		if err != nil {
			return "", err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.c.Run(time.Duration(i) * 37 * time.Microsecond) // no two ballots at one instant
			for range each {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := co.UpdateBatch(ctx, keyspace, [][]byte{key}, [][]byte{key}, cl, addCountedField(key))
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					failed[errorKind(err)]++
				case res.Applied:
					written[res.Reply.(string)]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	coll, err := s.readAtQuorum(nodes[0], keyspace, key)
	if err != nil {
		return "", err
	}
	applied, twice := 0, 0
	for _, n := range written {
		applied += n
		if n > 1 {
			twice++
		}
	}
	return fmt.Sprintf("applied %d, failed %v, fields %d, fields written by two transactions %d", applied, failed, len(coll.Elements), twice), nil
}

// splitKeys reads a comma-separated list of keys.
func splitKeys(list string) [][]byte {
	var keys [][]byte
	for _, k := range strings.Split(list, ",") {
		if k != "" {
			keys = append(keys, []byte(k))
		}
	}
	return keys
}

// errorKind names a transaction's failure in a txnrace's results: contention (nothing
// written), unknown outcome (written or not), or the error's class.
func errorKind(err error) string {
	var contention *coord.ContentionError
	var unknown *coord.UnknownOutcomeError
	switch {
	case errors.As(err, &unknown):
		return "unknown outcome"
	case errors.As(err, &contention):
		return "contention"
	}
	return coord.Classify(err).String()
}

// txnClient is one client of a txnrace and what it saw.
type txnClient struct {
	node, role string
	results    []string
}

func (s *scenario) txnRace(d *datadriven.TestData, keyspace string, keys [][]byte, arg func(string) string, cl consistency.Level) (string, error) {
	each, err := strconv.Atoi(arg("each"))
	if err != nil {
		return "", fmt.Errorf("each: %w", err)
	}
	single := []byte(arg("single"))
	var clients []*txnClient
	for _, role := range []string{"execs", "incrs", "readers"} {
		for _, id := range strings.Split(arg(role), ",") {
			if id != "" {
				clients = append(clients, &txnClient{node: id, role: strings.TrimSuffix(role, "s")})
			}
		}
	}
	crash := arg("crash")
	var wg sync.WaitGroup
	var mu sync.Mutex // orders the crashing client's drops against the log's reads
	for i, client := range clients {
		co, err := s.c.Coordinator(client.node)
		if err != nil {
			return "", err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.c.Run(time.Duration(i) * 37 * time.Microsecond) // no two ballots at one instant
			for op := range each {
				crashing := client.node == crash && op > 0
				if crashing {
					s.c.DropKinds(client.node + ":paxos_commit")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				var result string
				var applied bool
				switch client.role {
				case "exec":
					res, err := co.UpdateBatch(ctx, keyspace, keys, nil, cl, incrEach)
					result, applied = describeWritten(res.Records), res.Applied
					if err != nil {
						result = errorKind(err)
					}
				case "incr":
					res, err := co.UpdateBatch(ctx, keyspace, [][]byte{single}, nil, cl, incrEach)
					result, applied = describeWritten(res.Records), res.Applied
					if err != nil {
						result = errorKind(err)
					}
				default:
					res, err := co.UpdateBatch(ctx, keyspace, keys, nil, cl, readOnly)
					result = describeKeys(res.Previous)
					if err != nil {
						result = errorKind(err)
					}
				}
				cancel()
				mu.Lock()
				client.results = append(client.results, result)
				mu.Unlock()
				if crashing {
					if applied {
						if err := s.c.Crash(client.node); err != nil {
							panic(err)
						}
					}
					s.c.DropKinds()
					if applied {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	var out []string
	torn := 0
	for _, client := range clients {
		out = append(out, fmt.Sprintf("%s %s: %s", client.node, client.role, strings.Join(client.results, ", ")))
		if client.role != "reader" {
			continue
		}
		for _, r := range client.results {
			if values := strings.Fields(r); len(slices.Compact(values)) > 1 {
				torn++
			}
		}
	}
	out = append(out, fmt.Sprintf("reads that saw the keys differ: %d", torn))
	return strings.Join(out, "\n"), nil
}

// readAtQuorum reads collection key of keyspace at QUORUM through node's coordinator,
// once a race is over, for what it left.
func (s *scenario) readAtQuorum(node, keyspace string, key []byte) (coord.Collection, error) {
	co, err := s.c.Coordinator(node)
	if err != nil {
		return coord.Collection{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return co.ReadCollection(ctx, keyspace, key, consistency.Quorum)
}
