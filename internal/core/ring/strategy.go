package ring

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Strategy decides which members hold the replicas of a token.
type Strategy interface {
	// Name returns "simple", "network" or "each".
	Name() string
	// Replicas returns the replica set for t, primary first, on distinct members. The
	// members share their Tokens with the ring: callers must not modify them.
	Replicas(r *Ring, t Token) []Member
	// ReplicationFactor returns the total number of replicas asked for (the sum over DCs
	// for a network strategy, the count per DC for Each, whose total depends on the
	// ring); a small ring may yield fewer.
	ReplicationFactor() int
	// Wants reports whether a replica set that already holds inDC members of dc, and
	// total members in all, takes one more member of dc. Placements that walk a ring of
	// their own (the DHT's) choose replicas with it.
	Wants(dc string, inDC, total int) bool
	// Validate reports, for users, why r cannot hold the replicas asked for. Callers may
	// still proceed: Replicas then returns as many members as there are.
	Validate(r *Ring) error
	// String returns the strategy in the syntax ParseReplication accepts.
	String() string
}

// DCStrategy is a Strategy with a replica count per datacenter; coordinators type-assert
// to it for per-DC consistency levels such as LOCAL_QUORUM, which mean nothing under
// Simple.
type DCStrategy interface {
	Strategy
	// RFPerDC returns a copy of the replica count per datacenter.
	RFPerDC() map[string]int
}

// Errors for replication settings; callers distinguish them with errors.Is.
var (
	// ErrBadReplication means a replication setting is malformed or asks for no replicas.
	ErrBadReplication = errors.New("ring: bad replication")
	// ErrTooFewNodes means the ring, or one of its DCs, has fewer nodes than replicas
	// asked for.
	ErrTooFewNodes = errors.New("ring: too few nodes for replication factor")
)

// simpleName and eachName are the strategy names of Simple and Each; in
// ParseReplication's syntax they are reserved and cannot name a datacenter.
const (
	simpleName = "simple"
	eachName   = "each"
)

// Simple places rf replicas on the first rf distinct members walking clockwise from the
// token, ignoring datacenters (Cassandra's SimpleStrategy).
func Simple(rf int) Strategy {
	return simpleStrategy{rf: rf, desc: simpleName + "=" + strconv.Itoa(rf)}
}

// Network places rfPerDC[dc] replicas in each datacenter, on distinct nodes: walking
// clockwise, it takes each member whose DC still needs replicas (Cassandra's
// NetworkTopologyStrategy without racks). A DC with fewer nodes than its count gets all
// its nodes. The map is copied. String round-trips through ParseReplication only for DC
// names that are not "simple" and contain no ',', '=' or surrounding spaces.
func Network(rfPerDC map[string]int) DCStrategy {
	s := &networkStrategy{}
	entries := make([]string, 0, len(rfPerDC))
	for _, dc := range slices.Sorted(maps.Keys(rfPerDC)) {
		s.perDC = append(s.perDC, dcReplication{dc: dc, rf: rfPerDC[dc]})
		entries = append(entries, dc+"="+strconv.Itoa(rfPerDC[dc]))
	}
	s.desc = strings.Join(entries, ",")
	return s
}

// Each places rf replicas in every datacenter the ring has, all of a DC's nodes where it
// has fewer: the replication that suits a cluster whose DCs are not known in advance,
// such as the default keyspace's. A DC that joins the ring gains its replicas.
func Each(rf int) Strategy {
	return eachStrategy{rf: rf, desc: eachName + "=" + strconv.Itoa(rf)}
}

// ParseReplication parses a replication setting: "3" or "simple=3" give Simple(3);
// "each=3" gives Each(3); "dc1=2,dc2=1" gives Network with those counts. Spaces around
// entries are ignored.
func ParseReplication(setting string) (Strategy, error) {
	trimmed := strings.TrimSpace(setting)
	if trimmed == "" {
		return nil, fmt.Errorf("%w: empty setting", ErrBadReplication)
	}
	if !strings.ContainsAny(trimmed, "=,") {
		rf, err := parseCount(trimmed)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrBadReplication, setting, err)
		}
		return Simple(rf), nil
	}
	entries := strings.Split(trimmed, ",")
	rfPerDC := make(map[string]int, len(entries))
	for _, entry := range entries {
		dc, count, ok := strings.Cut(entry, "=")
		dc = strings.TrimSpace(dc)
		if !ok || dc == "" {
			return nil, fmt.Errorf("%w %q: entry %q is not dc=count", ErrBadReplication, setting, entry)
		}
		rf, err := parseCount(strings.TrimSpace(count))
		if err != nil {
			return nil, fmt.Errorf("%w %q: dc %q: %w", ErrBadReplication, setting, dc, err)
		}
		if _, dup := rfPerDC[dc]; dup {
			return nil, fmt.Errorf("%w %q: dc %q given twice", ErrBadReplication, setting, dc)
		}
		if dc == simpleName || dc == eachName {
			if len(entries) > 1 {
				return nil, fmt.Errorf("%w %q: %q cannot be combined with datacenters",
					ErrBadReplication, setting, dc)
			}
			if dc == eachName {
				return Each(rf), nil
			}
			return Simple(rf), nil
		}
		rfPerDC[dc] = rf
	}
	return Network(rfPerDC), nil
}

