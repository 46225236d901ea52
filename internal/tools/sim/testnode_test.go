package sim

import "time"

// size is a message of a given encoded size.
type size int

func (s size) WireSize() int { return int(s) }

// arrival is one message a recorder saw.
type arrival struct {
	at   time.Duration
	from string
	kind string
}

// recorder is a test node: it records arrivals, answers "ping" with "pong",
// and on every tick sends a "beat" of beatBytes to each peer.
type recorder struct {
	id        string
	peers     []string
	beatBytes int
	arrivals  []arrival
	ticks     []time.Duration
}

func (r *recorder) Step(now time.Duration, env Envelope) []Envelope {
	r.arrivals = append(r.arrivals, arrival{at: now, from: env.From, kind: env.Kind})
	if env.Kind == "ping" {
		return []Envelope{{From: r.id, To: env.From, Kind: "pong", Msg: size(10)}}
	}
	return nil
}

func (r *recorder) Tick(now time.Duration) []Envelope {
	r.ticks = append(r.ticks, now)
	var out []Envelope
	for _, p := range r.peers {
		out = append(out, Envelope{From: r.id, To: p, Kind: "beat", Msg: size(r.beatBytes)})
	}
	return out
}
