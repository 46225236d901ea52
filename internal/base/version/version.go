// Package version says which build of kura is running: the release it was given at link
// time, else the source revision Go stamped into the binary. Nodes report it in kura info
// and the web console; kura version prints it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Release is the release this build is, set at link time with
// -ldflags "-X github.com/kuradb/kura/internal/base/version.Release=v1.2.3"; a build from a source tree
// says it is a development build.
var Release = "dev"

// Build describes one binary.
type Build struct {
	Release  string // Release
	Revision string // the VCS commit the binary was built from; empty under go run
	Time     string // the commit's time, RFC 3339
	Modified bool   // the work tree had changes the commit lacks
	Go       string // the Go toolchain that built it
}

// Get returns the running binary's build.
func Get() Build {
	b := Build{Release: Release, Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the build on one line: "kura dev (a1b2c3d4e5f6, 2026-11-24T06:00:00Z,
// modified) go1.26.8".
func (b Build) String() string {
	var source []string
	if b.Revision != "" {
		source = append(source, b.Revision[:min(len(b.Revision), 12)])
	} else {
		source = append(source, "revision not stamped: go run, or -buildvcs=false")
	}
	if b.Time != "" {
		source = append(source, b.Time)
	}
	if b.Modified {
		source = append(source, "modified")
	}
	return fmt.Sprintf("kura %s (%s) %s", b.Release, strings.Join(source, ", "), b.Go)
}
