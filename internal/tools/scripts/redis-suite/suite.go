package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// revisionFile, in a suite directory the harness unpacked, names the Redis revision
// the tests came from.
const revisionFile = "REDIS_REVISION"

// ensureSuite returns the suite in dir, unpacking it from the Redis git repository
// gitDir at rev first when dir has none. The suite's files are Redis's (BSD licence),
// so kura's repository does not hold them: they are fetched per machine.
func ensureSuite(dir, gitDir, rev string) (revision string, err error) {
	if _, err := os.Stat(filepath.Join(dir, "tests", "test_helper.tcl")); err == nil {
		b, _ := os.ReadFile(filepath.Join(dir, revisionFile))
		return strings.TrimSpace(string(b)), nil
	}
	if gitDir == "" {
		return "", fmt.Errorf(`no Redis test suite in %s (it has no tests/test_helper.tcl).
Get Redis %s's tests once, then run again with --redis-git:
  git clone --branch %s --depth 1 https://github.com/redis/redis /tmp/redis
  go run ./internal/tools/scripts/redis-suite --redis-git /tmp/redis
or unpack the tests/ directory of any copy of Redis %s into %s`, dir, rev, rev, rev, dir)
	}
	commit, err := exec.Command("git", "-C", gitDir, "rev-parse", rev+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("--redis-git %s has no revision %s: %w", gitDir, rev, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", gitDir, "archive", "--format=tar", rev, "tests")
	var tarball bytes.Buffer
	archive.Stdout = &tarball
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s tests: %w", rev, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack the suite into %s: %v: %s", dir, err, out)
	}
	revision = rev + " " + strings.TrimSpace(string(commit))
	return revision, os.WriteFile(filepath.Join(dir, revisionFile), []byte(revision+"\n"), 0o644)
}

// functionFlush is the line of the suite's framework (tests/support/server.tcl,
// run_external_server_test) that empties the server's functions before each unit in
// external mode; kura has no functions, so the unit would stop there before its first
// test.
const (
	functionFlush        = "\n    r function flush\n"
	functionFlushAllowed = "\n    catch {r function flush}\n"
)

// workCopy copies the suite's tests/ into dst, where a run writes its own temporary
// files, and lets FUNCTION FLUSH fail there. No test is changed. It says whether it
// found the line to change.
func workCopy(suiteDir, dst string) (patched bool, err error) {
	if err := os.CopyFS(filepath.Join(dst, "tests"), os.DirFS(filepath.Join(suiteDir, "tests"))); err != nil {
		return false, fmt.Errorf("copy the suite: %w", err)
	}
	framework := filepath.Join(dst, "tests", "support", "server.tcl")
	b, err := os.ReadFile(framework)
	if err != nil {
		return false, err
	}
	if !bytes.Contains(b, []byte(functionFlush)) {
		return false, nil
	}
	return true, os.WriteFile(framework, bytes.Replace(b, []byte(functionFlush), []byte(functionFlushAllowed), 1), 0o644)
}
