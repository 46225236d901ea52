// Command redis-suite runs units of Redis's own test suite (Redis 7.0.15, tests/) in
// external-server mode against a one-node kura and against redis-server, and compares
// them: per unit, the tests run, passed on each, and why kura failed the others.
//
// It needs tclsh, redis-server and the suite, which is not part of kura's repository:
// --redis-git unpacks it from a clone of github.com/redis/redis into --suite once. Not
// part of go test or CI. See docs/redis.md, "Redis's test suite".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kuradb/kura/internal/tools/bench"
)

// defaultUnits are the units of issue 46: those about strings, keys, expiry, scans,
// the protocol and the server's introspection.
const defaultUnits = "unit/type/string,unit/keyspace,unit/expire,unit/scan,unit/protocol,unit/introspection,unit/introspection-2,unit/type/incr,unit/quit,unit/other"

// outOfScopeTags are the suite's capability tags (tests/README.md) of the features
// docs/redis.md lists as out of scope; each run, redis-server's too, skips them.
const outOfScopeTags = "-needs:debug -needs:repl -needs:save -needs:config-maxmemory"

// outOfScopeTests are tests docs/redis.md lists as out of scope ("One thread's order
// across connections") that do not merely fail when kura takes their concurrent commands
// in another order than redis-server's one thread: they wait for ever, and the harness
// kills the unit at --timeout with its later tests not run. Each run, redis-server's too,
// skips them (--skiptest), and the report lists them as skipped.
const outOfScopeTests = "BRPOPLPUSH with multiple blocked clients"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "redis-suite:", err)
		os.Exit(1)
	}
}

// options are the command line's settings.
type options struct {
	suite, redisGit, redisRev string
	kura, redisServer, tclsh  string
	kuraGiven                 bool // --kura named the binary: the harness did not build it
	units                     []string
	tags                      string
	skipTests                 []string // --skip-tests
	ignoreEncoding, inMemory  bool
	transactions              string // --kura-transactions: key or partition
	jsonOut                   bool
	printFile                 string
	timeout                   time.Duration
	keep                      bool
}

func parseFlags(args []string) (options, error) {
	var o options
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	fs := flag.NewFlagSet("redis-suite", flag.ContinueOnError)
	fs.StringVar(&o.suite, "suite", filepath.Join(cache, "kura", "redis-tests-7.0.15"), "directory holding Redis's tests/ (unpacked there from --redis-git when missing)")
	fs.StringVar(&o.redisGit, "redis-git", "", "a clone of github.com/redis/redis (bare or not) to unpack the suite from")
	fs.StringVar(&o.redisRev, "redis-rev", "7.0.15", "the Redis revision whose tests --redis-git unpacks")
	fs.StringVar(&o.kura, "kura", "", "kura binary (empty: go build ./cmd/kura from the working directory, kura's repository)")
	fs.StringVar(&o.redisServer, "redis-server", "redis-server", "redis-server binary, run beside kura")
	fs.StringVar(&o.tclsh, "tclsh", "tclsh", "Tcl 8.5 or newer")
	units := fs.String("units", defaultUnits, "comma-separated units of the suite, as --single takes them")
	fs.StringVar(&o.tags, "tags", outOfScopeTags, "the suite's --tags: tags to skip (prefixed -) or to run only")
	skip := fs.String("skip-tests", outOfScopeTests, "comma-separated names of tests both runs skip (the suite's --skiptest)")
	fs.BoolVar(&o.ignoreEncoding, "ignore-encoding", true, "pass --ignore-encoding: skip the checks of Redis's internal encodings")
	fs.BoolVar(&o.inMemory, "in-memory", false, "run kura --in-memory (default: durable, its data dir in a temporary directory)")
	fs.StringVar(&o.transactions, "kura-transactions", transactionsPartition, "kura server --default-transactions: partition, kura's default, where MULTI covers several keys of one hash tag in the default keyspace; "+
		"key: a transaction per key, as the default keyspace of a cluster begun before 7 December 2026 keeps (the report labels it)")
	fs.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	fs.StringVar(&o.printFile, "print", "", "print a report saved by --json as tables, and run nothing")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "longest run of one unit against one server")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (the suite's outputs, server logs)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, u := range strings.Split(*units, ",") {
		if u = strings.TrimSpace(u); u != "" {
			o.units = append(o.units, u)
		}
	}
	if len(o.units) == 0 {
		return o, errors.New("--units names no unit")
	}
	for _, name := range strings.Split(*skip, ",") {
		if name = strings.TrimSpace(name); name != "" {
			o.skipTests = append(o.skipTests, name)
		}
	}
	if o.timeout < time.Second {
		return o, errors.New("--timeout must be at least 1s")
	}
	if o.transactions != transactionsKey && o.transactions != transactionsPartition {
		return o, fmt.Errorf("--kura-transactions is %s or %s, not %q", transactionsKey, transactionsPartition, o.transactions)
	}
	return o, nil
}

