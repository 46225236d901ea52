package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
)

// TestAcceptorOverTheWire runs a round's steps against one replica, through the Local
// replica and through a Remote over the Server, and checks each answer: the acceptor's
// rules are package paxos's, so this checks that the state is kept between calls and
// that every field crosses the wire.
func TestAcceptorOverTheWire(t *testing.T) {
	ballot := func(t hlc.Timestamp, node string) paxos.Ballot { return paxos.Ballot{Time: t, Node: node} }
	rec := func(value string, ts hlc.Timestamp) lww.Record {
		return lww.Record{Key: []byte("k"), Value: []byte(value), Timestamp: ts, ExpiresAt: ts + 1000}
	}
	b5, b7, b9 := ballot(5<<16, "a"), ballot(7<<16, "b"), ballot(9<<16, "c")
	p5 := paxos.Proposal{Ballot: b5, Origin: b5, Record: rec("five", 5<<16)}
	p7 := paxos.Proposal{Ballot: b7, Origin: b5, Record: rec("five", 5<<16)} // p5, completed by b
	none, never := paxos.Ballot{}, hlc.Timestamp(0)
	for _, via := range []string{"local", "remote"} {
		t.Run(via, func(t *testing.T) {
			_, local, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
			var r replica.Replica = local
			if via == "remote" {
				r = remote
			}
			ctx := context.Background()
			prepare := func(b paxos.Ballot) string {
				p, err := r.Prepare(ctx, "ks", paxos.Instance{Key: []byte("k")}, b)
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf("promised=%v ballot=%v accepted=%v commits=%v found=%v record=%q@%v",
					p.Promised, p.Ballot, p.Accepted.Ballot, p.Commits, p.Found, p.Record.Value, p.Record.Timestamp)
			}
			propose := func(p paxos.Proposal) string {
				ok, promised, err := r.Propose(ctx, "ks", p)
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf("accepted=%v promised=%v", ok, promised)
			}
			steps := []struct {
				do   func() string
				want string
			}{
				{func() string { return prepare(b5) }, fmt.Sprintf("promised=true ballot=%v accepted=%v commits=[] found=false record=\"\"@%v", b5, none, never)},
				{func() string { return propose(p5) }, fmt.Sprintf("accepted=true promised=%v", b5)},
				{func() string { return prepare(b5) }, fmt.Sprintf("promised=false ballot=%v accepted=%v commits=[] found=false record=\"\"@%v", b5, none, never)},
				{func() string { return prepare(b7) }, fmt.Sprintf("promised=true ballot=%v accepted=%v commits=[] found=false record=\"\"@%v", b7, b5, never)},
				{func() string { return propose(p5) }, fmt.Sprintf("accepted=false promised=%v", b7)},
				{func() string { return propose(p7) }, fmt.Sprintf("accepted=true promised=%v", b7)},
				{func() string {
					state, err := local.PaxosState("ks", paxos.Instance{Key: []byte("k")})
					if err != nil {
						t.Fatal(err)
					}
					return fmt.Sprintf("accepted %v origin %v expires %v", state.Accepted.Ballot, state.Accepted.Origin, state.Accepted.Record.ExpiresAt)
				}, fmt.Sprintf("accepted %v origin %v expires %v", b7, b5, p7.Record.ExpiresAt)},
				{func() string {
					if err := r.Commit(ctx, "ks", p7); err != nil {
						t.Fatal(err)
					}
					return "committed"
				}, "committed"},
				{func() string { return prepare(b9) }, fmt.Sprintf("promised=true ballot=%v accepted=%v commits=[{%v %v}] found=true record=\"five\"@%v", b9, none, b7, b5, hlc.Timestamp(5<<16))},
			}
			for i, st := range steps {
				if got := st.do(); got != st.want {
					t.Fatalf("step %d:\n got %s\nwant %s", i, got, st.want)
				}
			}
			if state, err := local.PaxosState("ks", paxos.Instance{Key: []byte("k")}); err != nil || state.Promised != b9 || len(state.Commits) != 1 {
				t.Errorf("stored state = %+v, %v", state, err)
			}
		})
	}
}

// refuseClock refuses every timestamp, as a guard does one too far ahead.
type refuseClock struct{}

var errAhead = errors.New("too far ahead")

func (refuseClock) Observe(hlc.Timestamp) error { return errAhead }

