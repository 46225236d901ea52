// Package kurav1 holds kura's wire types: the gRPC client API (kura.proto) and the
// messages nodes exchange over the transport (internode.proto). The .pb.go files are
// generated and committed, so a build needs no protoc; regenerate after editing a .proto.
package kurav1

//go:generate sh -c "cd ../.. && protoc -I . --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative api/kurav1/kura.proto api/kurav1/internode.proto"
