package replica

import (
	"math"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// ToProto converts a record to its wire form.
func ToProto(r lww.Record) *kurav1.Record {
	m := &kurav1.Record{}
	fillProto(m, r)
	return m
}

// fillProto sets m to r's wire form; m's bytes alias r's.
func fillProto(m *kurav1.Record, r lww.Record) {
	m.Key, m.Value, m.Timestamp, m.Tombstone, m.ExpiresAt, m.Type = r.Key, r.Value, uint64(r.Timestamp), r.Tombstone, uint64(r.ExpiresAt), uint32(r.Type)
}

// FromProto converts a record from its wire form.
func FromProto(r *kurav1.Record) lww.Record {
	return lww.Record{Key: r.GetKey(), Value: r.GetValue(), Timestamp: hlc.Timestamp(r.GetTimestamp()), Tombstone: r.GetTombstone(), ExpiresAt: hlc.Timestamp(r.GetExpiresAt()), Type: TypeFromWire(r.GetType())}
}

// TypeFromWire is the lww.Type of a record's type field. A number past what a Type holds
// becomes the largest Type, never a smaller one by truncation: storage refuses a type it
// does not know (ErrInvalidRecord), so a bad number cannot pass for another type.
func TypeFromWire(v uint32) lww.Type {
	return lww.Type(min(v, math.MaxUint8))
}

// ScanResponse is the wire form of a scan's answer, its records' messages allocated
// together rather than one each.
func ScanResponse(records []lww.Record) *kurav1.ReplicaScanResponse {
	messages := make([]kurav1.Record, len(records))
	resp := &kurav1.ReplicaScanResponse{Records: make([]*kurav1.Record, len(records))}
	for i, r := range records {
		fillProto(&messages[i], r)
		resp.Records[i] = &messages[i]
	}
	return resp
}
