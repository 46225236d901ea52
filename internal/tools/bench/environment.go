package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/base/version"
)

// Environment is where a report's figures came from: the build, the machine, how busy it
// was, the command line, and the versions of the peers the bench ran beside kura. A figure
// without it cannot be compared with another; every report carries one.
type Environment struct {
	// Revision is the commit kura was built from; RevisionFrom says how it is known: the
	// binary's VCS stamp ("binary"), or, under go run, which stamps none, the git work
	// tree the bench ran in ("work tree"); "" when neither says.
	Revision     string `json:"revision"`
	RevisionFrom string `json:"revision_from"`
	// Modified says the source had changes the revision lacks.
	Modified    bool   `json:"modified"`
	Go          string `json:"go"`
	OS          string `json:"os"`
	Kernel      string `json:"kernel"`
	CPUModel    string `json:"cpu_model"`
	CPUs        int    `json:"cpus"`
	MemoryBytes int64  `json:"memory_bytes"`
	// Filesystem is the type of the filesystem that holds the benches' data dirs (under
	// the temporary directory).
	Filesystem string    `json:"filesystem"`
	StartedAt  time.Time `json:"started_at"`
	Args       []string  `json:"args"`
	// LoadAvgStart and LoadAvgEnd are the machine's 1-, 5- and 15-minute load averages
	// when the bench started and when it ended: other work on the machine moves every
	// figure of a run.
	LoadAvgStart []float64 `json:"load_avg_start"`
	LoadAvgEnd   []float64 `json:"load_avg_end"`
	// Peers are the other systems the bench ran, with their versions and settings.
	Peers []PeerBuild `json:"peers,omitempty"`

	mu sync.Mutex
}

// PeerBuild is one system a bench ran beside (or as) kura's cluster: its name, its
// version as it reports it, and the settings that decide its figures.
type PeerBuild struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Config  string `json:"config,omitempty"`
}

// CaptureEnvironment describes this process's build and machine as a bench starts with
// args.
func CaptureEnvironment(args []string) *Environment {
	build := version.Get()
	e := &Environment{
		Revision: build.Revision, Modified: build.Modified, Go: build.Go,
		OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(),
		StartedAt: time.Now().UTC().Truncate(time.Second), Args: append([]string(nil), args...),
		Kernel:     strings.TrimSpace(readFirst("/proc/sys/kernel/osrelease")),
		CPUModel:   procField("/proc/cpuinfo", "model name"),
		Filesystem: filesystemOf(os.TempDir()),
	}
	if e.Revision != "" {
		e.RevisionFrom = "binary"
	} else if rev, modified, ok := workTreeRevision(); ok {
		e.Revision, e.Modified, e.RevisionFrom = rev, modified, "work tree"
	}
	if kb, err := strconv.ParseInt(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		e.MemoryBytes = kb << 10
	}
	e.LoadAvgStart = loadAverages()
	return e
}

// End records the load as the bench ends.
func (e *Environment) End() { e.LoadAvgEnd = loadAverages() }

// AddPeer records a system the bench runs; a nil Environment records nothing.
func (e *Environment) AddPeer(p PeerBuild) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, known := range e.Peers {
		if known == p {
			return
		}
	}
	e.Peers = append(e.Peers, p)
}

// headline is the environment in a few words a table's reader can take in at once.
func (e *Environment) headline() string {
	rev := "unknown revision"
	if e.Revision != "" {
		rev = e.Revision[:min(len(e.Revision), 12)]
		if e.Modified {
			rev += " modified"
		}
	}
	return fmt.Sprintf("kura %s, %s, %s %s, %d × %s, %.1f GiB, data on %s, load %s → %s, started %s",
		rev, e.Go, e.OS, e.Kernel, e.CPUs, e.CPUModel, float64(e.MemoryBytes)/(1<<30), e.Filesystem,
		formatLoad(e.LoadAvgStart), formatLoad(e.LoadAvgEnd), e.StartedAt.Format(time.RFC3339))
}

// formatLoad is the one-minute load average, the one that moves within a run.
func formatLoad(load []float64) string {
	if len(load) == 0 {
		return "?"
	}
	return strconv.FormatFloat(load[0], 'f', 2, 64)
}

// workTreeRevision asks git for the commit of the work tree the bench runs in and
// whether tracked files differ from it.
func workTreeRevision() (revision string, modified bool, ok bool) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false, false
	}
	status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return "", false, false
	}
	return strings.TrimSpace(string(out)), len(bytes.TrimSpace(status)) > 0, true
}

// loadAverages reads the 1-, 5- and 15-minute load averages; nil where the system does
// not report them.
func loadAverages() []float64 {
	fields := strings.Fields(readFirst("/proc/loadavg"))
	if len(fields) < 3 {
		return nil
	}
	loads := make([]float64, 3)
	for i := range loads {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return nil
		}
		loads[i] = v
	}
	return loads
}

// filesystemOf names the type of the filesystem dir is on: the mount point of
// /proc/mounts that is dir's longest prefix.
func filesystemOf(dir string) string {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	best, kind := "", "unknown"
	for _, line := range strings.Split(readFirst("/proc/mounts"), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 {
			continue
		}
		mount := fields[1]
		inside := dir == mount || strings.HasPrefix(dir, strings.TrimSuffix(mount, "/")+"/")
		if inside && len(mount) > len(best) {
			best, kind = mount, fields[2]
		}
	}
	return kind
}

// procField returns the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, found := strings.Cut(scanner.Text(), ":")
		if found && strings.TrimSpace(key) == name {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// readFirst returns a small file's contents, or "" when it cannot be read.
func readFirst(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}
