package remote

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/transport"
)

// readManyKeysMax bounds the keys of one read_many request: a coordinator sends a
// client's batch, itself at most 1,024 keys.
const readManyKeysMax = 1024

// Handles reports whether kind is a replica request that Server serves.
func Handles(kind transport.Kind) bool {
	switch kind {
	case transport.KindMutate, transport.KindRead, transport.KindReadMany, transport.KindScan,
		transport.KindChunkRead, transport.KindStreamRange, transport.KindTreeDigest,
		transport.KindPaxosPrepare, transport.KindPaxosPropose, transport.KindPaxosCommit,
		transport.KindScanKeys, transport.KindOffload, transport.KindScanProgress:
		return true
	}
	return false
}

func peerOf(n cluster.Node) transport.Peer {
	return transport.Peer{ID: n.ID, DC: n.DC, Addr: n.Addr}
}

// decodeScanResponse decodes a ReplicaScanResponse as proto.Unmarshal and FromProto would
// (a field of a known number with another wire type is skipped, as proto keeps it among
// the unknown fields), without a message per record or a copy of its bytes: each
// record's key and value are slices of payload, their capacity cut to their length so
// that an append copies. On short scans, decoding the other replica's answer through the
// generated code was a third of a coordinator's allocations (docs/performance-log.md).
// payload must not be written to afterwards; the transport reads each frame into a
// buffer of its own.
func decodeScanResponse(payload []byte) ([]lww.Record, error) {
	count := 0
	if err := eachField(payload, func(num protowire.Number, typ protowire.Type, _ []byte) error {
		if num == 1 && typ == protowire.BytesType {
			count++
		}
		return nil
	}); err != nil {
		return nil, err
	}
	records := make([]lww.Record, 0, count)
	err := eachField(payload, func(num protowire.Number, typ protowire.Type, field []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		var rec lww.Record
		err := decodeRecordInto(&rec, field)
		records = append(records, rec)
		return err
	})
	return records, err
}

// decodeReadResponse decodes a ReadResponse as decodeScanResponse decodes a scan's
// answer: the record's key and value are slices of payload.
func decodeReadResponse(payload []byte) (rec lww.Record, found bool, err error) {
	err = eachField(payload, func(num protowire.Number, typ protowire.Type, field []byte) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(field)
			found = v != 0
		case num == 2 && typ == protowire.BytesType:
			return decodeRecordInto(&rec, field) // merged into, as proto merges a field given twice
		}
		return nil
	})
	return rec, found, err
}

// decodeReadManyResponse decodes a ReadManyResponse as decodeReadResponse decodes each
// of its answers: the records' keys and values are slices of payload.
func decodeReadManyResponse(payload []byte) (records []lww.Record, found []bool, err error) {
	err = eachField(payload, func(num protowire.Number, typ protowire.Type, field []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		answer, _ := protowire.ConsumeBytes(field)
		rec, ok, err := decodeReadResponse(answer)
		records, found = append(records, rec), append(found, ok)
		return err
	})
	return records, found, err
}

// decodeRecordInto decodes the length-prefixed Record message field into r, setting the
// fields it holds; the key and value are slices of field.
func decodeRecordInto(r *lww.Record, field []byte) error {
	b, _ := protowire.ConsumeBytes(field)
	return eachField(b, func(num protowire.Number, typ protowire.Type, field []byte) error {
		switch {
		case typ == protowire.BytesType && (num == 1 || num == 2):
			v, _ := protowire.ConsumeBytes(field)
			if len(v) == 0 {
				v = nil // as the generated code leaves an empty proto3 field
			}
			if num == 1 {
				r.Key = v[:len(v):len(v)]
			} else {
				r.Value = v[:len(v):len(v)]
			}
		case typ == protowire.VarintType && num >= 3 && num <= 6:
			v, _ := protowire.ConsumeVarint(field)
			switch num {
			case 3:
				r.Timestamp = hlc.Timestamp(v)
			case 4:
				r.Tombstone = v != 0
			case 5:
				r.ExpiresAt = hlc.Timestamp(v)
			case 6:
				r.Type = replica.TypeFromWire(uint32(v)) // as proto truncates a uint32 field
			}
		}
		return nil
	})
}

