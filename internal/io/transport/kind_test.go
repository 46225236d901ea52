package transport

import (
	"fmt"
	"strings"
	"testing"
)

func TestRegisterKind(t *testing.T) {
	var r kindRegistry
	first := r.register(200, "test_kind")
	again := r.register(200, "test_kind")
	other := r.register(255, "test_kind_other")
	if first != 200 || again != 200 || other != 255 {
		t.Errorf("register gave %d, %d and %d, want 200, 200 and 255", first, again, other)
	}
	lookups := []struct {
		name string
		kind Kind
		ok   bool
	}{
		{"test_kind", 200, true},
		{"test_kind_other", 255, true},
		{"nobody", 0, false},
	}
	for _, tt := range lookups {
		if kind, ok := r.byName(tt.name); kind != tt.kind || ok != tt.ok {
			t.Errorf("byName(%q) = %d, %v; want %d, %v", tt.name, kind, ok, tt.kind, tt.ok)
		}
	}
	names := []struct {
		kind Kind
		want string
	}{
		{200, "test_kind"},
		{255, "test_kind_other"},
		{0, "kind(0)"},
		{201, "kind(201)"},
	}
	for _, tt := range names {
		if got := r.name(tt.kind); got != tt.want {
			t.Errorf("name(%d) = %q, want %q", tt.kind, got, tt.want)
		}
	}
}

func TestRegisterKindPanics(t *testing.T) {
	tests := []struct {
		name   string
		number uint8
		kind   string
		want   string
	}{
		{"kind 0", 0, "zero", "reserved"},
		{"empty name", 201, "", "empty name"},
		{"number taken by another name", 200, "test_b", `200 is already "test_a"`},
		{"name taken by another number", 201, "test_a", `"test_a" is already kind 200`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r kindRegistry
			r.register(200, "test_a")
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, tt.want) {
					t.Errorf("register(%d, %q) panicked with %q, want a panic containing %q", tt.number, tt.kind, msg, tt.want)
				}
				// A refused registration leaves the registry as it was.
				if got, _ := r.byName("test_a"); got != 200 || r.name(201) != "kind(201)" {
					t.Errorf("after the panic: test_a is %d, kind 201 is %q", got, r.name(201))
				}
			}()
			r.register(tt.number, tt.kind)
		})
	}
}

// TestRegisterKindRefusesWireNumbers: a test's kind cannot take a number of the wire's
// table, registered or not yet, nor 0.
func TestRegisterKindRefusesWireNumbers(t *testing.T) {
	for _, number := range []uint8{0, uint8(KindMutate), uint8(len(wireKindNames)), testKindsMin - 1} {
		t.Run(fmt.Sprint(number), func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				if want := "the wire's kinds"; !strings.Contains(msg, want) {
					t.Errorf("RegisterKind(%d) panicked with %q, want a panic containing %q", number, msg, want)
				}
				if got, ok := KindByName("test_wire_number"); ok {
					t.Errorf("after the panic, test_wire_number is kind %d", got)
				}
			}()
			RegisterKind(number, "test_wire_number")
		})
	}
}

// TestWireKindNames: the wire's table leaves 0 unnamed and stops below the tests' numbers.
// (A number without a name, or a name given twice, panics at init: newKindRegistry.)
func TestWireKindNames(t *testing.T) {
	if wireKindNames[0] != "" {
		t.Errorf("kind 0 is named %q; it is reserved", wireKindNames[0])
	}
	if len(wireKindNames) > testKindsMin {
		t.Errorf("the wire's table reaches %d, past %d where tests' kinds start", len(wireKindNames)-1, testKindsMin)
	}
}

func TestKindString(t *testing.T) {
	if got := kindHello.String(); got != "hello" {
		t.Errorf("kindHello.String() = %q", got)
	}
	if got := Kind(0).String(); got != "kind(0)" {
		t.Errorf("Kind(0).String() = %q", got)
	}
	if kind, ok := KindByName("hello"); kind != kindHello || !ok {
		t.Errorf(`KindByName("hello") = %d, %v`, kind, ok)
	}
}
