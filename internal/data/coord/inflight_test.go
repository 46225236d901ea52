package coord

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/kuradb/kura/internal/core/paxos"
)

// TestInflightCommitsAwait: a read of a key waits for that key's commit on its way, a
// scan of a keyspace for every commit on its way in that keyspace when it began, and
// neither waits for another keyspace's, nor for a commit begun after it.
func TestInflightCommitsAwait(t *testing.T) {
	proposal := func(node string) paxos.Proposal {
		return paxos.Proposal{Ballot: paxos.Ballot{Time: 1, Node: node}}
	}
	tests := []struct {
		name string
		wait func(f *inflightCommits) error
		// released is how many of the commits on their way (a/x, a/y, b/x, in that
		// order) must have been answered before the wait returns.
		released int
	}{
		{"a key waits for its own commit", func(f *inflightCommits) error { return f.await(context.Background(), "a", []byte("x")) }, 1},
		{"a keyspace waits for each of its commits", func(f *inflightCommits) error { return f.awaitKeyspace(context.Background(), "a") }, 2},
		{"a key with no commit on its way waits for none", func(f *inflightCommits) error { return f.await(context.Background(), "a", []byte("z")) }, 0},
		{"another keyspace waits for none", func(f *inflightCommits) error { return f.awaitKeyspace(context.Background(), "c") }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var f inflightCommits
				keys := []struct{ keyspace, key, node string }{{"a", "x", "n1"}, {"a", "y", "n2"}, {"b", "x", "n3"}}
				for _, k := range keys {
					f.add(inflightKey(k.keyspace, []byte(k.key)), proposal(k.node))
				}
				returned := make(chan error, 1)
				go func() { returned <- tt.wait(&f) }()
				for i, k := range keys {
					synctest.Wait()
					select {
					case err := <-returned:
						if i < tt.released {
							t.Fatalf("returned (%v) with %d of %d commits answered", err, i, tt.released)
						}
						return
					default:
					}
					if i == 0 {
						// A commit begun after the wait is not waited for.
						f.add(inflightKey("a", []byte("later")), proposal("n9"))
					}
					f.done(inflightKey(k.keyspace, []byte(k.key)), proposal(k.node))
				}
				synctest.Wait()
				select {
				case err := <-returned:
					if err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatal("still waiting once every commit it waits for was answered")
				}
			})
		})
	}
}

// TestInflightCommitsAwaitEndsWithContext: a wait ends with its context.
func TestInflightCommitsAwaitEndsWithContext(t *testing.T) {
	var f inflightCommits
	f.add(inflightKey("a", []byte("x")), paxos.Proposal{Ballot: paxos.Ballot{Time: 1, Node: "n1"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.await(ctx, "a", []byte("x")); err != context.Canceled {
		t.Fatalf("await = %v, want %v", err, context.Canceled)
	}
	if err := f.awaitKeyspace(ctx, "a"); err != context.Canceled {
		t.Fatalf("awaitKeyspace = %v, want %v", err, context.Canceled)
	}
}
