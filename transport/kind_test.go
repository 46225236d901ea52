package transport

import (
	"fmt"
	"testing"
)

func TestRegisterKind(t *testing.T) {
	first := RegisterKind("test_kind_registry")
	again := RegisterKind("test_kind_registry")
	other := RegisterKind("test_kind_registry_other")
	if first != again {
		t.Errorf("RegisterKind is not idempotent: %d then %d", first, again)
	}
	if first == other || first == 0 || other == 0 {
		t.Errorf("kinds %d and %d: want distinct, non-zero", first, other)
	}
	if got := first.String(); got != "test_kind_registry" {
		t.Errorf("String() = %q", got)
	}
	if got := kindHello.String(); got != "hello" {
		t.Errorf("kindHello.String() = %q", got)
	}
	if got := Kind(0).String(); got != "kind(0)" {
		t.Errorf("Kind(0).String() = %q", got)
	}
}

func TestKindRegistryFull(t *testing.T) {
	var r kindRegistry
	for i := range 255 {
		if k := r.register(fmt.Sprintf("k%d", i)); int(k) != i+1 {
			t.Fatalf("register #%d gave %d", i, k)
		}
	}
	if got := r.name(255); got != "k254" {
		t.Errorf("name(255) = %q", got)
	}
	if k := r.register("k7"); k != 8 {
		t.Errorf("re-registering a name on a full registry gave %d, want 8", k)
	}
	tests := []struct {
		name string
		kind string
	}{
		{"256th kind", "one-too-many"},
		{"empty name", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("register(%q) did not panic", tt.kind)
				}
			}()
			r.register(tt.kind)
		})
	}
}
