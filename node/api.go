package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/antientropy"
	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/schemasync"
)

// maxScanResponseBytes bounds a scan answer to a client.
const maxScanResponseBytes = 256 << 20

// apiStreamWorkers is how many goroutines the gRPC server keeps for running calls. By
// default it starts a goroutine per call, whose stack then grows by copying under the
// coordinator and the storage read (runtime.newstack was a fifth of a 3-node
// coordinator's CPU on point reads); a worker keeps its grown stack from one call to the
// next. Calls beyond this many at once still get a goroutine each.
const apiStreamWorkers = 64

// apiServer serves the gRPC client API (kura.v1) from the node's coordinator.
type apiServer struct {
	kurav1.UnimplementedKVServer
	kurav1.UnimplementedAdminServer
	node *Node
}

// levelFromProto maps the wire level to the coordinator's; unspecified means ONE.
func levelFromProto(c kurav1.Consistency) (consistency.Level, error) {
	if c == kurav1.Consistency_CONSISTENCY_UNSPECIFIED {
		return consistency.One, nil
	}
	return consistency.Parse(c.String())
}

// serialFromProto maps a CompareAndSet's wire level to the coordinator's; unspecified
// means SERIAL.
func serialFromProto(c kurav1.Consistency) (consistency.Level, error) {
	if c == kurav1.Consistency_CONSISTENCY_UNSPECIFIED {
		return consistency.Serial, nil
	}
	return consistency.Parse(c.String())
}

// grpcCodes is the gRPC status code of each error class.
var grpcCodes = map[coord.ErrorClass]codes.Code{
	coord.ClassInvalidArgument: codes.InvalidArgument,
	coord.ClassNoKeyspace:      codes.NotFound,
	coord.ClassUnavailable:     codes.Unavailable,
	coord.ClassTimeout:         codes.DeadlineExceeded,
	coord.ClassCanceled:        codes.Canceled,
	coord.ClassAnswerFull:      codes.ResourceExhausted,
	coord.ClassInternal:        codes.Internal,
}

// statusOf turns a coordinator error into the gRPC status of its class (coord.Classify),
// keeping the message. The status error still wraps err, so that the metrics interceptor
// classifies the request by the coordinator's error, as the Redis front end does, rather
// than by mapping the code back.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	return &statusError{status: status.New(grpcCodes[coord.Classify(err)], err.Error()), cause: err}
}

// statusError is a gRPC status error that keeps the error it was made from.
type statusError struct {
	status *status.Status
	cause  error
}

func (e *statusError) Error() string { return e.status.Err().Error() }

// GRPCStatus is the status gRPC sends to the client.
func (e *statusError) GRPCStatus() *status.Status { return e.status }

// Unwrap gives errors.Is the coordinator's error.
func (e *statusError) Unwrap() error { return e.cause }

func (s *apiServer) Put(ctx context.Context, req *kurav1.PutRequest) (*kurav1.PutResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	expiresAt, err := s.node.coord.ExpiresAt(req.GetTtlMs(), req.GetExpiresAtUnixMs())
	if err != nil {
		return nil, statusOf(err)
	}
	ts, err := s.node.coord.Put(ctx, req.GetKeyspace(), req.GetKey(), req.GetValue(), expiresAt, cl)
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.PutResponse{Timestamp: uint64(ts)}, nil
}

// putManyItemsMax bounds the items of one PutMany, as getManyKeysMax bounds GetMany's.
const putManyItemsMax = 1024

// PutMany writes each item as Put would, with no order among them (the items come from
// independent callers): the coordinator sends the writes that have the same replicas to
// each replica together (coord.PutEach). It answers once every write has, each with its
// own outcome; an item is answered OK only when its write was acknowledged at the level.
func (s *apiServer) PutMany(ctx context.Context, req *kurav1.PutManyRequest) (*kurav1.PutManyResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	items := req.GetItems()
	if len(items) > putManyItemsMax {
		return nil, status.Errorf(codes.InvalidArgument, "PutMany of %d items: at most %d at once", len(items), putManyItemsMax)
	}
	start := time.Now()
	errs := make([]error, len(items)) // each item's, as statusOf gives it
	puts := make([]lww.Record, 0, len(items))
	sent := make([]int, 0, len(items)) // the index of each of puts among the items
	for i, item := range items {
		expiresAt, err := s.node.coord.ExpiresAt(item.GetTtlMs(), item.GetExpiresAtUnixMs())
		if err != nil {
			errs[i] = statusOf(err)
			continue
		}
		puts = append(puts, lww.Record{Key: item.GetKey(), Value: item.GetValue(), ExpiresAt: expiresAt})
		sent = append(sent, i)
	}
	resp := &kurav1.PutManyResponse{Results: make([]*kurav1.PutManyResult, len(items))}
	for j, r := range s.node.coord.PutEach(ctx, req.GetKeyspace(), puts, cl) {
		i := sent[j]
		if errs[i] = statusOf(r.Err); r.Err == nil {
			resp.Results[i] = &kurav1.PutManyResult{Response: &kurav1.PutResponse{Timestamp: uint64(r.Timestamp)}}
		}
	}
	elapsed := time.Since(start)
	for i, err := range errs {
		s.node.observe("put", cl, elapsed, err)
		if err != nil {
			resp.Results[i] = &kurav1.PutManyResult{}
			resp.Results[i].Code, resp.Results[i].Message = itemStatus(err)
		}
	}
	return resp, nil
}

