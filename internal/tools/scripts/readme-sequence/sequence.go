package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// sequence is one run of README.md's operator sequence.
type sequence struct {
	o      options
	work   string
	nodes  map[string]*node
	want   expectation
	ledger *ledger
	lwt    *lwtState
	rep    *report
	step   *stepReport
}

// run performs the steps in order; an error stops the sequence (an operation that
// failed or a cluster that did not settle leaves nothing sound to go on from).
func (s *sequence) run(ctx context.Context) error {
	steps := []struct {
		name        string
		do          func(context.Context) error
		underWrites bool // writers run from before the operation until the cluster settled
	}{
		{"1 three nodes in two DCs, keyspace app", s.founding, false},
		{"2 n4 and n5 join dc1 at once, under writes", s.twoJoins, true},
		{"3 SIGTERM n1, restart it with its own command", s.restartFirst, false},
		{"4 kill -9 n1, wipe its data dir, restart it", s.wipeFirst, false},
		{"5 kill -9 n3, replace it with n6", s.replaceThird, false},
		{"6 kura put/get at QUORUM through every live node", s.putGetEverywhere, false},
		{"7 decommission n5 under writes", s.decommission, true},
	}
	for _, st := range steps {
		s.rep.Steps = append(s.rep.Steps, stepReport{Name: st.name})
		s.step = &s.rep.Steps[len(s.rep.Steps)-1]
		fmt.Fprintf(os.Stderr, "readme-sequence: step %s\n", st.name)
		var w *writers
		if st.underWrites {
			var err error
			if w, err = startWriters(ctx, s.ledger, st.name[:1], s.clientAddrs(), s.o.writers); err != nil {
				return err
			}
		}
		began := time.Now()
		err := st.do(ctx)
		s.step.OperationSeconds = time.Since(began).Seconds()
		if err != nil {
			s.record(checkReport{Name: "operation", Detail: err.Error()})
		} else {
			err = s.settle(ctx)
		}
		if w != nil {
			s.step.Note = w.halt()
		}
		if err != nil {
			return fmt.Errorf("step %s: %w", st.name, err)
		}
		s.afterSettled()
		s.checkAll(ctx)
	}
	return nil
}

// record adds a check to the step and the totals, and prints its line on stderr.
func (s *sequence) record(c checkReport) {
	if c.Detail == "" {
		c.Detail = "ok"
	}
	s.step.Checks = append(s.step.Checks, c)
	s.rep.Checks++
	if c.OK {
		s.rep.Passed++
	}
	s.rep.Missing += c.Missing
	s.rep.Wrong += c.Wrong
	s.rep.Errors += c.Errors
	mark := "ok"
	if !c.OK {
		mark = "FAIL"
	}
	fmt.Fprintf(os.Stderr, "readme-sequence:   %s %s: %s (%.1f s)\n", mark, c.Name, c.Detail, c.Seconds)
}

// live are the nodes whose processes run and are on the ring, in id order.
func (s *sequence) live() []*node {
	var ns []*node
	for _, id := range s.want.live {
		ns = append(ns, s.nodes[id])
	}
	return ns
}

func (s *sequence) clientAddrs() []string {
	var addrs []string
	for _, n := range s.live() {
		addrs = append(addrs, n.client)
	}
	return addrs
}

// add defines a node; seed names the node whose --listen its --seeds gives.
func (s *sequence) add(id, dc, seed, replace string) (*node, error) {
	seedAddr := ""
	if seed != "" {
		seedAddr = s.nodes[seed].listen
	}
	n, err := newNode(s.work, id, dc, seedAddr, replace)
	if err != nil {
		return nil, err
	}
	s.nodes[id] = n
	return n, nil
}

func (s *sequence) setLive(ids ...string) {
	s.want.live = slices.Clone(ids)
	slices.Sort(s.want.live)
}

// stopAll ends every process the sequence started.
func (s *sequence) stopAll() {
	for _, n := range s.nodes {
		if n.running() {
			_ = n.terminate()
		}
	}
}

// settle waits until every live node's `kura status --json` shows the expected cluster.
func (s *sequence) settle(ctx context.Context) error {
	began := time.Now()
	defer func() { s.step.SettleSeconds += time.Since(began).Seconds() }()
	took, err := poll(ctx, s.o.settleTimeout, func() error {
		views := map[string]statusView{}
		for _, n := range s.live() {
			out, err := kura(ctx, s.o.kura, "status", "--addr", n.client, "--json")
			if err != nil {
				continue
			}
			if v, err := parseStatus(out); err == nil {
				views[n.id] = v
			}
		}
		if why := unsettled(s.want, views); why != "" {
			return fmt.Errorf("%s", why)
		}
		return nil
	})
	c := checkReport{Name: "settled: " + strings.Join(s.want.live, " ") + " normal and up in every view", OK: err == nil, Seconds: took.Seconds()}
	if len(s.want.gone) > 0 {
		c.Name += ", " + strings.Join(s.want.gone, " ") + " left or removed"
	}
	if err != nil {
		c.Detail = fmt.Sprintf("not settled after %v: %v", s.o.settleTimeout, err)
		s.record(c)
		return fmt.Errorf("the cluster did not settle within %v: %w", s.o.settleTimeout, err)
	}
	s.record(c)
	return nil
}

