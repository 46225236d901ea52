// Package nemesis is kura's Jepsen-style fault harness: it runs a workload against a
// cluster while injecting faults (kill -9, SIGSTOP, partitions, loss and delay, clock
// skew, a wiped disk), records every operation in a history, heals the cluster, reads
// every replica's own copy, and checks the history and the final states against what
// kura promises: last-writer-wins on hybrid-logical-clock timestamps, durable
// acknowledged writes, fresh reads when R + W > RF, identical replicas after repair and
// deletes that stay deleted. It checks no linearizability of plain reads and writes,
// which kura does not promise; counters incremented in lightweight transactions, which
// are linearizable, it holds to what that implies.
package nemesis

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Type is the kind of a history line. Operations follow Jepsen's model: an invoke, then
// exactly one of ok, fail (the operation definitely did not happen) or info (it may or
// may not have happened).
type Type string

// The types of history lines.
const (
	// TypeMeta is the first line: how the run was set up (Meta).
	TypeMeta Type = "meta"
	// TypeInvoke: a client sends an operation.
	TypeInvoke Type = "invoke"
	// TypeOK: the operation happened, with its result.
	TypeOK Type = "ok"
	// TypeFail: the operation definitely did not happen (refused as unavailable before
	// anything was written, an invalid argument, a connection never made).
	TypeFail Type = "fail"
	// TypeInfo: indeterminate (a timeout, a connection lost mid-request): the operation may
	// or may not have happened, and may still happen later.
	TypeInfo Type = "info"
	// TypeNemesis: a fault started or healed.
	TypeNemesis Type = "nemesis"
	// TypeFinal: one version one node stores after the run, as Admin.LocalScan returned it.
	TypeFinal Type = "final"
)

// Func is what an operation does.
type Func string

// The operations of the workload.
const (
	// Put writes a value unique to the operation, so that any read of it names the write.
	Put Func = "put"
	// Delete writes a tombstone.
	Delete Func = "delete"
	// Get reads one key.
	Get Func = "get"
	// Scan reads the keys of [Key, End) in order, up to Limit of them.
	Scan Func = "scan"
	// Incr adds one to a counter key (absent counts as 0) in a lightweight transaction;
	// an ok carries the value it wrote. A key that is incremented is a counter: it takes
	// no put or delete, and every get of it is a read at the Meta's Serial level.
	Incr Func = "incr"
)

// Event is one line of a history. Which fields are set depends on Type and F.
type Event struct {
	Type Type      `json:"type"`
	Time time.Time `json:"time"`
	// Op pairs an invoke with its completion; unique in the history.
	Op int64 `json:"op,omitempty"`
	// Client is the worker that ran the operation.
	Client int `json:"client,omitempty"`
	// Via is the front end used: "grpc" or "resp".
	Via string `json:"via,omitempty"`
	// Node is the node the operation was sent to, or, for a final version, the node that
	// stores it.
	Node string `json:"node,omitempty"`
	F    Func   `json:"f,omitempty"`
	Key  string `json:"key,omitempty"`
	// End is a scan's exclusive end (empty: to the last key), Limit its limit.
	End   string `json:"end,omitempty"`
	Limit int    `json:"limit,omitempty"`
	// Value is a put's value, a found get's value, an acknowledged increment's result,
	// or a final version's value.
	Value string `json:"value,omitempty"`
	// Found says whether a get found the key.
	Found bool `json:"found,omitempty"`
	// Noop marks a Redis DEL that deleted nothing (it replied 0): the key was absent
	// and nothing was written.
	Noop bool `json:"noop,omitempty"`
	// Timestamp is the hybrid-logical-clock timestamp of a put or delete (as the server
	// acknowledged it), of the value a get read, or of a final version; 0 when unknown
	// (the Redis protocol returns none).
	Timestamp uint64 `json:"ts,omitempty"`
	// Items are a scan's results, in key order.
	Items []Item `json:"items,omitempty"`
	// Deleted marks a final version that is a tombstone.
	Deleted bool `json:"deleted,omitempty"`
	// Replicas are the nodes the storing node places a final version's key on.
	Replicas []string `json:"replicas,omitempty"`
	// Error is why an operation failed or is indeterminate.
	Error string `json:"error,omitempty"`
	// Fault describes a nemesis event, Phase says "start" or "heal".
	Fault string `json:"fault,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Wipe marks a fault that wiped a node's disk: until its heal (the node repaired),
	// reads may miss acknowledged writes.
	Wipe bool `json:"wipe,omitempty"`
	// Meta is set on the meta line.
	Meta *Meta `json:"meta,omitempty"`
}

// Item is one key a scan returned.
type Item struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Timestamp uint64 `json:"ts,omitempty"`
}

// Meta describes the run a history comes from; the checker needs the levels and the
// replication to know whether reads must be fresh.
type Meta struct {
	Seed        int64    `json:"seed"`
	Keyspace    string   `json:"keyspace"`
	Replication string   `json:"replication"` // "dc1=2,dc2=1" or "simple=3"
	Consistency string   `json:"consistency"` // the level of every read and write
	Nodes       []string `json:"nodes"`
	DCs         []string `json:"dcs"` // the DC of each node, in the order of Nodes
	Faults      []string `json:"faults"`
	// Serial is the level of the increments and of the reads of their counters (SERIAL,
	// or LOCAL_SERIAL through the coordinators of one DC); empty when there are none.
	Serial string `json:"serial,omitempty"`
	// Altered are the replications a change of replication (kura keyspace alter) may have
	// given the keyspace during the run, beside Replication: a read is held to freshness
	// only where every one of them promises it, and a write counts as held by one copy
	// where any of them acknowledges one.
	Altered []string `json:"altered,omitempty"`
}

// Recorder appends events to a history as JSON lines, safely from many goroutines, and
// keeps them in memory for the checker.
type Recorder struct {
	mu     sync.Mutex
	w      *bufio.Writer
	enc    *json.Encoder
	events []Event
	err    error
}

// NewRecorder records to w (nil: in memory only).
func NewRecorder(w io.Writer) *Recorder {
	r := &Recorder{}
	if w != nil {
		r.w = bufio.NewWriter(w)
		r.enc = json.NewEncoder(r.w)
	}
	return r
}

// Record stamps e with the current time unless it has one, and appends it.
func (r *Recorder) Record(e Event) Event {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if r.enc != nil && r.err == nil {
		r.err = r.enc.Encode(e)
	}
	return e
}

// Flush writes buffered lines out and returns the first write error met.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil && r.err == nil {
		r.err = r.w.Flush()
	}
	return r.err
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Load reads a history written by a Recorder.
func Load(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read decodes a history from JSON lines.
func Read(r io.Reader) ([]Event, error) {
	var events []Event
	dec := json.NewDecoder(r)
	for line := 1; ; line++ {
		var e Event
		if err := dec.Decode(&e); err == io.EOF {
			return events, nil
		} else if err != nil {
			return nil, fmt.Errorf("history event %d: %w", line, err)
		}
		events = append(events, e)
	}
}
