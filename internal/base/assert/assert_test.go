package assert

import "testing"

func TestEnabledInTests(t *testing.T) {
	if !Enabled {
		t.Fatal("assertions are off in a test binary")
	}
}

func TestThat(t *testing.T) {
	tests := []struct {
		name      string
		cond      bool
		wantPanic string // "" for none
	}{
		{name: "holds", cond: true},
		{name: "broken", cond: false, wantPanic: "assertion failed: ring: token 7 not after 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got any
			func() {
				defer func() { got = recover() }()
				That(tt.cond, "ring: token %d not after %d", 7, 9)
			}()
			switch {
			case tt.wantPanic == "" && got != nil:
				t.Fatalf("That(%v) panicked with %v", tt.cond, got)
			case tt.wantPanic != "" && got != tt.wantPanic:
				t.Fatalf("That(%v) panicked with %v, want %q", tt.cond, got, tt.wantPanic)
			}
		})
	}
}

// BenchmarkThat times one assertion that holds, with assertions on and off, and with
// arguments that are constants or that Go must box (uint64 above 255).
func BenchmarkThat(b *testing.B) {
	defer func(was bool) { Enabled = was }(Enabled)
	for _, enabled := range []bool{true, false} {
		Enabled = enabled
		name := map[bool]string{true: "enabled", false: "disabled"}[enabled]
		b.Run(name+"/no-args", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				That(i >= 0, "i is never negative")
			}
		})
		b.Run(name+"/boxed-args", func(b *testing.B) {
			last := uint64(1 << 40)
			for b.Loop() {
				next := last + 1
				That(next > last, "next %d not after last %d", next, last)
				last = next
			}
		})
		b.Run(name+"/guarded", func(b *testing.B) {
			last := uint64(1 << 40)
			for b.Loop() {
				next := last + 1
				if Enabled {
					That(next > last, "next %d not after last %d", next, last)
				}
				last = next
			}
		})
	}
}
