package sched

import (
	"fmt"
	"strings"
)

// Class is the kind of a read, which is what ReS prioritises by.
type Class uint8

// The classes of reads, in ReS's order of priority.
const (
	LocalGet  Class = iota // a point read (get, LDR chunk read) this node coordinates
	RemoteGet              // a point read served for another coordinator
	ScanPage               // one page of a range scan (local or remote)
)

// NumClasses is the number of classes, the length of Stats.ByClass.
const NumClasses = 3

// String names the class as metrics label it: "local_get", "remote_get", "scan_page".
func (c Class) String() string {
	switch c {
	case LocalGet:
		return "local_get"
	case RemoteGet:
		return "remote_get"
	case ScanPage:
		return "scan_page"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Discipline is how the read stage's queue orders reads of different classes.
type Discipline uint8

// The queue disciplines.
const (
	FIFO Discipline = iota // the paper's O: arrival order
	ReS                    // strict priority: local gets > remote gets > scan pages
	Fair                   // kura's own: earliest deadline first, starvation-free (see the package doc)
)

// String is the discipline's name in a policy: "fifo", "res" or "fair".
func (d Discipline) String() string {
	switch d {
	case FIFO:
		return "fifo"
	case ReS:
		return "res"
	case Fair:
		return "fair"
	}
	return fmt.Sprintf("discipline(%d)", uint8(d))
}

// Policy is a node's read policy. Queue orders the read stage; Parallel (P) is the
// coordinator's: send a scan's sub-requests at once; RaS orders scan pages among
// themselves (fewer nodes waited for first, then smaller limit) and takes priority
// updates.
type Policy struct {
	Queue    Discipline
	Parallel bool
	RaS      bool
}

// ParsePolicy reads "fifo", "res", "fair", "parallel", "ras", and '+'-joined
// combinations ("res+parallel", "parallel+ras", "res+parallel+ras"), plus the paper's
// names "O", "ReS", "P", "ReS+P", "P+RaS", "A" (= res+parallel+ras) and "kura"
// (= fair+parallel+ras), case-insensitive. A part may appear once and a policy has at
// most one queue discipline (fifo/O, res, fair); "A" and "kura" stand alone.
func ParsePolicy(s string) (Policy, error) {
	whole := strings.ToLower(strings.TrimSpace(s))
	switch whole {
	case "":
		return Policy{}, fmt.Errorf("sched: empty read policy (want e.g. fifo, res+parallel+ras, kura)")
	case "a":
		return Policy{Queue: ReS, Parallel: true, RaS: true}, nil
	case "kura":
		return Policy{Queue: Fair, Parallel: true, RaS: true}, nil
	}
	var p Policy
	seen := map[string]bool{}
	queue := ""
	for _, raw := range strings.Split(whole, "+") {
		part := strings.TrimSpace(raw)
		name := part
		switch part {
		case "o":
			name = "fifo"
		case "p":
			name = "parallel"
		}
		if seen[name] {
			return Policy{}, fmt.Errorf("sched: read policy %q: %s given twice", s, name)
		}
		seen[name] = true
		switch name {
		case "fifo", "res", "fair":
			if queue != "" {
				return Policy{}, fmt.Errorf("sched: read policy %q: two queue disciplines, %s and %s", s, queue, name)
			}
			queue = name
			p.Queue = map[string]Discipline{"fifo": FIFO, "res": ReS, "fair": Fair}[name]
		case "parallel":
			p.Parallel = true
		case "ras":
			p.RaS = true
		case "":
			return Policy{}, fmt.Errorf("sched: read policy %q: empty part", s)
		case "a", "kura":
			return Policy{}, fmt.Errorf("sched: read policy %q: %s names a whole policy and cannot be combined", s, part)
		default:
			return Policy{}, fmt.Errorf("sched: read policy %q: unknown part %q (want fifo, res, fair, parallel, ras, or O, ReS, P, RaS, A, kura)", s, part)
		}
	}
	return p, nil
}

// String is the policy's canonical form, which ParsePolicy reads back: the discipline
// then "+parallel" and "+ras"; fifo is left out when another part names the policy
// ("parallel+ras", but "fifo" alone).
func (p Policy) String() string {
	var parts []string
	if p.Queue != FIFO || (!p.Parallel && !p.RaS) {
		parts = append(parts, p.Queue.String())
	}
	if p.Parallel {
		parts = append(parts, "parallel")
	}
	if p.RaS {
		parts = append(parts, "ras")
	}
	return strings.Join(parts, "+")
}

// Variant is a named policy of the paper's experiment.
type Variant struct {
	Name   string
	Policy Policy
}

// Variants lists the paper's variants O, ReS, P, ReS+P, P+RaS, A, then kura's own
// (fair+parallel+ras), in that order: the order the bench prints them in.
func Variants() []Variant {
	return []Variant{
		{"O", Policy{Queue: FIFO}},
		{"ReS", Policy{Queue: ReS}},
		{"P", Policy{Queue: FIFO, Parallel: true}},
		{"ReS+P", Policy{Queue: ReS, Parallel: true}},
		{"P+RaS", Policy{Queue: FIFO, Parallel: true, RaS: true}},
		{"A", Policy{Queue: ReS, Parallel: true, RaS: true}},
		{"kura", Policy{Queue: Fair, Parallel: true, RaS: true}},
	}
}