func (s *apiServer) Get(ctx context.Context, req *kurav1.GetRequest) (*kurav1.GetResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	rec, found, err := s.node.coord.Get(ctx, req.GetKeyspace(), req.GetKey(), cl)
	if err != nil {
		return nil, statusOf(err)
	}
	if !found {
		return &kurav1.GetResponse{}, nil
	}
	return getResponse(rec), nil
}

// getManyKeysMax bounds the keys of one GetMany: the client sends a few dozen at most,
// and a call's keys are read at once.
const getManyKeysMax = 1024

func (s *apiServer) GetMany(ctx context.Context, req *kurav1.GetManyRequest) (*kurav1.GetManyResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	keys := req.GetKeys()
	if len(keys) > getManyKeysMax {
		return nil, status.Errorf(codes.InvalidArgument, "GetMany of %d keys: at most %d at once", len(keys), getManyKeysMax)
	}
	start := time.Now()
	results := s.node.coord.GetAll(ctx, req.GetKeyspace(), keys, cl)
	elapsed := time.Since(start)
	resp := &kurav1.GetManyResponse{Results: make([]*kurav1.GetManyResult, len(results))}
	for i, r := range results {
		s.node.observe("get", cl, elapsed, r.Err)
		out := &kurav1.GetManyResult{}
		switch {
		case r.Err != nil:
			out.Code, out.Message = itemStatus(statusOf(r.Err))
		case r.Found:
			out.Response = getResponse(r.Record)
		default:
			out.Response = &kurav1.GetResponse{}
		}
		resp.Results[i] = out
	}
	return resp, nil
}

// itemStatus is the code and message of one item's error in a GetMany or PutMany answer:
// err is the status error Get or Put would have answered for the item alone.
func itemStatus(err error) (code int32, message string) {
	st := status.Convert(err)
	return int32(st.Code()), st.Message()
}

// getResponse is the answer to a Get that found rec.
func getResponse(rec lww.Record) *kurav1.GetResponse {
	resp := &kurav1.GetResponse{Found: true, Value: rec.Value, Timestamp: uint64(rec.Timestamp)}
	if rec.ExpiresAt != 0 {
		resp.ExpiresAtUnixMs = rec.ExpiresAt.WallTime().UnixMilli()
	}
	return resp
}

func (s *apiServer) Delete(ctx context.Context, req *kurav1.DeleteRequest) (*kurav1.DeleteResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	ts, err := s.node.coord.Delete(ctx, req.GetKeyspace(), req.GetKey(), cl)
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.DeleteResponse{Timestamp: uint64(ts)}, nil
}

func (s *apiServer) Scan(ctx context.Context, req *kurav1.ScanRequest) (*kurav1.ScanResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	recs, err := s.node.coord.Scan(ctx, req.GetKeyspace(), nonEmpty(req.GetStart()), nonEmpty(req.GetEnd()), int(req.GetLimit()), cl)
	if err != nil {
		return nil, statusOf(err)
	}
	items := make([]kurav1.KeyValue, len(recs)) // one allocation for every item, not one each
	resp := &kurav1.ScanResponse{Items: make([]*kurav1.KeyValue, len(recs))}
	for i, r := range recs {
		items[i].Key, items[i].Value, items[i].Timestamp = r.Key, r.Value, uint64(r.Timestamp)
		resp.Items[i] = &items[i]
	}
	return resp, nil
}

