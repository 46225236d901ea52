// Package bubble runs a function inside a testing/synctest bubble from a program that is
// not a test (kura simulate), so that whole simulated clusters run in virtual time there
// as in the tests. testing/synctest gives a bubble only to a *testing.T; this package
// makes one with testing.MainStart, the entry point `go test` generates, which is not
// covered by the Go 1 compatibility promise: a Go release that changes it breaks this
// package's build, not its behaviour, and only this package needs changing then.
package bubble

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// mu serialises Run: the testing package keeps its state in globals.
var mu sync.Mutex

// Run runs each function in a bubble of its own, at most parallel at once, and returns
// once all have returned. Inside a bubble, time.Sleep, timers and every goroutine the
// function starts run on the bubble's virtual clock. The functions report nothing
// through the testing package; a panic in one is returned as an error for it, in errs
// (index for index), and the others run on.
func Run(parallel int, fns []func()) (errs []error) {
	mu.Lock()
	defer mu.Unlock()
	errs = make([]error, len(fns))
	test := func(t *testing.T) {
		for i, fn := range fns {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(*testing.T) {
					defer func() {
						if r := recover(); r != nil {
							errs[i] = fmt.Errorf("panic: %v", r)
						}
					}()
					fn()
				})
			})
		}
	}
	m := testing.MainStart(deps{}, []testing.InternalTest{{Name: "bubble", F: test}}, nil, nil, nil)
	// The testing package parses the command line and writes PASS or FAIL to standard
	// output: give it neither (a panic is in errs).
	args, stdout := os.Args, os.Stdout
	os.Args = []string{args[0], fmt.Sprintf("-test.parallel=%d", max(parallel, 1))}
	if devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		os.Stdout = devNull
		defer devNull.Close()
	} else {
		os.Stdout = os.Stderr
	}
	defer func() { os.Args, os.Stdout = args, stdout }()
	m.Run()
	return errs
}

// corpusEntry is the testing package's fuzzing corpus entry, which deps must name.
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

// deps is what testing.MainStart needs of a test binary: no profiles, no fuzzing, no
// coverage, every name matched.
type deps struct{}

var errUnsupported = errors.New("bubble: not supported")

func (deps) ImportPath() string                          { return "" }
func (deps) ModulePath() string                          { return "" }
func (deps) MatchString(string, string) (bool, error)    { return true, nil }
func (deps) SetPanicOnExit0(bool)                        {}
func (deps) StartCPUProfile(io.Writer) error             { return errUnsupported }
func (deps) StopCPUProfile()                             {}
func (deps) StartTestLog(io.Writer)                      {}
func (deps) StopTestLog() error                          { return nil }
func (deps) WriteProfileTo(string, io.Writer, int) error { return errUnsupported }
func (deps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errUnsupported
}
func (deps) RunFuzzWorker(func(corpusEntry) error) error { return errUnsupported }
func (deps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, errUnsupported
}
func (deps) CheckCorpus([]any, []reflect.Type) error { return nil }
func (deps) ResetCoverage()                          {}
func (deps) SnapshotCoverage()                       {}
func (deps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}