// suiteArgs are the options both runs give the suite besides the server's address.
func (o options) suiteArgs() []string {
	// --durable: an error inside a test fails that test instead of stopping the unit.
	args := []string{"--singledb", "--durable"}
	if o.ignoreEncoding {
		args = append(args, "--ignore-encoding")
	}
	if o.tags != "" {
		args = append(args, "--tags", o.tags)
	}
	for _, name := range o.skipTests {
		args = append(args, "--skiptest", name)
	}
	return args
}

func run(args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if o.printFile != "" {
		return printSaved(o.printFile, stdout)
	}
	env := bench.CaptureEnvironment(append([]string{"redis-suite"}, args...))
	for _, bin := range []*string{&o.redisServer, &o.tclsh} {
		if *bin, err = exec.LookPath(*bin); err != nil {
			return err
		}
	}
	revision, err := ensureSuite(o.suite, o.redisGit, o.redisRev)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "kura-redis-suite-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "redis-suite: work directory", work)
	} else {
		defer os.RemoveAll(work)
	}
	patched, err := prepare(&o, work)
	if err != nil {
		return err
	}
	redisVersion, _ := exec.Command(o.redisServer, "--version").Output()
	env.AddPeer(bench.PeerBuild{Name: "redis-server", Version: strings.TrimSpace(string(redisVersion)), Config: "the suite's tests/assets/default.conf"})
	mode := "durable"
	if o.inMemory {
		mode = "in-memory"
	}
	kuraBuild := "built from the work tree, " + orUnknown(env.Revision)
	if o.kuraGiven {
		kuraBuild = "the binary " + o.kura
	}
	env.AddPeer(bench.PeerBuild{Name: "kura", Version: kuraBuild, Config: "one node, " + mode + ", " + keyspaceLabel(o.transactions)})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep := report{Environment: env, SuiteRevision: revision, SuiteFrameworkPatched: patched,
		SuiteArgs: o.suiteArgs(), KuraMode: mode, KuraTransactions: o.transactions}
	started := time.Now()
	for _, unit := range o.units {
		fmt.Fprintf(os.Stderr, "redis-suite: %s\n", unit)
		u, err := runBoth(ctx, o, work, unit)
		if err != nil {
			return fmt.Errorf("%s: %w", unit, err)
		}
		rep.Units = append(rep.Units, u)
	}
	rep.DurationSeconds = time.Since(started).Seconds()
	env.End()
	rep.summarize()
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.print(stdout)
	return nil
}

