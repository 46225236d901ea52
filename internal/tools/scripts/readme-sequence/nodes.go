package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// node is one `kura server` process of the sequence, started with the command README.md
// gives for it, its ports substituted.
type node struct {
	id, dc               string
	listen, client, resp string
	dataDir, logPath     string
	seed                 string // the internode address of --seeds; empty for the first node
	replace              string // --replace: the dead node this one replaces
	cmd                  *exec.Cmd
	exited               chan error // receives the running process's end once
}

// freeAddr asks the kernel for a loopback address nothing listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// newNode picks the node's ports; its data dir and log are under work.
func newNode(work, id, dc, seed, replace string) (*node, error) {
	n := &node{id: id, dc: dc, seed: seed, replace: replace,
		dataDir: filepath.Join(work, id), logPath: filepath.Join(work, id+".log")}
	for _, addr := range []*string{&n.listen, &n.client, &n.resp} {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		*addr = a
	}
	return n, nil
}

// args is README.md's command for the node, plus --resp (the Redis port the
// lightweight-transaction check uses) and --spare-go-procs 0, which README asks of nodes
// sharing a machine.
func (n *node) args() []string {
	args := []string{"server", "--id", n.id, "--dc", n.dc, "--listen", n.listen, "--client", n.client, "--data-dir", n.dataDir}
	if n.seed != "" {
		args = append(args, "--seeds", n.seed)
	}
	if n.replace != "" {
		args = append(args, "--replace", n.replace)
	}
	return append(args, "--resp", n.resp, "--spare-go-procs", "0")
}

// start runs the node's command, its output appended to its log, and returns once its
// client port accepts connections.
func (n *node) start(bin string) error {
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().UTC().Format(time.RFC3339), bin, strings.Join(n.args(), " "))
	n.cmd = exec.Command(bin, n.args()...)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", n.id, err)
	}
	n.exited = make(chan error, 1)
	go func(cmd *exec.Cmd, exited chan error) { exited <- cmd.Wait() }(n.cmd, n.exited)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", n.client, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-n.exited:
			n.cmd = nil
			return fmt.Errorf("%s exited before its client port answered (%v); its log: %s", n.id, err, n.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s's client port %s did not answer within a minute; its log: %s", n.id, n.client, n.logPath)
}

// running says whether the node's process runs.
func (n *node) running() bool { return n.cmd != nil }

// terminate sends SIGTERM and waits for the process to end, SIGKILL after a minute.
func (n *node) terminate() error {
	if n.cmd == nil {
		return nil
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(time.Minute):
		_ = n.cmd.Process.Kill()
		<-n.exited
		n.cmd = nil
		return fmt.Errorf("%s did not stop within a minute of SIGTERM; killed", n.id)
	}
	n.cmd = nil
	return nil
}

// kill is kill -9.
func (n *node) kill() {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.exited
	n.cmd = nil
}

// wipe removes the node's data dir, as an operator who lost the disk does.
func (n *node) wipe() error { return os.RemoveAll(n.dataDir) }

// kura runs a kura client command and returns its stdout, or an error with its stderr.
func kura(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.String(), errors.New("kura " + strings.Join(args, " ") + ": " + msg)
	}
	return stdout.String(), nil
}