// eachField calls fn with the number, wire type and encoded value of each field of the
// message in b, in order; it fails on malformed input, as proto.Unmarshal does.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, value []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("decode a message: %w", protowire.ParseError(n))
		}
		if !num.IsValid() {
			return fmt.Errorf("decode a message: field number %d out of range", num)
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return fmt.Errorf("decode field %d: %w", num, protowire.ParseError(m))
		}
		if err := fn(num, typ, b[:m]); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// A chunk_read answer is a status byte, then what the status announces.
const (
	chunkAbsent         byte = iota + 1 // nothing follows: no record under the chunk key
	chunkTombstone                      // the delete's timestamp follows, u64 big endian, then its expiry if it has one
	chunkStored                         // the stored chunk follows, header and shard as written
	chunkStoredExpiring                 // the chunk's expiry follows, u64 big endian, then the chunk as for chunkStored
)

// encodeChunkAnswer is the replica's answer to a chunk_read for what its engine holds.
// A stored chunk is sent as it is: its header carries the write's timestamp, the code,
// the index, the length and a checksum, so the record around it adds nothing but the
// expiry of an expiring value.
func encodeChunkAnswer(rec lww.Record, found bool) []byte {
	switch {
	case !found:
		return []byte{chunkAbsent}
	case rec.Tombstone:
		answer := binary.BigEndian.AppendUint64([]byte{chunkTombstone}, uint64(rec.Timestamp))
		if rec.ExpiresAt != 0 {
			answer = binary.BigEndian.AppendUint64(answer, uint64(rec.ExpiresAt))
		}
		return answer
	case rec.ExpiresAt != 0:
		return append(binary.BigEndian.AppendUint64([]byte{chunkStoredExpiring}, uint64(rec.ExpiresAt)), rec.Value...)
	}
	return append([]byte{chunkStored}, rec.Value...)
}

// decodeChunkAnswer turns a chunk_read answer for the chunk key back into the record the
// owner holds. A chunk's record takes the timestamp its header names, unverified: the
// coordinator verifies the chunk and counts a damaged one as missing.
func decodeChunkAnswer(key, answer []byte) (lww.Record, bool, error) {
	if len(answer) == 0 {
		return lww.Record{}, false, errors.New("empty chunk_read answer")
	}
	body := answer[1:]
	switch answer[0] {
	case chunkAbsent:
		if len(body) == 0 {
			return lww.Record{}, false, nil
		}
	case chunkTombstone:
		if len(body) == 8 || len(body) == 16 && binary.BigEndian.Uint64(body[8:]) != 0 {
			rec := lww.Record{Key: key, Tombstone: true, Timestamp: hlc.Timestamp(binary.BigEndian.Uint64(body))}
			if len(body) == 16 {
				rec.ExpiresAt = hlc.Timestamp(binary.BigEndian.Uint64(body[8:]))
			}
			return rec, true, nil
		}
	case chunkStored:
		timestamp, _ := erasure.HeaderTimestamp(body)
		return lww.Record{Key: key, Value: body, Timestamp: hlc.Timestamp(timestamp)}, true, nil
	case chunkStoredExpiring:
		if len(body) >= 8 && binary.BigEndian.Uint64(body) != 0 {
			timestamp, _ := erasure.HeaderTimestamp(body[8:])
			return lww.Record{Key: key, Value: body[8:], Timestamp: hlc.Timestamp(timestamp), ExpiresAt: hlc.Timestamp(binary.BigEndian.Uint64(body))}, true, nil
		}
	}
	return lww.Record{}, false, fmt.Errorf("malformed chunk_read answer: status %d with %d bytes", answer[0], len(body))
}