// prepare makes the two copies of the suite (one per server, as both run at once) and
// builds kura unless --kura names a binary.
func prepare(o *options, work string) (patched bool, err error) {
	for _, target := range []string{"redis-server", "kura"} {
		if patched, err = workCopy(o.suite, filepath.Join(work, target, "suite")); err != nil {
			return false, err
		}
	}
	if o.kura != "" {
		o.kuraGiven = true
		o.kura, err = filepath.Abs(o.kura)
		return patched, err
	}
	o.kura = filepath.Join(work, "bin", "kura")
	fmt.Fprintln(os.Stderr, "redis-suite: go build ./cmd/kura")
	build := exec.Command("go", "build", "-o", o.kura, "./cmd/kura")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return false, fmt.Errorf("go build ./cmd/kura (run from kura's repository, or give --kura): %w", err)
	}
	return patched, nil
}

// runBoth runs unit against a fresh redis-server and a fresh kura at once: each unit
// starts from servers no earlier unit's CONFIG SET or keys have touched.
func runBoth(ctx context.Context, o options, work, unit string) (unitReport, error) {
	type result struct {
		out     unitOutput
		seconds float64
		err     error
	}
	var results [2]result
	basePorts, err := freeBasePorts(len(results))
	if err != nil {
		return unitReport{}, err
	}
	var wg sync.WaitGroup
	for i, target := range []string{"redis-server", "kura"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := filepath.Join(work, target)
			serverDir := filepath.Join(dir, strings.ReplaceAll(unit, "/", "_"))
			var s *server
			var err error
			if target == "kura" {
				s, err = startKura(o.kura, serverDir, o.inMemory, o.transactions)
			} else {
				s, err = startRedis(o.redisServer, filepath.Join(dir, "suite"), serverDir)
			}
			if err != nil {
				results[i].err = err
				return
			}
			defer s.stop()
			outPath := filepath.Join(serverDir, "suite.out")
			began := time.Now()
			runErr := runUnit(ctx, o.tclsh, filepath.Join(dir, "suite"), s.addr, unit, basePorts[i], o.suiteArgs(), o.timeout, outPath)
			if runErr != nil && !errors.Is(runErr, errKilled) {
				results[i].err = runErr
				return
			}
			results[i].seconds = time.Since(began).Seconds()
			f, err := os.Open(outPath)
			if err != nil {
				results[i].err = err
				return
			}
			defer f.Close()
			results[i].out, results[i].err = parseOutput(f)
			// A unit killed at --timeout (a test waiting for ever) still reports the
			// tests it reached; the rest count as not run, with the reason.
			if errors.Is(runErr, errKilled) && results[i].err == nil && results[i].out.Exception == "" {
				results[i].out.Exception = fmt.Sprintf("killed after --timeout %v", o.timeout)
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return unitReport{}, r.err
		}
	}
	return compare(unit, results[0].out, results[1].out, results[0].seconds, results[1].seconds), nil
}

// report is the whole run: what ran, where, and the units' results.
type report struct {
	Environment *bench.Environment `json:"environment"`
	// SuiteRevision is the Redis revision the suite came from ("" when --suite was
	// unpacked by hand).
	SuiteRevision string `json:"suite_revision"`
	// SuiteFrameworkPatched says FUNCTION FLUSH was allowed to fail in the suite's
	// framework (the only change to the suite).
	SuiteFrameworkPatched bool     `json:"suite_framework_patched"`
	SuiteArgs             []string `json:"suite_args"`
	KuraMode              string   `json:"kura_mode"`
	// KuraTransactions is --kura-transactions: "key" for kura's default configuration,
	// "partition" for Redis connections in a keyspace of per-partition transactions.
	// Reports written before the option have none: they ran "key".
	KuraTransactions string       `json:"kura_transactions,omitempty"`
	DurationSeconds  float64      `json:"duration_s"`
	Units            []unitReport `json:"units"`
	Totals           unitReport   `json:"totals"`
	// Causes groups kura's failures over every unit, most tests first.
	Causes []causeCount `json:"causes"`
}

