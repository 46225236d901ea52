package sim

import "sort"

// CounterKey names one traffic class: messages of one kind from one DC to
// another (FromDC == ToDC for traffic inside a DC).
type CounterKey struct {
	FromDC, ToDC, Kind string
}

// Counter is the traffic of one class. Bytes are wire bytes (payload plus
// per-segment headers); PayloadBytes are the encoded messages alone. Dropped
// messages (loss, partition) are included in Messages and
// Bytes, since they were sent, and counted again in the Dropped fields.
type Counter struct {
	Messages        int64
	Bytes           int64
	PayloadBytes    int64
	DroppedMessages int64
	DroppedBytes    int64
}

// add returns the field-wise sum c + o.
func (c Counter) add(o Counter) Counter {
	return Counter{
		Messages:        c.Messages + o.Messages,
		Bytes:           c.Bytes + o.Bytes,
		PayloadBytes:    c.PayloadBytes + o.PayloadBytes,
		DroppedMessages: c.DroppedMessages + o.DroppedMessages,
		DroppedBytes:    c.DroppedBytes + o.DroppedBytes,
	}
}

// sub returns the field-wise difference c - o.
func (c Counter) sub(o Counter) Counter {
	return Counter{
		Messages:        c.Messages - o.Messages,
		Bytes:           c.Bytes - o.Bytes,
		PayloadBytes:    c.PayloadBytes - o.PayloadBytes,
		DroppedMessages: c.DroppedMessages - o.DroppedMessages,
		DroppedBytes:    c.DroppedBytes - o.DroppedBytes,
	}
}

// Counters is a snapshot of all traffic classes. It is a plain value: the
// network keeps counting into its own copy.
type Counters map[CounterKey]Counter

// Sub returns the traffic between an earlier snapshot and c: the window
// (t1, t2] when earlier was taken at t1 and c at t2.
func (c Counters) Sub(earlier Counters) Counters {
	out := make(Counters, len(c))
	for k, v := range c {
		d := v.sub(earlier[k])
		if d != (Counter{}) {
			out[k] = d
		}
	}
	return out
}

// Sum adds up the classes for which keep returns true (all when keep is nil).
func (c Counters) Sum(keep func(CounterKey) bool) Counter {
	var total Counter
	for k, v := range c {
		if keep == nil || keep(k) {
			total = total.add(v)
		}
	}
	return total
}

// Total is the traffic of every class.
func (c Counters) Total() Counter { return c.Sum(nil) }

// InterDC is the traffic that crossed a link between two different DCs.
func (c Counters) InterDC() Counter {
	return c.Sum(func(k CounterKey) bool { return k.FromDC != k.ToDC })
}

// Keys lists the classes in a stable order (FromDC, ToDC, Kind), for printing.
func (c Counters) Keys() []CounterKey {
	keys := make([]CounterKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.FromDC != b.FromDC {
			return a.FromDC < b.FromDC
		}
		if a.ToDC != b.ToDC {
			return a.ToDC < b.ToDC
		}
		return a.Kind < b.Kind
	})
	return keys
}
