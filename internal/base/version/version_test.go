package version

import "testing"

func TestBuildString(t *testing.T) {
	tests := []struct {
		build Build
		want  string
	}{
		{Build{Release: "v1.2.3", Revision: "0123456789abcdef0123", Time: "2026-11-24T06:00:00Z", Go: "go1.26.8"},
			"kura v1.2.3 (0123456789ab, 2026-11-24T06:00:00Z) go1.26.8"},
		{Build{Release: "dev", Revision: "abc", Modified: true, Go: "go1.26.8"},
			"kura dev (abc, modified) go1.26.8"},
		{Build{Release: "dev", Go: "go1.26.8"},
			"kura dev (revision not stamped: go run, or -buildvcs=false) go1.26.8"},
	}
	for _, tt := range tests {
		if got := tt.build.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestGetNamesTheToolchain(t *testing.T) {
	if b := Get(); b.Release != Release || b.Go == "" {
		t.Fatalf("Get() = %+v, want Release %q and a Go version", b, Release)
	}
}