// unitReport compares one unit's runs.
type unitReport struct {
	Unit string `json:"unit"`
	// Tests is the number of tests redis-server ran (passed or failed); Skipped those
	// the options skipped (an ignore line of a whole start_server block counts one).
	Tests        int     `json:"tests"`
	Skipped      int     `json:"skipped"`
	RedisPassed  int     `json:"redis_passed"`
	KuraPassed   int     `json:"kura_passed"`
	KuraFailed   int     `json:"kura_failed"`
	KuraNotRun   int     `json:"kura_not_run"`
	RedisSeconds float64 `json:"redis_s"`
	KuraSeconds  float64 `json:"kura_s"`
	// KuraException and RedisException are the errors that stopped the unit early.
	KuraException  string `json:"kura_exception,omitempty"`
	RedisException string `json:"redis_exception,omitempty"`
	// RedisFailures are tests redis-server itself failed: a unit meant for a server it
	// started itself may not suit an external one.
	RedisFailures []failure      `json:"redis_failures,omitempty"`
	KuraFailures  []failure      `json:"kura_failures,omitempty"`
	SkippedTests  []testResult   `json:"skipped_tests,omitempty"`
	NotRunOnKura  []string       `json:"not_run_on_kura,omitempty"`
	causes        map[string]int // kura's failures by cause
}

// failure is a test that failed, why, and the group of the why.
type failure struct {
	Test  string `json:"test"`
	Error string `json:"error"`
	Cause string `json:"cause"`
}

// causeCount is one cause of kura's failures: how many tests, in which units.
type causeCount struct {
	Cause string   `json:"cause"`
	Tests int      `json:"tests"`
	Units []string `json:"units"`
}

// compare builds a unit's report from its two runs' outputs.
func compare(unit string, redis, kura unitOutput, redisSeconds, kuraSeconds float64) unitReport {
	u := unitReport{Unit: unit, RedisSeconds: redisSeconds, KuraSeconds: kuraSeconds,
		KuraException: kura.Exception, RedisException: redis.Exception, causes: map[string]int{}}
	ran := map[string]int{} // tests redis-server ran, by name, less those kura ran
	for _, t := range redis.Tests {
		switch t.Status {
		case statusOK:
			u.Tests++
			u.RedisPassed++
			ran[t.Name]++
		case statusErr:
			u.Tests++
			ran[t.Name]++
			u.RedisFailures = append(u.RedisFailures, failure{Test: t.Name, Error: t.Error, Cause: cause(t.Error)})
		default:
			u.Skipped++
			u.SkippedTests = append(u.SkippedTests, t)
		}
	}
	for _, t := range kura.Tests {
		switch t.Status {
		case statusOK:
			u.KuraPassed++
		case statusErr:
			u.KuraFailed++
			f := failure{Test: t.Name, Error: t.Error, Cause: cause(t.Error)}
			u.KuraFailures = append(u.KuraFailures, f)
			u.causes[f.Cause]++
		default:
			continue
		}
		ran[t.Name]--
	}
	for _, t := range redis.Tests {
		if (t.Status == statusOK || t.Status == statusErr) && ran[t.Name] > 0 {
			ran[t.Name]--
			u.KuraNotRun++
			u.NotRunOnKura = append(u.NotRunOnKura, t.Name)
		}
	}
	if u.KuraNotRun > 0 {
		// Without an exception, the unit's own code left the test out: some run only
		// where INFO or CONFIG GET answers as redis-server does (mem_allocator jemalloc).
		why := "not run: the unit's code left it out on kura"
		if kura.Exception != "" {
			why = "not run: the unit stopped: " + kura.Exception
		}
		u.causes[why] += u.KuraNotRun
	}
	return u
}