// parseCount parses a replica count, which must be a positive integer.
func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("count %q is not an integer", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("count %d is not positive", n)
	}
	return n, nil
}

// Strategies keep their String (desc), made once: placements are looked up by it on
// every request.
type simpleStrategy struct {
	rf   int
	desc string
}

func (s simpleStrategy) Name() string { return simpleName }

func (s simpleStrategy) ReplicationFactor() int { return s.rf }

func (s simpleStrategy) String() string { return s.desc }

func (s simpleStrategy) Wants(_ string, _, total int) bool { return total < s.rf }

func (s simpleStrategy) Replicas(r *Ring, t Token) []Member {
	if s.rf <= 0 {
		return nil
	}
	replicas := make([]Member, 0, min(s.rf, r.Len()))
	r.Walk(t, func(m Member) bool {
		replicas = append(replicas, m)
		return len(replicas) < s.rf
	})
	return replicas
}

func (s simpleStrategy) Validate(r *Ring) error {
	if s.rf <= 0 {
		return fmt.Errorf("%w: replication factor %d is not positive", ErrBadReplication, s.rf)
	}
	if r.Len() < s.rf {
		return fmt.Errorf("%w: ring has %d nodes, replication factor is %d", ErrTooFewNodes, r.Len(), s.rf)
	}
	return nil
}

// dcReplication is one datacenter's replica count.
type dcReplication struct {
	dc string
	rf int
}

// networkStrategy keeps its counts as a slice sorted by DC: there are few DCs, so a linear
// scan beats a map on the request path and needs no per-call map copy. It is used by
// pointer so that strategies stay comparable with ==.
type networkStrategy struct {
	perDC []dcReplication
	desc  string
}

func (s *networkStrategy) Name() string { return "network" }

func (s *networkStrategy) ReplicationFactor() int {
	total := 0
	for _, d := range s.perDC {
		total += max(d.rf, 0)
	}
	return total
}

func (s *networkStrategy) RFPerDC() map[string]int {
	rfPerDC := make(map[string]int, len(s.perDC))
	for _, d := range s.perDC {
		rfPerDC[d.dc] = d.rf
	}
	return rfPerDC
}

func (s *networkStrategy) String() string { return s.desc }

func (s *networkStrategy) Wants(dc string, inDC, _ int) bool {
	for _, d := range s.perDC {
		if d.dc == dc {
			return inDC < d.rf
		}
	}
	return false
}

func (s *networkStrategy) Replicas(r *Ring, t Token) []Member {
	needed := make([]int, len(s.perDC))
	total := 0
	for i, d := range s.perDC {
		needed[i] = max(d.rf, 0)
		total += needed[i]
	}
	if total == 0 {
		return nil
	}
	replicas := make([]Member, 0, total)
	r.Walk(t, func(m Member) bool {
		for i, d := range s.perDC {
			if d.dc == m.DC && needed[i] > 0 {
				needed[i]--
				total--
				replicas = append(replicas, m)
				break
			}
		}
		return total > 0
	})
	return replicas
}

func (s *networkStrategy) Validate(r *Ring) error {
	if len(s.perDC) == 0 {
		return fmt.Errorf("%w: no datacenters", ErrBadReplication)
	}
	var errs []error
	for _, d := range s.perDC {
		switch nodes := r.nodesIn(d.dc); {
		case d.rf <= 0:
			errs = append(errs, fmt.Errorf("%w: dc %q: replication factor %d is not positive",
				ErrBadReplication, d.dc, d.rf))
		case nodes < d.rf:
			errs = append(errs, fmt.Errorf("%w: dc %q has %d nodes, replication factor is %d",
				ErrTooFewNodes, d.dc, nodes, d.rf))
		}
	}
	return errors.Join(errs...)
}

type eachStrategy struct {
	rf   int
	desc string
}

func (s eachStrategy) Name() string { return eachName }

func (s eachStrategy) ReplicationFactor() int { return s.rf }

func (s eachStrategy) String() string { return s.desc }

func (s eachStrategy) Wants(_ string, inDC, _ int) bool { return inDC < s.rf }

// Replicas walks the whole ring: which DCs it has is known only at the end of the walk.
func (s eachStrategy) Replicas(r *Ring, t Token) []Member {
	if s.rf <= 0 {
		return nil
	}
	var replicas []Member
	inDC := map[string]int{}
	r.Walk(t, func(m Member) bool {
		if inDC[m.DC] < s.rf {
			inDC[m.DC]++
			replicas = append(replicas, m)
		}
		return true
	})
	return replicas
}

// Validate refuses only a count that is not positive: a DC with fewer nodes than rf
// holds its replicas on all of them by design.
func (s eachStrategy) Validate(*Ring) error {
	if s.rf <= 0 {
		return fmt.Errorf("%w: replication factor %d is not positive", ErrBadReplication, s.rf)
	}
	return nil
}
