package nemesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// inject starts a fault.
func (c *Cluster) inject(ctx context.Context, f Fault) error {
	if f.Kind.Process() && c.attached {
		return errAttached
	}
	switch f.Kind {
	case Kill, Wipe:
		return c.eachNode(f.Nodes, c.kill)
	case Pause:
		return c.eachNode(f.Nodes, func(n *node) error { return c.signal(n, syscall.SIGSTOP) })
	}
	faults := f.apiFaults()
	return c.eachNode(f.Nodes, func(n *node) error { return c.setFaults(ctx, n, faults[n.ID]) })
}

// heal ends a fault: restarts killed nodes (wiped first, then repaired), resumes paused
// ones, clears injected faults.
func (c *Cluster) heal(ctx context.Context, f Fault, keyspace string) error {
	switch f.Kind {
	case Kill:
		// Healed once the nodes answer: a fault that followed at once would otherwise hit
		// nodes still starting.
		if err := c.eachNode(f.Nodes, c.restart); err != nil {
			return err
		}
		return c.eachNode(f.Nodes, func(n *node) error { return c.clearFaults(ctx, n, time.Minute) })
	case Wipe:
		return c.eachNode(f.Nodes, func(n *node) error {
			if err := os.RemoveAll(n.dataDir); err != nil {
				return err
			}
			if err := c.restart(n); err != nil {
				return err
			}
			// The node comes back rebuilding and pulls each range from one other
			// replica, which may lack a write the wiped disk had acknowledged; the repair
			// brings what it lacked, and the history marks the span until it ends.
			if err := c.clearFaults(ctx, n, time.Minute); err != nil {
				return err
			}
			_, err := c.Repair(ctx, n.ID, keyspace, time.Minute)
			return err
		})
	case Pause:
		return c.eachNode(f.Nodes, func(n *node) error { return c.signal(n, syscall.SIGCONT) })
	}
	return c.eachNode(f.Nodes, func(n *node) error { return c.setFaults(ctx, n, nil) })
}

// HealAll undoes every fault the harness may have left: resumes every process, restarts
// the dead ones and clears every node's injected faults.
func (c *Cluster) HealAll(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		if !c.attached {
			if n.running() {
				errs = append(errs, c.signal(n, syscall.SIGCONT))
			} else {
				errs = append(errs, c.restart(n))
			}
		}
	}
	for _, n := range c.nodes {
		errs = append(errs, c.clearFaults(ctx, n, time.Minute))
	}
	return errors.Join(errs...)
}

// clearFaults heals one node's injected faults, retrying while the node starts: it
// doubles as the wait for a restarted node to answer. A node that refuses faults
// (started without --enable-faults) has none to clear.
func (c *Cluster) clearFaults(ctx context.Context, n *node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.setFaults(ctx, n, nil)
		if err == nil || status.Code(err) == codes.FailedPrecondition {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("nemesis: %s did not answer in %v: %w", n.ID, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// eachNode runs fn on the named nodes, all of them even when one fails.
func (c *Cluster) eachNode(ids []string, fn func(*node) error) error {
	var errs []error
	for _, id := range ids {
		n, err := c.node(id)
		if err == nil {
			err = fn(n)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
