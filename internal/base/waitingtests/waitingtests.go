// Package waitingtests sets how many parallel tests a test binary runs at once, for the
// packages whose tests mostly wait (on gossip rounds, ring delays, real processes'
// restarts) rather than compute: go test's default, GOMAXPROCS, left a 2-core machine
// idle most of the time such tests ran.
package waitingtests

import (
	"flag"
	"runtime"
	"strconv"
)

// AtOnce, called from TestMain before m.Run, makes the test binary run n of its parallel
// tests at once (GOMAXPROCS if that is more), unless go test was given -parallel, which
// stays the user's choice.
func AtOnce(n int) {
	flag.Parse()
	atOnce(flag.CommandLine, n)
}

// atOnce sets fs's test.parallel to max(n, GOMAXPROCS) unless it was set on the command
// line.
func atOnce(fs *flag.FlagSet, n int) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		fs.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}
