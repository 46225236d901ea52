package replica

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/transport"
)

// answering is a Caller that answers every request with a remote error of text msg, as
// the transport hands back a peer's handler error.
type answering struct{ msg string }

func (a answering) Call(context.Context, transport.Peer, transport.Kind, []byte) ([]byte, error) {
	return nil, &transport.RemoteError{Msg: a.msg}
}

// TestRemoteGivesNotMemberBack checks that a peer's refusal of this node, whose text
// starts with ErrNotMember's as the node's admission check wraps it, comes back from
// Remote as ErrNotMember with the peer's reason in its message, and that a failure whose
// text merely contains the words is not taken for one.
func TestRemoteGivesNotMemberBack(t *testing.T) {
	tests := []struct {
		name string
		msg  string // the peer's error, as it crossed the wire
		want bool
		text string // the error's message, when a refusal
	}{
		{"refusal with its reason", fmt.Errorf("%w: node n6 knows node n4 as left, and serves mutate only to members of its cluster", ErrNotMember).Error(),
			true, "replica n6: not a member: node n6 knows node n4 as left, and serves mutate only to members of its cluster"},
		{"refusal alone", ErrNotMember.Error(), true, "replica n6: not a member"},
		{"another word", "not a membership message kind", false, ""},
		{"quoted inside", "open /data/not a member: no such file", false, ""},
		{"another failure", "disk full", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSet("n4", nil, answering{msg: tt.msg}).Replica(cluster.Node{ID: "n6"})
			for op, err := range map[string]error{
				"apply": r.Apply(context.Background(), "ks", []lww.Record{{Key: []byte("k")}}),
				"get": func() error {
					_, _, err := r.Get(context.Background(), "ks", []byte("k"))
					return err
				}(),
			} {
				if got := errors.Is(err, ErrNotMember); got != tt.want {
					t.Fatalf("%s: errors.Is(%v, ErrNotMember) = %v, want %v", op, err, got, tt.want)
				}
				if tt.want && err.Error() != tt.text {
					t.Errorf("%s: error %q, want %q", op, err, tt.text)
				}
			}
		})
	}
}
