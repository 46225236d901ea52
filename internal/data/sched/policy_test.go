package sched

import (
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Policy
		wantErr string // a part of the error; "" for none
	}{
		{in: "fifo", want: Policy{Queue: FIFO}},
		{in: "res", want: Policy{Queue: ReS}},
		{in: "fair", want: Policy{Queue: Fair}},
		{in: "parallel", want: Policy{Parallel: true}},
		{in: "ras", want: Policy{RaS: true}},
		{in: "res+parallel", want: Policy{Queue: ReS, Parallel: true}},
		{in: "parallel+ras", want: Policy{Parallel: true, RaS: true}},
		{in: "res+parallel+ras", want: Policy{Queue: ReS, Parallel: true, RaS: true}},
		{in: "ras+parallel+res", want: Policy{Queue: ReS, Parallel: true, RaS: true}},
		{in: "fair+parallel+ras", want: Policy{Queue: Fair, Parallel: true, RaS: true}},
		{in: "fifo+parallel", want: Policy{Parallel: true}},
		{in: "O", want: Policy{Queue: FIFO}},
		{in: "ReS", want: Policy{Queue: ReS}},
		{in: "P", want: Policy{Parallel: true}},
		{in: "ReS+P", want: Policy{Queue: ReS, Parallel: true}},
		{in: "P+RaS", want: Policy{Parallel: true, RaS: true}},
		{in: "A", want: Policy{Queue: ReS, Parallel: true, RaS: true}},
		{in: "kura", want: Policy{Queue: Fair, Parallel: true, RaS: true}},
		{in: " KURA ", want: Policy{Queue: Fair, Parallel: true, RaS: true}},
		{in: "Res + Parallel", want: Policy{Queue: ReS, Parallel: true}},
		{in: "", wantErr: "empty read policy"},
		{in: "lifo", wantErr: `unknown part "lifo"`},
		{in: "res+fair", wantErr: "two queue disciplines, res and fair"},
		{in: "O+res", wantErr: "two queue disciplines, fifo and res"},
		{in: "ras+ras", wantErr: "ras given twice"},
		{in: "p+parallel", wantErr: "parallel given twice"},
		{in: "res++ras", wantErr: "empty part"},
		{in: "A+ras", wantErr: "a names a whole policy"},
		{in: "kura+res", wantErr: "kura names a whole policy"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePolicy(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParsePolicy(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParsePolicy(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestPolicyString checks the canonical names and that every policy round-trips.
func TestPolicyString(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{}, "fifo"},
		{Policy{Parallel: true}, "parallel"},
		{Policy{RaS: true}, "ras"},
		{Policy{Parallel: true, RaS: true}, "parallel+ras"},
		{Policy{Queue: ReS}, "res"},
		{Policy{Queue: ReS, Parallel: true}, "res+parallel"},
		{Policy{Queue: ReS, Parallel: true, RaS: true}, "res+parallel+ras"},
		{Policy{Queue: Fair}, "fair"},
		{Policy{Queue: Fair, RaS: true}, "fair+ras"},
		{Policy{Queue: Fair, Parallel: true, RaS: true}, "fair+parallel+ras"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.p, got, tc.want)
		}
		if back, err := ParsePolicy(tc.p.String()); err != nil || back != tc.p {
			t.Errorf("ParsePolicy(%q) = %+v, %v; want %+v", tc.p.String(), back, err, tc.p)
		}
	}
}

// TestVariants checks the paper's variants, in the paper's order, and that each name
// parses to its policy.
func TestVariants(t *testing.T) {
	var names []string
	for _, v := range Variants() {
		names = append(names, v.Name)
		if p, err := ParsePolicy(v.Name); err != nil || p != v.Policy {
			t.Errorf("ParsePolicy(%q) = %+v, %v; want %+v", v.Name, p, err, v.Policy)
		}
	}
	if got, want := strings.Join(names, " "), "O ReS P ReS+P P+RaS A kura"; got != want {
		t.Errorf("Variants() = %s, want %s", got, want)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{LocalGet.String(), "local_get"},
		{RemoteGet.String(), "remote_get"},
		{ScanPage.String(), "scan_page"},
		{Class(7).String(), "class(7)"},
		{FIFO.String(), "fifo"},
		{ReS.String(), "res"},
		{Fair.String(), "fair"},
		{Discipline(9).String(), "discipline(9)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
