package transport

import (
	"fmt"
	"sync"
)

// Kind names a message type on the wire and in the accounting ("mutate", "read",
// "gossip" ...). Its number travels in every frame header, so two nodes agree on what a
// frame is only if they agree on the numbers: each kind has a fixed number, chosen once
// and kept for good, which the package that owns the kind passes to RegisterKind at init.
//
// The numbers of kura's internode wire:
//
//	 0  reserved: never a kind, so a zeroed header cannot pass for a message
//	 1  hello          transport: a dialer's first frame, and an acceptor's refusal
//	 2  mutate         replica
//	 3  read           replica
//	 4  scan           replica
//	 5  chunk_read     replica
//	 6  gossip         membership/driver
//	 7  gossip_whois   membership/driver
//	 8  schema         node
//	 9  schema_pull    node
//	10  chord          node
//	11  latency_probe  bench
//	12  stream_range   replica: a page of a range being streamed
//	13  tree_digest    replica (anti-entropy repair)
//	14  stream_gains   node: pull the ranges gained from a leaving or removed node
//	15  ring_pull      node: a new node learns the whole ring from a member
//	16  clock_ping     node: a call answered only with the wall-clock stamp (clock guard)
//	17  paxos_prepare  replica: a lightweight transaction's prepare (promise, state, data)
//	18  paxos_propose  replica: a lightweight transaction's proposal
//	19  paxos_commit   replica: a lightweight transaction's commit
//	20  scan_keys      replica: a page of a replica's live keys in hash order (SCAN)
//	21  offload        replica: writes kept for a sleeping replica (paper 003)
//	22  hints_flush    node: deliver every hint held for the caller now (it is waking)
//	23  power          node: a power transition asked of a node (kura power)
//	24  scan_progress  replica: how many nodes a scan still waits for (RaS priority update)
//	25  rebalance      node: a step of a keyspace's rebalance (sample, copy, drop)
//	26  read_many      replica: point reads of several keys of one keyspace (GetAll)
//
// A new kind takes the next free number and a line here. Numbers are never reused for
// another meaning: a retired kind keeps its line, marked retired. Numbers 200 to 255
// are left to tests, which register kinds of their own.
type Kind uint8

// kindHello marks the handshake frames: a dialer's hello, whose bytes are counted because
// they cross the wire like any other, and an acceptor's refusal.
var kindHello = RegisterKind(1, "hello")

// kinds is the process-wide registry behind RegisterKind, KindByName and Kind.String.
var kinds kindRegistry

// RegisterKind registers name as Kind number and returns it; packages call it at init,
// with the number the table in Kind's documentation gives. Registering the same number
// and name again returns the same Kind. It panics on number 0, on an empty name, and on
// a number or name already registered with a different partner: all are programming
// errors, found at start-up.
func RegisterKind(number uint8, name string) Kind {
	return kinds.register(number, name)
}

// KindByName returns the Kind registered as name, for code that counts another
// package's messages without importing the package; ok is false if none is.
func KindByName(name string) (kind Kind, ok bool) {
	return kinds.byName(name)
}

// String returns the registered name, or "kind(N)" for a number nobody registered.
func (k Kind) String() string {
	return kinds.name(k)
}

// kindRegistry maps numbers to names and back.
type kindRegistry struct {
	mu      sync.RWMutex
	names   [256]string // names[k] is the name of Kind k, "" if unregistered
	numbers map[string]Kind
}

func (r *kindRegistry) register(number uint8, name string) Kind {
	if number == 0 {
		panic(fmt.Sprintf("transport: RegisterKind(0, %q): kind 0 is reserved", name))
	}
	if name == "" {
		panic(fmt.Sprintf("transport: RegisterKind(%d, \"\"): empty name", number))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := Kind(number)
	switch taken := r.names[k]; {
	case taken == name:
		return k
	case taken != "":
		panic(fmt.Sprintf("transport: RegisterKind(%d, %q): %d is already %q", number, name, number, taken))
	}
	if other, ok := r.numbers[name]; ok {
		panic(fmt.Sprintf("transport: RegisterKind(%d, %q): %q is already kind %d", number, name, name, uint8(other)))
	}
	if r.numbers == nil {
		r.numbers = make(map[string]Kind)
	}
	r.names[k] = name
	r.numbers[name] = k
	return k
}

func (r *kindRegistry) byName(name string) (Kind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.numbers[name]
	return k, ok
}

func (r *kindRegistry) name(k Kind) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.names[k] == "" {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return r.names[k]
}
