package apiserver

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/coord"
)

// redirecting is a Backend that only names the members serving instead of its node.
type redirecting struct {
	Backend // nil: redirectLeft asks for nothing else
	targets []*kurav1.RedirectTarget
}

func (r *redirecting) RedirectTargets() []*kurav1.RedirectTarget { return r.targets }

// TestRedirectLeft: a request the coordinator refuses because this node has left the
// ring comes back unavailable, in the coordinator's words, with a Redirect naming the
// members the node's Backend gives; any other answer passes through as it is, and so
// does the refusal when no member serves instead.
func TestRedirectLeft(t *testing.T) {
	backend := &redirecting{targets: []*kurav1.RedirectTarget{{Id: "b", Dc: "dc1", ClientAddr: "127.0.0.1:2"}, {Id: "c", Dc: "dc2", ClientAddr: "127.0.0.1:3"}}}
	s := &service{cfg: Config{NodeID: "a", Backend: backend}}
	ctx := context.Background()
	info := &grpc.UnaryServerInfo{FullMethod: kurav1.KV_Put_FullMethodName}
	call := func(reply any, err error) (any, error) {
		return s.redirectLeft(ctx, &kurav1.PutRequest{}, info, func(context.Context, any) (any, error) { return reply, err })
	}
	left := &coord.LeftRingError{Node: "a", Status: cluster.StatusLeft}

	// The coordinator's error as is, and as the API hands it on (statusOf).
	for name, refusal := range map[string]error{"LeftRingError": left, "statusOf(LeftRingError)": statusOf(left)} {
		_, err := call(nil, refusal)
		st, ok := status.FromError(err)
		if !ok || st.Code() != codes.Unavailable {
			t.Fatalf("%s: err = %v (a gRPC status: %v), want codes.Unavailable", name, err, ok)
		}
		// The client shows the message to people (and tells "unavailable:" from an
		// unreachable node by it): the coordinator's words, not a status in a status.
		if st.Message() != left.Error() {
			t.Errorf("%s: message %q, want %q", name, st.Message(), left.Error())
		}
		details := st.Details()
		if len(details) != 1 {
			t.Fatalf("%s: details %v, want one Redirect", name, details)
		}
		r, ok := details[0].(*kurav1.Redirect)
		if !ok {
			t.Fatalf("%s: detail %v is no Redirect", name, details[0])
		}
		if r.GetNodeId() != "a" || r.GetReason() != "left" {
			t.Errorf("%s: redirect from %q for %q, want a, left", name, r.GetNodeId(), r.GetReason())
		}
		var ids []string
		for _, tg := range r.GetTargets() {
			ids = append(ids, tg.GetId()+"@"+tg.GetClientAddr()+"/"+tg.GetDc())
		}
		if want := []string{"b@127.0.0.1:2/dc1", "c@127.0.0.1:3/dc2"}; !slices.Equal(ids, want) {
			t.Errorf("%s: redirect targets %v, want %v, as the Backend gave them", name, ids, want)
		}
		// The metrics and the Redis front end still see the coordinator's error.
		var got *coord.LeftRingError
		if !errors.As(err, &got) || !errors.Is(err, coord.ErrUnavailable) {
			t.Errorf("%s: %v does not wrap the LeftRingError", name, err)
		}
	}

	// Anything else passes through untouched.
	reply := &kurav1.PutResponse{Timestamp: 7}
	if got, err := call(reply, nil); err != nil || got != reply {
		t.Errorf("a reply: got %v, %v; want it unchanged", got, err)
	}
	other := statusOf(coord.ErrUnavailable)
	if _, err := call(nil, other); err != other || len(status.Convert(err).Details()) != 0 {
		t.Errorf("another refusal: got %v; want %v unchanged, with no redirect", err, other)
	}

	// With no member to send to, the refusal goes back as it came.
	backend.targets = nil
	refusal := statusOf(left)
	if _, err := call(nil, refusal); err != refusal {
		t.Errorf("with no member to send to: got %v, want the refusal unchanged", err)
	}
}

// TestLeftRing: a batch fails whole only when the coordinator refused every request of
// it for having left the ring; a batch of which any request went on (answered, or
// failed for another reason) is answered item by item.
func TestLeftRing(t *testing.T) {
	left := statusOf(&coord.LeftRingError{Node: "a", Status: cluster.StatusLeft})
	other := statusOf(coord.ErrUnavailable)
	tests := []struct {
		name string
		errs []error
		want bool // the batch fails whole
	}{
		{"every request refused", []error{left, left}, true},
		{"one request, refused", []error{left}, true},
		{"one answered", []error{left, nil}, false},
		{"one failed otherwise", []error{other, left}, false},
		{"none refused", []error{nil, other}, false},
		{"an empty batch", nil, false},
	}
	for _, tt := range tests {
		err := leftRing(tt.errs)
		if got := err != nil; got != tt.want {
			t.Errorf("%s: leftRing = %v, want failing whole %v", tt.name, err, tt.want)
		}
		if err != nil && status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want codes.Unavailable", tt.name, err)
		}
	}
}