func TestServerRefusesBallotsItCannotObserve(t *testing.T) {
	_, local, remote, net := newReplica(t, storage.Options{}, sched.Config{})
	net.server = NewServer(local, refuseClock{})
	ctx := context.Background()
	b := paxos.Ballot{Time: 1 << 40, Node: "ahead"}
	p := paxos.Proposal{Ballot: b, Origin: b, Record: lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1 << 40}}
	if _, err := remote.Prepare(ctx, "ks", paxos.Instance{Key: []byte("k")}, b); err == nil {
		t.Error("a prepare from a clock too far ahead was promised")
	}
	if _, _, err := remote.Propose(ctx, "ks", p); err == nil {
		t.Error("a proposal from a clock too far ahead was accepted")
	}
	if err := remote.Commit(ctx, "ks", p); err == nil {
		t.Error("a commit from a clock too far ahead was applied")
	}
	if state, err := local.PaxosState("ks", paxos.Instance{Key: []byte("k")}); err != nil || !state.Promised.IsZero() {
		t.Errorf("state after refusals = %+v, %v; want none", state, err)
	}
	net.server = NewServer(local, keepClock{})
	if _, err := remote.Prepare(ctx, "ks", paxos.Instance{Key: []byte("k")}, paxos.Ballot{}); err == nil {
		t.Error("a prepare without a ballot was answered")
	}
	if _, _, err := remote.Propose(ctx, "ks", paxos.Proposal{Ballot: b, Origin: b}); err == nil {
		t.Error("a proposal without a record was accepted")
	}
}

// TestPartitionAcceptorOverTheWire: a partition's round through the Local replica and
// through a Remote: the prepare answers each key it names, in order; the commit applies
// the batch whole and keeps it as the last commit; the partition's state is apart from a
// key's of the same bytes; a partition's prepare naming no key is refused.
func TestPartitionAcceptorOverTheWire(t *testing.T) {
	in := paxos.Instance{Key: []byte("tag"), Partition: true, Reads: [][]byte{[]byte("{tag}a"), []byte("{tag}b")}}
	b5 := paxos.Ballot{Time: 5 << 16, Node: "a"}
	p5 := paxos.Proposal{Ballot: b5, Origin: b5, Partition: []byte("tag"), Batch: []lww.Record{
		{Key: []byte("{tag}a"), Value: []byte("1"), Timestamp: 5 << 16},
		{Key: []byte("{tag}b"), Value: []byte("2"), Timestamp: 5 << 16},
	}}
	b6 := paxos.Ballot{Time: 6 << 16, Node: "b"}
	for _, via := range []string{"local", "remote"} {
		t.Run(via, func(t *testing.T) {
			_, local, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
			var r replica.Replica = local
			if via == "remote" {
				r = remote
			}
			ctx := context.Background()
			if p, err := r.Prepare(ctx, "ks", in, b5); err != nil || !p.Promised || len(p.Reads) != 2 || p.Reads[0].Found || string(p.Reads[1].Key) != "{tag}b" {
				t.Fatalf("first prepare = %+v, %v; want promised with two reads of nothing", p, err)
			}
			if ok, _, err := r.Propose(ctx, "ks", p5); err != nil || !ok {
				t.Fatalf("propose = %v, %v", ok, err)
			}
			if err := r.Commit(ctx, "ks", p5); err != nil {
				t.Fatal(err)
			}
			p, err := r.Prepare(ctx, "ks", in, b6)
			if err != nil || !p.Promised {
				t.Fatalf("second prepare = %+v, %v", p, err)
			}
			if got := fmt.Sprintf("%s@%v %s@%v", p.Reads[0].Record.Value, p.Reads[0].Record.Timestamp, p.Reads[1].Record.Value, p.Reads[1].Record.Timestamp); got != fmt.Sprintf("1@%v 2@%v", hlc.Timestamp(5<<16), hlc.Timestamp(5<<16)) {
				t.Errorf("reads after the commit = %s", got)
			}
			if p.Last.Ballot != b5 || len(p.Last.Batch) != 2 || string(p.Last.Partition) != "tag" || !p.Accepted.IsZero() {
				t.Errorf("promise after the commit: last %+v, accepted %v; want the batch whole, none accepted", p.Last, p.Accepted.Ballot)
			}
			if st, err := local.PaxosState("ks", paxos.Instance{Key: []byte("tag")}); err != nil || !st.Promised.IsZero() {
				t.Errorf("the key \"tag\"'s state = %+v, %v; want none, apart from the partition's", st, err)
			}
		})
	}
	_, _, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
	if _, err := remote.Prepare(context.Background(), "ks", paxos.Instance{Key: []byte("tag"), Partition: true}, b5); err == nil {
		t.Error("a partition's prepare naming no key was answered")
	}
}
