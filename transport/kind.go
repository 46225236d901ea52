package transport

import (
	"fmt"
	"sync"
)

// Kind names a message type for accounting ("mutate", "read", "gossip_syn" ...). The
// package that owns a message type registers its kind once, at init, and every node of
// one build gets the same numbers because registration order is fixed by the program.
type Kind uint8

// kindHello marks the handshake frame a dialer sends first; its bytes are counted too,
// because they cross the wire like any other.
var kindHello = RegisterKind("hello")

// kinds is the process-wide registry behind RegisterKind and Kind.String.
var kinds kindRegistry

// RegisterKind returns the Kind for name, registering it on first use. Registering the same
// name again returns the same Kind. It panics on an empty name or past 255 kinds: both are
// programming errors found at start-up.
func RegisterKind(name string) Kind {
	return kinds.register(name)
}

// String returns the registered name, or "kind(N)" for a number nobody registered.
func (k Kind) String() string {
	return kinds.name(k)
}

// kindRegistry maps names to kinds. Kind 0 is never handed out, so a zeroed frame header
// cannot pass for a real message type.
type kindRegistry struct {
	mu     sync.RWMutex
	names  []string // names[k-1] is the name of Kind k
	byName map[string]Kind
}

func (r *kindRegistry) register(name string) Kind {
	if name == "" {
		panic("transport: RegisterKind with an empty name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.byName[name]; ok {
		return k
	}
	if len(r.names) == 255 {
		panic(fmt.Sprintf("transport: RegisterKind(%q): all 255 kinds are taken", name))
	}
	if r.byName == nil {
		r.byName = make(map[string]Kind)
	}
	r.names = append(r.names, name)
	k := Kind(len(r.names))
	r.byName[name] = k
	return k
}

func (r *kindRegistry) name(k Kind) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if k == 0 || int(k) > len(r.names) {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return r.names[k-1]
}
