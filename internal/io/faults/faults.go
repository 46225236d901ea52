// Package faults injects faults into one node, so that a test harness (kura nemesis) can
// partition it, degrade its links and skew its clock on one machine, where netem and
// faketime are not at hand (faketime has no effect on Go binaries). A node carries an
// Injector only when started with --enable-faults; its transport asks the injector about
// every frame, and its hybrid logical clock reads the injector's wall clock.
package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/io/transport"
)

// ErrInvalid marks a fault specification that cannot be applied.
var ErrInvalid = errors.New("invalid faults")

// dcPrefix marks a target that names a whole DC ("dc:tokyo").
const dcPrefix = "dc:"

// everyPeer is the target that matches every peer.
const everyPeer = "*"

// Spec is the set of faults a node injects. The zero Spec injects nothing.
type Spec struct {
	// Partitioned are the peers cut off both ways: a node id, "dc:NAME" for every node
	// of a DC, or "*" for every peer.
	Partitioned []string
	// Links degrade the frames sent to some peers.
	Links []Link
	// ClockOffset is added to the node's wall clock (negative: behind).
	ClockOffset time.Duration
}

// Link degrades the frames a node sends to the peers Target matches.
type Link struct {
	// Target is a node id, "dc:NAME", or "*" for every peer; for a peer several links
	// match, the most specific applies (id, then DC, then "*").
	Target string
	// Loss is the probability that a request or one-way message is dropped.
	Loss float64
	// Delay is added to the delivery of every frame.
	Delay time.Duration
}

// Validate reports the first problem with s, wrapping ErrInvalid.
func (s Spec) Validate() error {
	seen := map[string]bool{}
	for _, target := range s.Partitioned {
		if err := validTarget(target); err != nil {
			return fmt.Errorf("%w: partition: %w", ErrInvalid, err)
		}
	}
	for _, l := range s.Links {
		switch err := validTarget(l.Target); {
		case err != nil:
			return fmt.Errorf("%w: link: %w", ErrInvalid, err)
		case seen[l.Target]:
			return fmt.Errorf("%w: two links to %q", ErrInvalid, l.Target)
		case l.Loss < 0 || l.Loss > 1:
			return fmt.Errorf("%w: link to %q: loss %v outside [0, 1]", ErrInvalid, l.Target, l.Loss)
		case l.Delay < 0:
			return fmt.Errorf("%w: link to %q: negative delay %v", ErrInvalid, l.Target, l.Delay)
		}
		seen[l.Target] = true
	}
	return nil
}

func validTarget(target string) error {
	if target == "" || target == dcPrefix {
		return fmt.Errorf("empty target %q (want a node id, dc:NAME or *)", target)
	}
	return nil
}

// Empty reports whether s injects nothing.
func (s Spec) Empty() bool {
	return len(s.Partitioned) == 0 && len(s.Links) == 0 && s.ClockOffset == 0
}

// String describes s for logs, e.g. "partitioned from n2,dc:dc2; link * loss 0.1 delay
// 50ms; clock +30s".
func (s Spec) String() string {
	if s.Empty() {
		return "none"
	}
	var parts []string
	if len(s.Partitioned) > 0 {
		parts = append(parts, "partitioned from "+strings.Join(s.Partitioned, ","))
	}
	for _, l := range s.Links {
		parts = append(parts, fmt.Sprintf("link %s loss %g delay %v", l.Target, l.Loss, l.Delay))
	}
	if s.ClockOffset != 0 {
		parts = append(parts, fmt.Sprintf("clock %+v", s.ClockOffset))
	}
	return strings.Join(parts, "; ")
}

// Injector applies a Spec to a node's transport (transport.Faults) and wall clock (Now).
// It is safe for concurrent use.
type Injector struct {
	mu          sync.Mutex
	spec        Spec
	partitioned map[string]bool
	links       map[string]Link
	clockOffset time.Duration
	rng         *rand.Rand // loss; seeded, so a run's drops repeat as far as timing allows
}

// New returns an injector that injects nothing until Set.
func New(seed uint64) *Injector {
	return &Injector{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Set replaces the faults injected; the zero Spec heals the node.
func (i *Injector) Set(s Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	partitioned := map[string]bool{}
	for _, target := range s.Partitioned {
		partitioned[target] = true
	}
	links := map[string]Link{}
	for _, l := range s.Links {
		links[l.Target] = l
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.spec, i.partitioned, i.links, i.clockOffset = s, partitioned, links, s.ClockOffset
	return nil
}

// Spec returns the faults injected now.
func (i *Injector) Spec() Spec {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.spec
}

// Now returns the node's wall clock: the machine's, shifted by the clock offset.
func (i *Injector) Now() time.Time {
	i.mu.Lock()
	offset := i.clockOffset
	i.mu.Unlock()
	return time.Now().Add(offset)
}

// Outgoing implements transport.Faults.
func (i *Injector) Outgoing(p transport.Peer, lossy bool) (drop bool, delay time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.partitionedLocked(p) {
		return true, 0
	}
	l, ok := i.linkLocked(p)
	if !ok {
		return false, 0
	}
	if lossy && l.Loss > 0 && i.rng.Float64() < l.Loss {
		return true, 0
	}
	return false, l.Delay
}

// Incoming implements transport.Faults.
func (i *Injector) Incoming(p transport.Peer) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.partitionedLocked(p)
}

func (i *Injector) partitionedLocked(p transport.Peer) bool {
	return len(i.partitioned) > 0 && (i.partitioned[p.ID] || i.partitioned[dcPrefix+p.DC] || i.partitioned[everyPeer])
}

// linkLocked returns the most specific link matching p.
func (i *Injector) linkLocked(p transport.Peer) (Link, bool) {
	if len(i.links) == 0 {
		// Every message asks: without links, skip building the DC's target name.
		return Link{}, false
	}
	for _, target := range []string{p.ID, dcPrefix + p.DC, everyPeer} {
		if l, ok := i.links[target]; ok {
			return l, true
		}
	}
	return Link{}, false
}
