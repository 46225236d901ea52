// Package consistency defines kura's consistency levels and the arithmetic of how many
// replica acknowledgements, and from which datacenters, each level needs.
package consistency

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Level is a consistency level with Cassandra's meaning.
type Level int

// The levels of plain reads and writes, weakest first, then the two serial levels of
// lightweight transactions. The numbers are the client API's (kura.v1 Consistency).
const (
	Any Level = iota + 1
	One
	Two
	Quorum
	LocalOne
	LocalQuorum
	EachQuorum
	All
	// Serial runs a lightweight transaction's Paxos rounds among every replica of the
	// key, a quorum of them answering: linearizable across DCs, at the cost of WAN round
	// trips.
	Serial
	// LocalSerial runs them among the replicas in the coordinator's DC only, a quorum of
	// those answering: linearizable among the clients of that DC, with no WAN round trip
	// before the answer.
	LocalSerial
)

var levelNames = map[Level]string{
	Any:         "ANY",
	One:         "ONE",
	Two:         "TWO",
	Quorum:      "QUORUM",
	LocalOne:    "LOCAL_ONE",
	LocalQuorum: "LOCAL_QUORUM",
	EachQuorum:  "EACH_QUORUM",
	All:         "ALL",
	Serial:      "SERIAL",
	LocalSerial: "LOCAL_SERIAL",
}

// Levels lists the levels of plain reads and writes, weakest first.
func Levels() []Level {
	return []Level{Any, One, Two, Quorum, LocalOne, LocalQuorum, EachQuorum, All}
}

// SerialLevels lists the levels of lightweight transactions (compare-and-set, serial
// reads).
func SerialLevels() []Level { return []Level{Serial, LocalSerial} }

// IsSerial reports whether l is a level of lightweight transactions, which plain writes
// cannot use.
func (l Level) IsSerial() bool { return l == Serial || l == LocalSerial }

// Commit returns the level a lightweight transaction at serial level l waits for when it
// commits its write to the replicas: QUORUM for SERIAL, LOCAL_QUORUM for LOCAL_SERIAL
// (whose rounds never leave the coordinator's DC). Other levels are their own.
func (l Level) Commit() Level {
	switch l {
	case Serial:
		return Quorum
	case LocalSerial:
		return LocalQuorum
	}
	return l
}

