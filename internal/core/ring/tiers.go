package ring

import "slices"

// ReplicasFor returns t's replica set under s, primary first: the strategy's set with
// the always-on rule applied. Every replica set computed from a strategy on a ring goes
// through here (a Placement precomputes its sets with it), so that no path places a
// range on sleepable members only. The members share their Tokens with the ring:
// callers must not modify them.
//
// The always-on rule (paper 003: every object keeps a replica on a node that is not
// powered off) looks at each scope of the set: the whole set under simple, and each
// DC's members in the set under network and each, whose replica counts are per DC. A
// scope with no tier-0 member, in a ring that has a tier-0 member in that scope, has
// its last member (the furthest clockwise) replaced by the first tier-0 member of the
// scope walking clockwise from t; the other members keep their places, the primary
// first. The last member goes because it is the one the strategy reached last: the
// primary and the nearer replicas stay where a ring without tiers puts them, so a range
// moves as little as the rule allows. A ring whose members are all tier 0 takes the
// strategy's set unchanged.
func (r *Ring) ReplicasFor(s Strategy, t Token) []Member {
	replicas := s.Replicas(r, t)
	if !r.tiered {
		return replicas
	}
	return r.keepAlwaysOn(s.Name() != simpleName, t, replicas)
}

// keepAlwaysOn applies the always-on rule to replicas, t's set; perDC makes each DC a
// scope of its own. It returns replicas itself when no scope lacks a tier-0 member, and
// a changed copy otherwise, since a strategy does not promise a set of its own.
func (r *Ring) keepAlwaysOn(perDC bool, t Token, replicas []Member) []Member {
	// A scope is a DC, or "" for the whole set: both are never in play at once.
	scopeOf := func(m Member) string {
		if perDC {
			return m.DC
		}
		return ""
	}
	last := map[string]int{}     // a scope -> the index of its last member in the set
	covered := map[string]bool{} // a scope -> whether the set has a tier-0 member in it
	for i, m := range replicas {
		last[scopeOf(m)] = i
		covered[scopeOf(m)] = covered[scopeOf(m)] || m.Tier == 0
	}
	replace := map[string]int{} // a scope that lacks a tier-0 member -> the index to replace
	for scope, i := range last {
		if !covered[scope] && r.hasAlwaysOn(perDC, scope) {
			replace[scope] = i
		}
	}
	if len(replace) == 0 {
		return replicas
	}
	replicas = slices.Clone(replicas)
	// The set has no tier-0 member in a scope it replaces into, so the tier-0 member the
	// walk finds there is not in the set yet: the set stays on distinct members.
	r.Walk(t, func(m Member) bool {
		if i, ok := replace[scopeOf(m)]; ok && m.Tier == 0 {
			replicas[i] = m
			delete(replace, scopeOf(m))
		}
		return len(replace) > 0
	})
	return replicas
}

// hasAlwaysOn reports whether the ring has a tier-0 member in a scope: in dc when perDC,
// anywhere otherwise.
func (r *Ring) hasAlwaysOn(perDC bool, dc string) bool {
	if perDC {
		return r.alwaysOnPerDC[dc] > 0
	}
	return len(r.alwaysOnPerDC) > 0
}
