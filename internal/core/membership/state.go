package membership

import (
	"maps"
	"sort"
	"time"
)

// AppValue is one versioned application state of a node.
type AppValue struct {
	Key, Value string
	// Version comes from the owning node's single version counter, shared
	// with its heartbeat, so "everything newer than v" is one comparison.
	Version uint64
}

// EndpointState is everything gossiped about one node: Scuttlebutt's
// (generation, heartbeat) pair and its application states. Only the node
// itself creates versions; others copy them.
type EndpointState struct {
	ID         string
	Generation uint64
	// Heartbeat is the version of the node's last heartbeat (Scuttlebutt
	// bumps it every round; Ferry only to refute a death notice).
	Heartbeat uint64
	// App is sorted by key. It is shared between copies of the state and
	// never changed in place: updates build a new slice.
	App []AppValue
}

// MaxVersion is the highest version in the state: what a digest carries.
func (s *EndpointState) MaxVersion() uint64 {
	v := s.Heartbeat
	for _, a := range s.App {
		v = max(v, a.Version)
	}
	return v
}

// Value returns the application state under key.
func (s *EndpointState) Value(key string) (string, bool) {
	i := sort.Search(len(s.App), func(i int) bool { return s.App[i].Key >= key })
	if i < len(s.App) && s.App[i].Key == key {
		return s.App[i].Value, true
	}
	return "", false
}

// Since is the delta a node at version v is missing: the heartbeat and the
// application states newer than v.
func (s *EndpointState) Since(v uint64) EndpointState {
	out := EndpointState{ID: s.ID, Generation: s.Generation, Heartbeat: s.Heartbeat}
	if v == 0 {
		out.App = s.App
		return out
	}
	for _, a := range s.App {
		if a.Version > v {
			out.App = append(out.App, a)
		}
	}
	return out
}

// Merged says what a merge changed.
type Merged struct {
	// Restarted: the remote state had a newer generation and replaced ours.
	Restarted bool
	// Heartbeat: the heartbeat version advanced.
	Heartbeat bool
	// Changed lists application states that are new or newer.
	Changed []AppValue
}

// Any reports whether the merge changed anything.
func (m Merged) Any() bool { return m.Restarted || m.Heartbeat || len(m.Changed) > 0 }

// Merge folds a remote state (or delta) of the same node into s: a newer
// generation replaces everything, an older one is ignored, and within one
// generation every item keeps the higher version.
func (s *EndpointState) Merge(remote EndpointState) Merged {
	switch {
	case remote.Generation < s.Generation:
		return Merged{}
	case remote.Generation > s.Generation:
		*s = remote
		return Merged{Restarted: true, Heartbeat: true, Changed: remote.App}
	}
	var m Merged
	if remote.Heartbeat > s.Heartbeat {
		s.Heartbeat = remote.Heartbeat
		m.Heartbeat = true
	}
	for _, r := range remote.App {
		i := sort.Search(len(s.App), func(i int) bool { return s.App[i].Key >= r.Key })
		if i < len(s.App) && s.App[i].Key == r.Key && s.App[i].Version >= r.Version {
			continue
		}
		m.Changed = append(m.Changed, r)
	}
	if len(m.Changed) > 0 {
		s.App = withValues(s.App, m.Changed)
	}
	return m
}

// withValues returns a new sorted slice: app with the given values set.
func withValues(app []AppValue, set []AppValue) []AppValue {
	out := make([]AppValue, 0, len(app)+len(set))
	out = append(out, app...)
	for _, v := range set {
		i := sort.Search(len(out), func(i int) bool { return out[i].Key >= v.Key })
		if i < len(out) && out[i].Key == v.Key {
			out[i] = v
			continue
		}
		out = append(out, AppValue{})
		copy(out[i+1:], out[i:])
		out[i] = v
	}
	return out
}

// WireSize is the encoded size of s.
func (s *EndpointState) WireSize() int {
	n := StringSize(s.ID) + UvarintSize(s.Generation) + UvarintSize(s.Heartbeat) + UvarintSize(uint64(len(s.App)))
	for _, a := range s.App {
		n += StringSize(a.Key) + StringSize(a.Value) + UvarintSize(a.Version)
	}
	return n
}

