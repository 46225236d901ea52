package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassifyGRPC(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Type
	}{
		{nil, TypeOK},
		{status.Error(codes.Unavailable, "unavailable: QUORUM needs 2 replicas, 1 (dc1: 1) alive, so no replica was asked: bring the down replicas back (kura status shows them) or use a lower consistency level"), TypeFail},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.2:1: connect: connection refused"`), TypeFail},
		{status.Error(codes.Unavailable, "error reading from server: EOF"), TypeInfo},
		{status.Error(codes.InvalidArgument, "invalid argument: empty key"), TypeFail},
		{status.Error(codes.NotFound, "no keyspace nemesis"), TypeFail},
		{status.Error(codes.DeadlineExceeded, "timeout: QUORUM needs 2 acknowledgements, 1 received"), TypeInfo},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), TypeInfo},
		{status.Error(codes.Internal, "storage: disk full"), TypeInfo},
	} {
		if got := classifyGRPC(tc.err); got != tc.want {
			t.Errorf("classifyGRPC(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// replyError is a Redis error reply, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestClassifyRESP(t *testing.T) {
	var _ redis.Error = replyError("")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, tc := range []struct {
		err  error
		want Type
	}{
		{nil, TypeOK},
		{replyError("UNAVAILABLE unavailable: QUORUM needs 2 replicas, 1 alive"), TypeFail},
		{replyError("TIMEOUT timeout: QUORUM needs 2 acknowledgements, 1 received"), TypeInfo},
		{replyError("ERR storage: disk full"), TypeInfo},
		{fmt.Errorf("redis: %w", refused), TypeFail},
		{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("i/o timeout")}, TypeInfo},
		{context.DeadlineExceeded, TypeInfo},
	} {
		if got := classifyRESP(tc.err); got != tc.want {
			t.Errorf("classifyRESP(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