// summarize adds the units up and groups kura's failures by cause.
func (r *report) summarize() {
	t := unitReport{Unit: "total"}
	byCause := map[string]*causeCount{}
	for _, u := range r.Units {
		t.Tests += u.Tests
		t.Skipped += u.Skipped
		t.RedisPassed += u.RedisPassed
		t.KuraPassed += u.KuraPassed
		t.KuraFailed += u.KuraFailed
		t.KuraNotRun += u.KuraNotRun
		t.RedisSeconds += u.RedisSeconds
		t.KuraSeconds += u.KuraSeconds
		for c, n := range u.causes {
			cc := byCause[c]
			if cc == nil {
				cc = &causeCount{Cause: c}
				byCause[c] = cc
			}
			cc.Tests += n
			cc.Units = append(cc.Units, u.Unit)
		}
	}
	r.Totals = t
	r.Causes = r.Causes[:0]
	for _, cc := range byCause {
		r.Causes = append(r.Causes, *cc)
	}
	sort.Slice(r.Causes, func(i, j int) bool {
		if r.Causes[i].Tests != r.Causes[j].Tests {
			return r.Causes[i].Tests > r.Causes[j].Tests
		}
		return r.Causes[i].Cause < r.Causes[j].Cause
	})
}

// print writes the report as tables: the units, the causes, then every failure kura
// had for a cause other than a missing command.
func (r *report) print(w io.Writer) {
	e := r.Environment
	fmt.Fprintf(w, "Redis test suite %s, external mode (%s); kura %s (one node, %s) beside %s; %.0f s\n",
		orUnknown(r.SuiteRevision), strings.Join(r.SuiteArgs, " "), peerVersion(e, "kura"), r.KuraMode, peerVersion(e, "redis-server"), r.DurationSeconds)
	fmt.Fprintf(w, "kura's configuration: --kura-transactions %s: %s\n\n", orKey(r.KuraTransactions), keyspaceLabel(orKey(r.KuraTransactions)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "unit\ttests\tskipped\tredis-server passed\tkura passed\tkura failed\tkura not run\tredis-server s\tkura s\t")
	for _, u := range append(append([]unitReport(nil), r.Units...), r.Totals) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t\n", u.Unit, u.Tests, u.Skipped, u.RedisPassed, u.KuraPassed, u.KuraFailed, u.KuraNotRun, u.RedisSeconds, u.KuraSeconds)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nkura's failures by cause:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Causes {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", c.Tests, c.Cause, strings.Join(c.Units, " "))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nkura's other failures:")
	for _, u := range r.Units {
		for _, f := range u.KuraFailures {
			if f.Cause == "other" {
				fmt.Fprintf(w, "  %s: %s: %s\n", u.Unit, f.Test, truncate(f.Error, 160))
			}
		}
	}
	for _, u := range r.Units {
		for _, f := range u.RedisFailures {
			fmt.Fprintf(w, "redis-server failed %s: %s: %s\n", u.Unit, f.Test, truncate(f.Error, 160))
		}
	}
}

// printSaved prints a report --json wrote.
func printSaved(path string, w io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if r.Environment == nil {
		return fmt.Errorf("%s is not a report of redis-suite --json", path)
	}
	r.print(w)
	return nil
}

// The values of --kura-transactions.
const (
	transactionsKey       = "key"
	transactionsPartition = "partition"
)

// keyspaceLabel says how kura's default keyspace, where its Redis connections run, runs
// its transactions under --kura-transactions transactions, so that a report of the
// per-key configuration is not taken for one of kura's default configuration.
func keyspaceLabel(transactions string) string {
	if transactions == transactionsKey {
		return "NOT the default configuration: kura server --default-transactions key, the default keyspace a transaction per key (as a cluster begun before 7 December 2026 keeps it)"
	}
	return "the default configuration: connections in the default keyspace, whose transactions run per partition (kura server --default-transactions partition)"
}

// orKey is a report's --kura-transactions, "key" for one written before the option,
// when the default keyspace ran a transaction per key.
func orKey(transactions string) string {
	if transactions == "" {
		return transactionsKey
	}
	return transactions
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown revision)"
	}
	return s
}

func peerVersion(e *bench.Environment, name string) string {
	for _, p := range e.Peers {
		if p.Name == name {
			return p.Version
		}
	}
	return name
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