// CompareAndSet runs a lightweight transaction: the action, if the key's live value
// meets the condition.
func (s *apiServer) CompareAndSet(ctx context.Context, req *kurav1.CompareAndSetRequest) (*kurav1.CompareAndSetResponse, error) {
	serial, err := serialFromProto(req.GetSerialConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	fn, err := compareAndSet(req, s.node.clock.Now())
	if err != nil {
		return nil, statusOf(err)
	}
	res, err := s.node.coord.Update(ctx, req.GetKeyspace(), req.GetKey(), serial, fn)
	if err != nil {
		return nil, statusOf(err)
	}
	resp := &kurav1.CompareAndSetResponse{Applied: res.Applied, Found: res.PreviousFound}
	if res.PreviousFound {
		resp.Value, resp.Timestamp, resp.ExpiresAt = res.Previous.Value, uint64(res.Previous.Timestamp), uint64(res.Previous.ExpiresAt)
	}
	if res.Applied {
		resp.WriteTimestamp = uint64(res.Record.Timestamp)
	}
	return resp, nil
}

// compareAndSet turns a CompareAndSet request into the update it runs, or refuses a
// request that names no condition or no action. A TTL counts from now, when the request
// arrived.
func compareAndSet(req *kurav1.CompareAndSetRequest, now hlc.Timestamp) (coord.UpdateFunc, error) {
	var meets func(cur lww.Record, found bool) bool
	switch c := req.GetCondition().(type) {
	case *kurav1.CompareAndSetRequest_IfAbsent:
		meets = func(_ lww.Record, found bool) bool { return !found }
	case *kurav1.CompareAndSetRequest_IfPresent:
		meets = func(_ lww.Record, found bool) bool { return found }
	case *kurav1.CompareAndSetRequest_IfEquals:
		meets = func(cur lww.Record, found bool) bool { return found && bytes.Equal(cur.Value, c.IfEquals) }
	default:
		return nil, fmt.Errorf("%w: compare-and-set without a condition (if_absent, if_present or if_equals)", coord.ErrInvalidArgument)
	}
	var next lww.Record
	switch a := req.GetAction().(type) {
	case *kurav1.CompareAndSetRequest_Put:
		ttlMs := a.Put.GetTtlMs()
		if ttlMs < 0 {
			return nil, fmt.Errorf("%w: negative ttl_ms %d", coord.ErrInvalidArgument, ttlMs)
		}
		next.Value = a.Put.GetValue()
		if ttlMs > 0 {
			next.ExpiresAt = hlc.FromTime(now.WallTime().Add(time.Duration(ttlMs) * time.Millisecond))
		}
	case *kurav1.CompareAndSetRequest_Delete:
		next.Tombstone = true
	default:
		return nil, fmt.Errorf("%w: compare-and-set without an action (put or delete)", coord.ErrInvalidArgument)
	}
	return func(cur lww.Record, found bool) (lww.Record, bool, error) {
		return next, meets(cur, found), nil
	}, nil
}

// nonEmpty turns an empty bound into an open one.
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func (s *apiServer) CreateKeyspace(ctx context.Context, req *kurav1.CreateKeyspaceRequest) (*kurav1.CreateKeyspaceResponse, error) {
	err := s.node.CreateKeyspace(ctx, schemasync.KeyspaceFromProto(req.GetKeyspace()))
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.CreateKeyspaceResponse{}, nil
}

func (s *apiServer) TruncateKeyspace(ctx context.Context, req *kurav1.TruncateKeyspaceRequest) (*kurav1.TruncateKeyspaceResponse, error) {
	ts, err := s.node.Truncate(ctx, req.GetName())
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.TruncateKeyspaceResponse{TruncatedAt: uint64(ts)}, nil
}

func (s *apiServer) DropKeyspace(ctx context.Context, req *kurav1.DropKeyspaceRequest) (*kurav1.DropKeyspaceResponse, error) {
	ts, err := s.node.DropKeyspace(ctx, req.GetName())
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.DropKeyspaceResponse{DroppedAt: uint64(ts)}, nil
}

func (s *apiServer) ListKeyspaces(context.Context, *kurav1.ListKeyspacesRequest) (*kurav1.ListKeyspacesResponse, error) {
	var resp kurav1.ListKeyspacesResponse
	for _, ks := range s.node.Keyspaces() {
		resp.Keyspaces = append(resp.Keyspaces, schemasync.KeyspaceProto(ks))
	}
	return &resp, nil
}

func (s *apiServer) DescribeKeyspace(_ context.Context, req *kurav1.DescribeKeyspaceRequest) (*kurav1.Keyspace, error) {
	ks, err := s.node.Keyspace(req.GetName())
	if err != nil {
		return nil, statusOf(err)
	}
	return schemasync.KeyspaceProto(ks), nil
}

func (s *apiServer) ClusterStatus(context.Context, *kurav1.ClusterStatusRequest) (*kurav1.ClusterStatusResponse, error) {
	view := s.node.View()
	p := s.node.streamer.Progress()
	resp := &kurav1.ClusterStatusResponse{Self: view.Self().ID, Streaming: &kurav1.StreamProgress{
		RangesTotal: p.RangesTotal.Load(), RangesDone: p.RangesDone.Load(), Records: p.Records.Load(), Bytes: p.Bytes.Load(), BytesCrossDc: p.BytesCrossDC.Load(),
	}}
	resp.Clock, resp.Membership = s.node.clockStatus(), s.node.membershipStatus()
	offsets := map[string]time.Duration{}
	for _, p := range s.node.guard.Peers() {
		offsets[p.Peer] = p.Offset
	}
	now := time.Now()
	loads := s.node.NodeLoads()
	r, _ := s.node.Ring() // no ring yet: every share 0
	for _, n := range view.Nodes() {
		state := view.State(n.ID)
		offset, measured := offsets[n.ID]
		watts, joules := s.node.power.energy(n.ID, now)
		resp.Nodes = append(resp.Nodes, &kurav1.NodeStatus{Id: n.ID, Dc: n.DC, Addr: n.Addr, ClientAddr: n.ClientAddr, Alive: state.Reachable(), Tokens: n.Tokens,
			Status: n.Status.String(), State: state.String(), Replaces: n.Replaces, ClockMeasured: measured, ClockOffsetMs: offset.Milliseconds(),
			Power: view.Power(n.ID).State.String(), PowerTier: int32(n.Tier), PowerWatts: watts, EnergyJoules: joules,
			LoadBytes: loads[n.ID].Bytes, LoadKeys: loads[n.ID].Keys, LoadKnown: loads[n.ID].Known, StartedAtUnixMs: statusStartedAtMs(n, state, loads[n.ID])})
		if r != nil {
			resp.Nodes[len(resp.Nodes)-1].Ownership = r.Share(n.ID)
		}
	}
	return resp, nil
}

// SetPower puts a node to sleep or wakes it.
func (s *apiServer) SetPower(ctx context.Context, req *kurav1.SetPowerRequest) (*kurav1.SetPowerResponse, error) {
	state, err := s.node.SetPower(ctx, req.GetNodeId(), req.GetAction())
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &kurav1.SetPowerResponse{Power: state.String()}, nil
}

func (s *apiServer) Decommission(ctx context.Context, _ *kurav1.DecommissionRequest) (*kurav1.MoveResponse, error) {
	st, err := s.node.Decommission(ctx)
	if err != nil {
		return nil, moveStatus(err)
	}
	return moveResponse(st), nil
}

func (s *apiServer) RemoveNode(ctx context.Context, req *kurav1.RemoveNodeRequest) (*kurav1.MoveResponse, error) {
	st, err := s.node.RemoveNode(ctx, req.GetId())
	if err != nil {
		return nil, moveStatus(err)
	}
	return moveResponse(st), nil
}

func (s *apiServer) Cleanup(ctx context.Context, req *kurav1.CleanupRequest) (*kurav1.CleanupResponse, error) {
	records, bytes, err := s.node.Cleanup(ctx, req.GetKeyspace())
	if err != nil {
		return nil, moveStatus(err)
	}
	return &kurav1.CleanupResponse{RecordsRemoved: records, BytesRemoved: bytes}, nil
}

// moveStatus maps a refused ring change to failed-precondition, anything else as usual.
func moveStatus(err error) error {
	if errors.Is(err, errBadMove) {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return statusOf(err)
}

func moveResponse(st MoveStats) *kurav1.MoveResponse {
	return &kurav1.MoveResponse{Gainers: st.Gainers, Ranges: int64(st.Ranges), Records: st.Records, Bytes: st.Bytes,
		BytesCrossDc: st.BytesCrossDC, Seconds: st.Took.Seconds()}
}

func (s *apiServer) Repair(ctx context.Context, req *kurav1.RepairRequest) (*kurav1.RepairResponse, error) {
	start := time.Now()
	st, err := s.node.Repair(ctx, antientropy.Request{Keyspace: req.GetKeyspace(), DC: req.GetDc()})
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.RepairResponse{
		Node:               s.node.ID(),
		Keyspaces:          int64(st.Keyspaces),
		Ranges:             int64(st.Ranges),
		Failed:             int64(st.Failed),
		Subranges:          int64(st.Subranges),
		DifferingSubranges: int64(st.DifferingSubranges),
		RecordsRead:        int64(st.RecordsRead),
		RecordsSent:        int64(st.RecordsSent),
		Skipped:            int64(st.Skipped),
		BytesTrees:         st.BytesTrees,
		BytesRecords:       st.BytesRecords,
		ChunkKeysListed:    int64(st.ChunkKeysListed),
		BytesListing:       st.BytesListing,
		ChunksRebuilt:      int64(st.ChunksRebuilt),
		Seconds:            time.Since(start).Seconds(),
	}, nil
}
