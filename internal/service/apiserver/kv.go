package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

func (s *service) Put(ctx context.Context, req *kurav1.PutRequest) (*kurav1.PutResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	expiresAt, err := s.cfg.Coordinator.ExpiresAt(req.GetTtlMs(), req.GetExpiresAtUnixMs())
	if err != nil {
		return nil, statusOf(err)
	}
	ts, err := s.cfg.Coordinator.Put(ctx, req.GetKeyspace(), req.GetKey(), req.GetValue(), expiresAt, cl)
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.PutResponse{Timestamp: uint64(ts)}, nil
}

// PutManyItemsMax bounds the items of one PutMany, as GetManyKeysMax bounds GetMany's.
const PutManyItemsMax = 1024

// PutMany writes each item as Put would, with no order among them (the items come from
// independent callers): the coordinator sends the writes that have the same replicas to
// each replica together (coord.PutEach). It answers once every write has, each with its
// own outcome; an item is answered OK only when its write was acknowledged at the level.
func (s *service) PutMany(ctx context.Context, req *kurav1.PutManyRequest) (*kurav1.PutManyResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	items := req.GetItems()
	if len(items) > PutManyItemsMax {
		return nil, status.Errorf(codes.InvalidArgument, "PutMany of %d items: at most %d at once", len(items), PutManyItemsMax)
	}
	start := time.Now()
	errs := make([]error, len(items)) // each item's, as statusOf gives it
	puts := make([]lww.Record, 0, len(items))
	sent := make([]int, 0, len(items)) // the index of each of puts among the items
	for i, item := range items {
		expiresAt, err := s.cfg.Coordinator.ExpiresAt(item.GetTtlMs(), item.GetExpiresAtUnixMs())
		if err != nil {
			errs[i] = statusOf(err)
			continue
		}
		puts = append(puts, lww.Record{Key: item.GetKey(), Value: item.GetValue(), ExpiresAt: expiresAt})
		sent = append(sent, i)
	}
	resp := &kurav1.PutManyResponse{Results: make([]*kurav1.PutManyResult, len(items))}
	for j, r := range s.cfg.Coordinator.PutEach(ctx, req.GetKeyspace(), puts, cl) {
		i := sent[j]
		if errs[i] = statusOf(r.Err); r.Err == nil {
			resp.Results[i] = &kurav1.PutManyResult{Response: &kurav1.PutResponse{Timestamp: uint64(r.Timestamp)}}
		}
	}
	elapsed := time.Since(start)
	for i, err := range errs {
		s.cfg.Observe("put", cl, elapsed, err)
		if err != nil {
			resp.Results[i] = &kurav1.PutManyResult{}
			resp.Results[i].Code, resp.Results[i].Message = itemStatus(err)
		}
	}
	if err := leftRing(errs); err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *service) Get(ctx context.Context, req *kurav1.GetRequest) (*kurav1.GetResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	rec, found, err := s.cfg.Coordinator.Get(ctx, req.GetKeyspace(), req.GetKey(), cl)
	if err != nil {
		return nil, statusOf(err)
	}
	if !found {
		return &kurav1.GetResponse{}, nil
	}
	return getResponse(rec), nil
}

// GetManyKeysMax bounds the keys of one GetMany: the client sends a few dozen at most,
// and a call's keys are read at once.
const GetManyKeysMax = 1024

func (s *service) GetMany(ctx context.Context, req *kurav1.GetManyRequest) (*kurav1.GetManyResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	keys := req.GetKeys()
	if len(keys) > GetManyKeysMax {
		return nil, status.Errorf(codes.InvalidArgument, "GetMany of %d keys: at most %d at once", len(keys), GetManyKeysMax)
	}
	start := time.Now()
	results := s.cfg.Coordinator.GetAll(ctx, req.GetKeyspace(), keys, cl)
	elapsed := time.Since(start)
	resp := &kurav1.GetManyResponse{Results: make([]*kurav1.GetManyResult, len(results))}
	errs := make([]error, len(results))
	for i, r := range results {
		s.cfg.Observe("get", cl, elapsed, r.Err)
		errs[i] = r.Err
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
	if err := leftRing(errs); err != nil {
		return nil, err
	}
	return resp, nil
}

// leftRing returns the coordinator's refusal when it refused every request of a batch
// (errs, one per request) because this node has left the ring (coord.LeftRingError,
// before any replica was asked), else nil. The batch call then fails whole, as a single
// request does, so that redirectLeft names the members that serve instead and the Go
// client sends each request there. Answered per item, the refusal went back to the
// client's callers as an error, though nothing was done and the requests could go to
// another node (internal/tools/scripts/readme-sequence saw a write fail so during a
// decommission).
func leftRing(errs []error) error {
	var left *coord.LeftRingError
	for _, err := range errs {
		if !errors.As(err, &left) {
			return nil
		}
	}
	if left == nil {
		return nil
	}
	return statusOf(left)
}

// getResponse is the answer to a Get that found rec.
func getResponse(rec lww.Record) *kurav1.GetResponse {
	resp := &kurav1.GetResponse{Found: true, Value: rec.Value, Timestamp: uint64(rec.Timestamp)}
	if rec.ExpiresAt != 0 {
		resp.ExpiresAtUnixMs = rec.ExpiresAt.WallTime().UnixMilli()
	}
	return resp
}

func (s *service) Delete(ctx context.Context, req *kurav1.DeleteRequest) (*kurav1.DeleteResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	ts, err := s.cfg.Coordinator.Delete(ctx, req.GetKeyspace(), req.GetKey(), cl)
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.DeleteResponse{Timestamp: uint64(ts)}, nil
}

func (s *service) Scan(ctx context.Context, req *kurav1.ScanRequest) (*kurav1.ScanResponse, error) {
	cl, err := levelFromProto(req.GetConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	recs, err := s.cfg.Coordinator.Scan(ctx, req.GetKeyspace(), nonEmpty(req.GetStart()), nonEmpty(req.GetEnd()), int(req.GetLimit()), cl)
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
func (s *service) CompareAndSet(ctx context.Context, req *kurav1.CompareAndSetRequest) (*kurav1.CompareAndSetResponse, error) {
	serial, err := serialFromProto(req.GetSerialConsistency())
	if err != nil {
		return nil, statusOf(err)
	}
	fn, err := compareAndSet(req, s.cfg.Clock.Now())
	if err != nil {
		return nil, statusOf(err)
	}
	res, err := s.cfg.Coordinator.Update(ctx, req.GetKeyspace(), req.GetKey(), serial, fn)
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
