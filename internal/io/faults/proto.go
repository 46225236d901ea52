package faults

import (
	"time"

	"github.com/kuradb/kura/api/kurav1"
)

// FromProto returns the Spec of the admin API's Faults message.
func FromProto(p *kurav1.Faults) Spec {
	spec := Spec{Partitioned: p.GetPartitioned(), ClockOffset: time.Duration(p.GetClockOffsetMs()) * time.Millisecond}
	for _, l := range p.GetLinks() {
		spec.Links = append(spec.Links, Link{Target: l.GetTarget(), Loss: l.GetLoss(), Delay: time.Duration(l.GetDelayMs()) * time.Millisecond})
	}
	return spec
}

// Proto returns s as the admin API's Faults message.
func (s Spec) Proto() *kurav1.Faults {
	p := &kurav1.Faults{Partitioned: s.Partitioned, ClockOffsetMs: s.ClockOffset.Milliseconds()}
	for _, l := range s.Links {
		p.Links = append(p.Links, &kurav1.LinkFault{Target: l.Target, Loss: l.Loss, DelayMs: l.Delay.Milliseconds()})
	}
	return p
}
