package apiserver

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// security returns the server options for serverTLS (server-side TLS, nil for
// plaintext) and token (a bearer token every call must carry, "" for none).
func security(serverTLS *tls.Config, token string) []grpc.ServerOption {
	var opts []grpc.ServerOption
	if serverTLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(serverTLS)))
	}
	if token != "" {
		// Every method, the Admin service's included; the stream interceptor keeps a
		// streaming method added later from being served unauthenticated.
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				if err := checkToken(ctx, token); err != nil {
					return nil, err
				}
				return handler(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
				if err := checkToken(ss.Context(), token); err != nil {
					return err
				}
				return handler(srv, ss)
			}))
	}
	return opts
}

// bearerPrefix starts the authorization metadata a client sends: "Bearer <token>".
const bearerPrefix = "Bearer "

// checkToken admits a call whose "authorization" metadata is "Bearer <token>", and
// answers any other with Unauthenticated, saying how to send the token.
func checkToken(ctx context.Context, token string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	if len(values) == 0 {
		return status.Error(codes.Unauthenticated, `this node requires a token: send "authorization: Bearer <token>" metadata `+
			"(kura commands: --token-file FILE; Go client: Options.Token)")
	}
	given, ok := strings.CutPrefix(values[0], bearerPrefix)
	if !ok || subtle.ConstantTimeCompare([]byte(given), []byte(token)) != 1 {
		return status.Error(codes.Unauthenticated, `the authorization token is wrong: send "authorization: Bearer <token>" `+
			"with the token of the node's --auth-token-file")
	}
	return nil
}