// String returns the level's name as users write it ("LOCAL_QUORUM").
func (l Level) String() string {
	if name, ok := levelNames[l]; ok {
		return name
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ErrUnknownLevel is returned by Parse for a name that is not a level.
var ErrUnknownLevel = errors.New("unknown consistency level")

// Parse reads a level name, case-insensitively ("quorum", "LOCAL_ONE").
func Parse(name string) (Level, error) {
	upper := strings.ToUpper(strings.TrimSpace(name))
	for l, n := range levelNames {
		if n == upper {
			return l, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want one of ANY, ONE, TWO, QUORUM, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM, ALL, SERIAL, LOCAL_SERIAL)", ErrUnknownLevel, name)
}

// Requirement says how many acknowledgements a request needs: Total in all, and at least
// PerDC[dc] from each named datacenter. Hinted counts for ANY only. PerDC may be shared
// between requirements (Require hands out the same map to every LOCAL_QUORUM request
// of a DC): read it, never write it; WithPending copies it.
type Requirement struct {
	Total  int
	PerDC  map[string]int
	Hinted bool // a stored hint counts as an acknowledgement (ANY)
}

// Quorum is a majority of n.
func quorum(n int) int { return n/2 + 1 }

// Require computes what level l needs from a replica set with rfPerDC replicas in each
// datacenter, for a coordinator in localDC. A serial level needs what its Paxos rounds
// wait for: SERIAL a quorum of all replicas (as QUORUM), LOCAL_SERIAL a quorum of the
// local DC's (as LOCAL_QUORUM). A level that the replica set can never satisfy
// (TWO with one replica, LOCAL_ONE with no local replica) yields a requirement larger than
// the replica set; callers report that as unavailable.
func (l Level) Require(rfPerDC map[string]int, localDC string) Requirement {
	total := 0
	for _, n := range rfPerDC {
		total += n
	}
	switch l {
	case Any:
		return Requirement{Total: 1, Hinted: true}
	case One:
		return Requirement{Total: 1}
	case Two:
		return Requirement{Total: 2}
	case Quorum, Serial:
		return Requirement{Total: quorum(total)}
	case LocalOne:
		return Requirement{Total: 1, PerDC: localPerDC(localDC, 1)}
	case LocalQuorum, LocalSerial:
		local := quorum(rfPerDC[localDC])
		return Requirement{Total: local, PerDC: localPerDC(localDC, local)}
	case EachQuorum:
		perDC := make(map[string]int, len(rfPerDC))
		sum := 0
		for dc, n := range rfPerDC {
			if n > 0 {
				perDC[dc] = quorum(n)
				sum += perDC[dc]
			}
		}
		return Requirement{Total: sum, PerDC: perDC}
	case All:
		perDC := make(map[string]int, len(rfPerDC))
		for dc, n := range rfPerDC {
			if n > 0 {
				perDC[dc] = n
			}
		}
		return Requirement{Total: total, PerDC: perDC}
	}
	return Requirement{Total: total + 1} // an unknown level is never satisfiable
}

// localCount is a requirement of n acknowledgements from one DC.
type localCount struct {
	dc string
	n  int
}

// localCounts holds the PerDC maps localPerDC made, at most localCountsMax.
var localCounts struct {
	mu sync.RWMutex
	m  map[localCount]map[string]int
}

// localCountsMax bounds localCounts: a node asks for its own DC's few quorum sizes, so
// the bound is only a guard.
const localCountsMax = 256

// localPerDC returns {dc: n}, the PerDC of the local levels. A coordinator asks for the
// same one on every request of its DC, so each map is made once and shared (requirements
// are read-only) rather than allocated per request.
func localPerDC(dc string, n int) map[string]int {
	key := localCount{dc: dc, n: n}
	localCounts.mu.RLock()
	perDC, ok := localCounts.m[key]
	localCounts.mu.RUnlock()
	if ok {
		return perDC
	}
	perDC = map[string]int{dc: n}
	localCounts.mu.Lock()
	defer localCounts.mu.Unlock()
	if localCounts.m == nil {
		localCounts.m = map[localCount]map[string]int{}
	}
	if len(localCounts.m) < localCountsMax {
		localCounts.m[key] = perDC
	}
	return perDC
}

// Satisfied reports whether acks (acknowledgements counted per datacenter) meet r. Given
// the live replicas per datacenter instead, it says whether r can be met at all.
func (r Requirement) Satisfied(acks map[string]int) bool {
	total := 0
	for _, n := range acks {
		total += n
	}
	if total < r.Total {
		return false
	}
	for dc, need := range r.PerDC {
		if acks[dc] < need {
			return false
		}
	}
	return true
}

// WithPending raises r by one acknowledgement for a pending replica in dc (a node taking
// the range over), counted where the level counts that DC. As in Cassandra, a write
// during a move then sits on the level's share of both the old and the new replica set,
// so a read on either ring finds it.
func (r Requirement) WithPending(dc string) Requirement {
	if r.Hinted {
		return r
	}
	if len(r.PerDC) == 0 {
		r.Total++
		return r
	}
	if _, counted := r.PerDC[dc]; !counted {
		return r
	}
	perDC := make(map[string]int, len(r.PerDC))
	for d, n := range r.PerDC {
		perDC[d] = n
	}
	perDC[dc]++
	r.PerDC, r.Total = perDC, r.Total+1
	return r
}

// Counts tallies replicas per datacenter from a list of their datacenters.
func Counts(dcs []string) map[string]int {
	counts := make(map[string]int, len(dcs))
	for _, dc := range dcs {
		counts[dc]++
	}
	return counts
}

// String describes the requirement for error messages ("2 (dc1: 2)").
func (r Requirement) String() string {
	return CountPerDC(r.Total, r.PerDC)
}

// CountPerDC prints a count and its split over datacenters in name order, "3 (dc1: 2,
// dc2: 1)", the way errors and status lines show replicas per DC; with no DCs, the count
// alone.
func CountPerDC(total int, perDC map[string]int) string {
	if len(perDC) == 0 {
		return strconv.Itoa(total)
	}
	dcs := make([]string, 0, len(perDC))
	for dc := range perDC {
		dcs = append(dcs, dc)
	}
	sort.Strings(dcs)
	parts := make([]string, len(dcs))
	for i, dc := range dcs {
		parts[i] = fmt.Sprintf("%s: %d", dc, perDC[dc])
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}
