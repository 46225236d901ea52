package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// server is a redis-server or kura process the harness started for one unit.
type server struct {
	name string
	addr string // its Redis protocol address
	cmd  *exec.Cmd
	log  string
	// exited receives the process's end once.
	exited chan error
}

// freePort asks the kernel for a loopback port nothing listens on. The port comes from
// the ephemeral range (32768 and up on Linux), clear of the suite's own ports
// (--baseport and the ones above it).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRedis starts redis-server with the suite's own configuration
// (tests/assets/default.conf: DEBUG enabled, keyspace events on), on a fresh port and
// directory.
func startRedis(bin, suiteDir, dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	return start("redis-server", "127.0.0.1:"+p, dir, bin,
		filepath.Join(suiteDir, "tests", "assets", "default.conf"),
		"--port", p, "--bind", "127.0.0.1", "--dir", dir,
		"--pidfile", filepath.Join(dir, "redis.pid"), "--logfile", "")
}

// startKura starts a one-node kura with the Redis protocol on, durable in dir unless
// inMemory, its default keyspace's transactions as transactions says
// (--default-transactions); Redis connections start in the default keyspace.
func startKura(bin, dir string, inMemory bool, transactions string) (*server, error) {
	nodePort, err := freePort()
	if err != nil {
		return nil, err
	}
	respPort, err := freePort()
	if err != nil {
		return nil, err
	}
	resp := "127.0.0.1:" + strconv.Itoa(respPort)
	args := []string{"server", "--id", "suite", "--dc", "dc1",
		"--listen", "127.0.0.1:" + strconv.Itoa(nodePort), "--resp", resp, "--default-transactions", transactions}
	if inMemory {
		args = append(args, "--in-memory")
	} else {
		args = append(args, "--data-dir", filepath.Join(dir, "data"))
	}
	return start("kura", resp, dir, bin, args...)
}

// start runs bin with its output in dir/NAME.log and waits until addr answers PING.
func start(name, addr, dir, bin string, args ...string) (*server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &server{name: name, addr: addr, cmd: cmd, log: logPath, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait() }()
	// A first start of kura builds its storage; a minute is far more than either needs.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if ping(addr) {
			return s, nil
		}
		select {
		case err := <-s.exited:
			return nil, fmt.Errorf("%s exited before it answered PING (%v); its log: %s", name, err, logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
	_ = cmd.Process.Kill()
	<-s.exited
	return nil, fmt.Errorf("%s did not answer PING on %s within a minute; its log: %s", name, addr, logPath)
}

// ping says whether addr answers a RESP PING with PONG.
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// stop ends the server: SIGTERM, then SIGKILL if it is still there after 30 seconds.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// runUnit runs one unit of the suite against addr in external mode and writes its
// output to outPath. The suite's test server spawns a test client process: both run in
// a process group of their own, killed whole when the unit passes timeout.
// errKilled is runUnit's error for a unit it killed at the timeout; its output so far
// is kept.
var errKilled = errors.New("killed at --timeout")

// suitePortCount is how many ports, from its base port, one run of the suite may use:
// its test server's and the ones its tests listen on.
const suitePortCount = 2000

// freeBasePorts picks n ranges of suitePortCount ports below the ephemeral range whose
// first port is free, each a different range, so that the two runs of a unit, and
// another harness running beside this one, do not meet on a port.
func freeBasePorts(n int) ([]int, error) {
	var bases []int
	for _, k := range rand.Perm(11) {
		base := 10000 + k*suitePortCount
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base)))
		if err != nil {
			continue
		}
		l.Close()
		if bases = append(bases, base); len(bases) == n {
			return bases, nil
		}
	}
	return nil, fmt.Errorf("no %d free port ranges of %d between 10000 and 32000", n, suitePortCount)
}

func runUnit(ctx context.Context, tclsh, suiteDir, addr, unit string, baseport int, suiteArgs []string, timeout time.Duration, outPath string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	defer out.Close()
	args := append([]string{"tests/test_helper.tcl", "--host", host, "--port", port,
		"--single", unit, "--clients", "1", "--baseport", strconv.Itoa(baseport), "--portcount", strconv.Itoa(suitePortCount),
		"--timeout", strconv.Itoa(int(timeout.Seconds()))}, suiteArgs...)
	cmd := exec.Command(tclsh, args...)
	cmd.Dir = suiteDir
	// TERM other than xterm: the suite prints no colour codes.
	cmd.Env = append(os.Environ(), "TERM=dumb")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", tclsh, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return errKilled
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return ctx.Err()
	}
	// The suite exits 1 when a test failed: that is a result, not a harness error.
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return err
	}
	return nil
}
