package waitingtests

import (
	"flag"
	"runtime"
	"testing"
)

func TestAtOnce(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	tests := []struct {
		name string
		args []string
		n    int
		want int
	}{
		{"not given, more than GOMAXPROCS", nil, procs + 3, procs + 3},
		{"not given, fewer than GOMAXPROCS", nil, 1, procs},
		{"given", []string{"-test.parallel", "1"}, procs + 3, 1},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		parallel := fs.Int("test.parallel", procs, "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		atOnce(fs, tt.n)
		if *parallel != tt.want {
			t.Errorf("%s: -test.parallel %d, want %d", tt.name, *parallel, tt.want)
		}
	}
}
