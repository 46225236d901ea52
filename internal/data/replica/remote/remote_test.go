package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/clockguard"
	"github.com/kuradb/kura/internal/io/transport"
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
		{"refusal with its reason", fmt.Errorf("%w: node n6 knows node n4 as left, and serves mutate only to members of its cluster", replica.ErrNotMember).Error(),
			true, "replica n6: not a member: node n6 knows node n4 as left, and serves mutate only to members of its cluster"},
		{"refusal alone", replica.ErrNotMember.Error(), true, "replica n6: not a member"},
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
				if got := errors.Is(err, replica.ErrNotMember); got != tt.want {
					t.Fatalf("%s: errors.Is(%v, replica.ErrNotMember) = %v, want %v", op, err, got, tt.want)
				}
				if tt.want && err.Error() != tt.text {
					t.Errorf("%s: error %q, want %q", op, err, tt.text)
				}
			}
		})
	}
}

// failing is a Caller that answers every request with one remote error.
type failing struct{ err *transport.RemoteError }

func (f failing) Call(context.Context, transport.Peer, transport.Kind, []byte) ([]byte, error) {
	return nil, f.err
}

// TestRemoteErrorIdentity checks that a peer's refusal gets its identity back from its
// code over a connection of protocol 4, whatever its text, and from its text over one of
// protocol 3; and that the code a node puts on its errors is the one its callers read.
func TestRemoteErrorIdentity(t *testing.T) {
	refusals := []error{clockguard.ErrClockOffset, replica.ErrScanTooLarge, replica.ErrNotMember}
	tests := []struct {
		name   string
		remote *transport.RemoteError
		want   error // nil: no refusal
	}{
		{"coded clock offset", &transport.RemoteError{Code: ErrorCode(fmt.Errorf("stamp: %w", clockguard.ErrClockOffset)), Coded: true, Msg: "refused"}, clockguard.ErrClockOffset},
		{"coded scan too large", &transport.RemoteError{Code: ErrorCode(replica.ErrScanTooLarge), Coded: true, Msg: "too big"}, replica.ErrScanTooLarge},
		{"coded not a member", &transport.RemoteError{Code: ErrorCode(fmt.Errorf("%w: who?", replica.ErrNotMember)), Coded: true, Msg: "no"}, replica.ErrNotMember},
		{"coded none, text quoting a refusal", &transport.RemoteError{Coded: true, Msg: replica.ErrNotMember.Error() + ": " + clockguard.ErrClockOffset.Error()}, nil},
		{"unknown code of a newer node", &transport.RemoteError{Code: 999, Coded: true, Msg: clockguard.ErrClockOffset.Error()}, nil},
		{"protocol 3 clock offset", &transport.RemoteError{Msg: "apply: " + clockguard.ErrClockOffset.Error() + " of 3s"}, clockguard.ErrClockOffset},
		{"protocol 3 not a member", &transport.RemoteError{Msg: replica.ErrNotMember.Error() + ": node n6 does not know node n4"}, replica.ErrNotMember},
		{"protocol 3 other failure", &transport.RemoteError{Msg: "disk full"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSet("n4", nil, failing{tt.remote}).Replica(cluster.Node{ID: "n6"})
			err := r.Apply(context.Background(), "ks", []lww.Record{{Key: []byte("k")}})
			if err == nil {
				t.Fatal("Apply succeeded, want the peer's error")
			}
			for _, refusal := range refusals {
				if got := errors.Is(err, refusal); got != (refusal == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, refusal, got, refusal == tt.want)
				}
			}
			if !strings.Contains(err.Error(), tt.remote.Msg) {
				t.Errorf("error %q lost the peer's message %q", err, tt.remote.Msg)
			}
		})
	}
	if got := ErrorCode(errors.New("disk full")); got != transport.NoErrorCode {
		t.Errorf("ErrorCode of an unnamed error = %d, want none", got)
	}
}