// checkAll reads every acknowledged write at ONE through every live node, runs a
// lightweight transaction in default through each, and compares default's definition.
func (s *sequence) checkAll(ctx context.Context) {
	keys, values := s.ledger.snapshot()
	for _, n := range s.live() {
		var count keyCount
		took, _ := poll(ctx, s.o.settleTimeout, func() error {
			count = readAllAt(ctx, n, keys, values)
			if !count.clean() {
				return fmt.Errorf("%s", count.firstProblem)
			}
			return nil
		})
		c := checkReport{Name: "acknowledged writes at ONE through " + n.id, OK: count.clean(), Seconds: took.Seconds(),
			Keys: count.keys, Missing: count.missing, Wrong: count.wrong, Errors: count.errors}
		c.Detail = fmt.Sprintf("%d keys, %d missing, %d wrong, %d errors", count.keys, count.missing, count.wrong, count.errors)
		if count.firstProblem != "" {
			c.Detail += " (first: " + count.firstProblem + ")"
		}
		s.record(c)
	}
	for _, n := range s.live() {
		took, err := poll(ctx, s.o.settleTimeout, func() error { return s.lwt.transactAt(ctx, n) })
		c := checkReport{Name: "INCR and MULTI/EXEC in default through " + n.id, OK: err == nil, Seconds: took.Seconds()}
		if err != nil {
			c.Detail = err.Error()
		}
		s.record(c)
	}
	defs := map[string][]string{}
	var first error
	for _, n := range s.live() {
		def, err := definitionAt(ctx, n)
		if err != nil {
			def = "error: " + err.Error()
			if first == nil {
				first = err
			}
		}
		defs[def] = append(defs[def], n.id)
	}
	c := checkReport{Name: "default's definition on every node", OK: len(defs) == 1 && first == nil}
	var parts []string
	for def, ids := range defs {
		parts = append(parts, strings.Join(ids, " ")+": "+def)
	}
	slices.Sort(parts)
	c.Detail = strings.Join(parts, "; ")
	s.record(c)
}

// writeKeys writes n fresh keys at QUORUM through the live nodes.
func (s *sequence) writeKeys(ctx context.Context, step string, n int) error {
	w, err := startWriters(ctx, s.ledger, step, s.clientAddrs(), 1)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.o.settleTimeout)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		done := w.acked >= n
		w.mu.Unlock()
		if done {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.step.Note = w.halt()
	if w.acked < n {
		return fmt.Errorf("only %d of %d writes acknowledged within %v", w.acked, n, s.o.settleTimeout)
	}
	return nil
}

// Step 1: README.md, "A cluster of separate processes".
func (s *sequence) founding(ctx context.Context) error {
	n1, err := s.add("n1", "dc1", "", "")
	if err != nil {
		return err
	}
	if err := n1.start(s.o.kura); err != nil {
		return err
	}
	for _, spec := range [][2]string{{"n2", "dc1"}, {"n3", "dc2"}} {
		n, err := s.add(spec[0], spec[1], "n1", "")
		if err != nil {
			return err
		}
		if err := n.start(s.o.kura); err != nil {
			return err
		}
	}
	s.setLive("n1", "n2", "n3")
	if err := s.settle(ctx); err != nil {
		return err
	}
	if _, err := kura(ctx, s.o.kura, "keyspace", "create", appKeyspace, "--replication", "dc1=2,dc2=1", "--addr", n1.client); err != nil {
		return err
	}
	return s.writeKeys(ctx, "initial", s.o.initialKeys)
}

