package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kuradb/kura/cmd/internal/cli"
)

// exitStatus is a child process's exit status, which kura exits with as its own.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// runBench runs `kura bench ARGS` as `kura-bench ARGS`. The experiments are a binary of
// their own so that the server links none of what only they need (gocql, gonum/plot);
// the verb stays so that the commands in the docs and in operators' hands keep working.
func runBench(args []string, stdout, stderr io.Writer) error {
	bin, err := cli.Sibling("kura-bench")
	if err != nil {
		fmt.Fprintf(stderr, "kura bench: the benches are a separate binary, kura-bench, and there is %v.\n"+
			"Build it beside kura, from the repository:\n  go build -o kura-bench ./cmd/kura-bench\n"+
			"or run one bench without installing it:\n  go run ./cmd/kura-bench %s\n", err, strings.Join(args, " "))
		return exitStatus(2)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = os.Environ()
	if os.Getenv(cli.KuraBinaryEnv) == "" {
		if self, err := os.Executable(); err == nil {
			cmd.Env = append(cmd.Env, cli.KuraBinaryEnv+"="+self)
		}
	}
	// An interrupt or a termination meant for kura is meant for the bench, which stops
	// its servers and writes what it measured; kura waits for it rather than dying first.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for {
		select {
		case sig := <-signals:
			cmd.Process.Signal(sig)
		case err := <-waited:
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				return err
			}
			if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
				return exitStatus(128 + int(status.Signal()))
			}
			return exitStatus(exit.ExitCode())
		}
	}
}
