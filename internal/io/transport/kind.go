package transport

import (
	"fmt"
	"sync"
)

// Kind names a message type on the wire and in the accounting ("mutate", "read",
// "gossip" ...). Its number travels in every frame header, so two nodes agree on what a
// frame is only if they agree on the numbers: each kind has a fixed number, chosen once
// and kept for good, in the one table of the wire's kinds (kinds.go).
type Kind uint8

// kinds is the process-wide registry behind RegisterKind, KindByName and Kind.String:
// the wire's kinds, then the tests' own.
var kinds = newKindRegistry()

// RegisterKind registers name as a test's own Kind number and returns it; the wire's
// kinds are constants (kinds.go), so only tests call it, at init. Registering the same
// number and name again returns the same Kind. It panics on a number below 200, where
// the wire's kinds are, on an empty name, and on a number or name already registered
// with a different partner: all are programming errors, found at start-up.
func RegisterKind(number uint8, name string) Kind {
	if number < testKindsMin {
		panic(fmt.Sprintf("transport: RegisterKind(%d, %q): numbers below %d are the wire's kinds (internal/io/transport/kinds.go)", number, name, testKindsMin))
	}
	return kinds.register(number, name)
}

// KindByName returns the Kind registered as name, for code that counts another
// package's messages by name (a benchmark's flag, a test); ok is false if none is.
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

// newKindRegistry returns a registry holding the wire's kinds. Registering them panics
// if a number below the last has no name or two share one, so every binary linking
// transport checks the table as it starts.
func newKindRegistry() *kindRegistry {
	r := new(kindRegistry)
	for number, name := range wireKindNames {
		if number != 0 {
			r.register(uint8(number), name)
		}
	}
	return r
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