// Step 2: "Add a node", two at once, writes running meanwhile.
func (s *sequence) twoJoins(ctx context.Context) error {
	var joiners []*node
	for _, id := range []string{"n4", "n5"} {
		n, err := s.add(id, "dc1", "n1", "")
		if err != nil {
			return err
		}
		joiners = append(joiners, n)
	}
	errs := make([]error, len(joiners))
	var wg sync.WaitGroup
	for i, n := range joiners {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = n.start(s.o.kura) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	s.setLive("n1", "n2", "n3", "n4", "n5")
	return nil
}

// Step 3: "Restarts": the seedless first node, stopped gracefully, started again.
func (s *sequence) restartFirst(ctx context.Context) error {
	n1 := s.nodes["n1"]
	if err := n1.terminate(); err != nil {
		return err
	}
	return n1.start(s.o.kura)
}

// Step 4: "Restarts": a node whose data dir is empty rebuilds its ranges.
func (s *sequence) wipeFirst(ctx context.Context) error {
	n1 := s.nodes["n1"]
	n1.kill()
	if err := n1.wipe(); err != nil {
		return err
	}
	return n1.start(s.o.kura)
}

// Step 5: "Replace a dead node". The replacement is refused while n3 is still up, so
// it starts once every live node counts n3 down.
func (s *sequence) replaceThird(ctx context.Context) error {
	s.nodes["n3"].kill()
	others := []string{"n1", "n2", "n4", "n5"}
	_, err := poll(ctx, s.o.settleTimeout, func() error {
		for _, id := range others {
			out, err := kura(ctx, s.o.kura, "status", "--addr", s.nodes[id].client, "--json")
			if err != nil {
				return err
			}
			v, err := parseStatus(out)
			if err != nil {
				return err
			}
			for _, m := range v.Nodes {
				if m.ID == "n3" && m.Alive {
					return fmt.Errorf("%s still counts n3 alive", id)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for n3 to be seen down: %w", err)
	}
	n6, err := s.add("n6", "dc2", "n1", "n3")
	if err != nil {
		return err
	}
	if err := n6.start(s.o.kura); err != nil {
		return err
	}
	s.setLive("n1", "n2", "n4", "n5", "n6")
	s.want.gone = append(s.want.gone, "n3")
	return nil
}

// Step 6: README's put and get at QUORUM, through every live node.
func (s *sequence) putGetEverywhere(ctx context.Context) error {
	var keys []string
	for _, n := range s.live() {
		key, value := "greeting-via-"+n.id, "hello, world, from "+n.id
		if _, err := kura(ctx, s.o.kura, "put", "--addr", n.client, "--keyspace", appKeyspace, "--consistency", "QUORUM", key, value); err != nil {
			return err
		}
		s.ledger.ack(key, value)
		keys = append(keys, key)
	}
	bad := 0
	var first string
	for _, n := range s.live() {
		for _, key := range keys {
			out, err := kura(ctx, s.o.kura, "get", "--addr", n.client, "--keyspace", appKeyspace, "--consistency", "QUORUM", key)
			want := "hello, world, from " + strings.TrimPrefix(key, "greeting-via-")
			if err != nil || strings.TrimSuffix(out, "\n") != want {
				bad++
				if first == "" {
					first = fmt.Sprintf("get %s through %s: %q, %v", key, n.id, out, err)
				}
			}
		}
	}
	c := checkReport{Name: "kura get at QUORUM through every live node of a put through each", OK: bad == 0, Errors: bad,
		Detail: fmt.Sprintf("%d gets, %d not answering the value put", len(keys)*len(keys), bad)}
	if first != "" {
		c.Detail += " (first: " + first + ")"
	}
	s.record(c)
	return nil
}

// refusalText is how README.md, "Remove a node that is up", begins the refusal of a
// decommission that would leave a DC short of a keyspace's copies.
const refusalText = "decommissioning n6 would leave dc2 with 0 nodes for keyspace"

// Step 7: "Remove a node that is up". n6, alone in dc2, is refused as README shows;
// n5 leaves dc1 with three nodes, enough for app (dc1=2) and default (each=3).
func (s *sequence) decommission(ctx context.Context) error {
	_, err := kura(ctx, s.o.kura, "node", "decommission", "--addr", s.nodes["n6"].client)
	c := checkReport{Name: "decommission of n6, dc2's only node, refused", OK: err != nil && strings.Contains(err.Error(), refusalText)}
	switch {
	case err == nil:
		c.Detail = "it was accepted"
	case !c.OK:
		c.Detail = "refused without README's text (" + refusalText + "): " + err.Error()
	default:
		c.Detail = err.Error()[strings.Index(err.Error(), refusalText):]
	}
	s.record(c)
	if err == nil {
		return fmt.Errorf("the decommission of n6 was accepted")
	}
	if _, err := kura(ctx, s.o.kura, "node", "decommission", "--addr", s.nodes["n5"].client); err != nil {
		return err
	}
	s.setLive("n1", "n2", "n4", "n6")
	s.want.gone = append(s.want.gone, "n5")
	return nil
}

// afterSettled stops the process of a node that left the ring, as README.md says to
// ("Stop the process afterwards") once its decommission completed.
func (s *sequence) afterSettled() {
	for _, id := range s.want.gone {
		if n := s.nodes[id]; n.running() {
			if err := n.terminate(); err != nil {
				s.record(checkReport{Name: "stop " + id + " after it left", Detail: err.Error()})
			}
		}
	}
}