// AppendTo appends the encoding of s.
func (s *EndpointState) AppendTo(b []byte) []byte {
	b = AppendString(b, s.ID)
	b = AppendUvarint(b, s.Generation)
	b = AppendUvarint(b, s.Heartbeat)
	b = AppendUvarint(b, uint64(len(s.App)))
	for _, a := range s.App {
		b = AppendString(b, a.Key)
		b = AppendString(b, a.Value)
		b = AppendUvarint(b, a.Version)
	}
	return b
}

// DecodeEndpointState reads what AppendTo wrote.
func DecodeEndpointState(d *Decoder) EndpointState {
	s := EndpointState{ID: d.String(), Generation: d.Uvarint(), Heartbeat: d.Uvarint()}
	n := d.Count(3)
	if n > 0 {
		s.App = make([]AppValue, n)
		for i := range s.App {
			s.App[i] = AppValue{Key: d.String(), Value: d.String(), Version: d.Uvarint()}
		}
	}
	return s
}

// Member builds the public view of s.
func (s *EndpointState) Member(alive bool) Member {
	m := Member{ID: s.ID, Generation: s.Generation, AppState: make(map[string]string, len(s.App))}
	for _, a := range s.App {
		m.AppState[a.Key] = a.Value
	}
	m.DC = m.AppState[KeyDC]
	m.Addr = m.AppState[KeyAddr]
	m.Status = Status(m.AppState[KeyStatus])
	m.Alive = alive && m.Status != StatusLeft && m.Status != StatusShutdown
	return m
}

// LocalState is a node's own endpoint state with its version counter.
type LocalState struct {
	EndpointState
	version uint64
}

// NewLocalState builds a node's state from its config: addr, dc, status
// normal (unless the config says otherwise) and the config's app states.
func NewLocalState(cfg Config) *LocalState {
	l := &LocalState{EndpointState: EndpointState{ID: cfg.ID, Generation: cfg.Generation}}
	initial := map[string]string{KeyDC: cfg.DC, KeyStatus: string(StatusNormal)}
	if cfg.Addr != "" {
		initial[KeyAddr] = cfg.Addr
	}
	maps.Copy(initial, cfg.AppState)
	keys := make([]string, 0, len(initial))
	for k := range initial {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l.Set(k, initial[k])
	}
	l.Beat()
	return l
}

// next returns a fresh version.
func (l *LocalState) next() uint64 {
	l.version++
	return l.version
}

// Beat advances the heartbeat to a fresh version.
func (l *LocalState) Beat() { l.Heartbeat = l.next() }

// BeatPast advances the heartbeat beyond v (to refute a death notice that
// names version v).
func (l *LocalState) BeatPast(v uint64) {
	l.version = max(l.version, v)
	l.Beat()
}

// Set changes an application state under a fresh version and returns it.
func (l *LocalState) Set(key, value string) AppValue {
	v := AppValue{Key: key, Value: value, Version: l.next()}
	l.App = withValues(l.App, []AppValue{v})
	return v
}

// Quarantine remembers forgotten members so that stale gossip about them,
// still circulating when they were removed, does not bring them back.
type Quarantine struct {
	entries map[string]quarantined
}

// quarantined is one forgotten member.
type quarantined struct {
	generation uint64
	until      time.Duration
}

// Add blocks gossip about id at generation or older until the given time.
func (q *Quarantine) Add(id string, generation uint64, until time.Duration) {
	if q.entries == nil {
		q.entries = make(map[string]quarantined)
	}
	q.entries[id] = quarantined{generation: generation, until: until}
}

// Blocks reports whether gossip about id at generation must be ignored now.
func (q *Quarantine) Blocks(id string, generation uint64, now time.Duration) bool {
	e, ok := q.entries[id]
	if !ok {
		return false
	}
	if now >= e.until {
		delete(q.entries, id)
		return false
	}
	return generation <= e.generation
}
