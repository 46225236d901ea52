package client

import (
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec scanCodec hands the rest to
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kuradb/kura/hlc"
)

// scanAnswer is a Scan call's answer (kurav1.ScanResponse's wire form) decoded straight
// into the KeyValues Scan returns: one copy of the answer's bytes, which every key and
// value is a slice of, and one slice of items. Decoded as a ScanResponse, an answer of n
// items cost n+1 messages and 2n byte slices; in a benchmark of short scans at 256
// clients the client's decoding and its garbage were most of its CPU
// (docs/performance-log.md).
type scanAnswer struct {
	items []KeyValue
}

// scanCodec is the gRPC codec of a Scan call: the request is marshalled as any message
// is, the answer decoded into a scanAnswer. Its name is the proto codec's, so that
// nothing changes on the wire.
type scanCodec struct{}

// scanCall is the call option that makes scanCodec a call's codec. grpc-go marks
// ForceCodecV2 experimental; were it to go, Scan would decode a kurav1.ScanResponse
// again, as the generated client does.
var scanCall = grpc.ForceCodecV2(scanCodec{})

func (scanCodec) Name() string { return protoCodec().Name() }

func (scanCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec().Marshal(v) }

func (scanCodec) Unmarshal(data mem.BufferSlice, v any) error {
	answer, ok := v.(*scanAnswer)
	if !ok {
		return protoCodec().Unmarshal(data, v)
	}
	return answer.decode(data.Materialize())
}

// protoCodec returns gRPC's own codec of protocol buffers.
func protoCodec() encoding.CodecV2 { return encoding.GetCodecV2("proto") }

// Field numbers of kurav1.ScanResponse and kurav1.KeyValue.
const (
	scanResponseItems protowire.Number = 1
	keyValueKey       protowire.Number = 1
	keyValueValue     protowire.Number = 2
	keyValueTimestamp protowire.Number = 3
)

// errScanAnswer is the error of an answer that is not a ScanResponse.
var errScanAnswer = errors.New("malformed scan answer")

// decode decodes b, a ScanResponse, into a's items; the items' keys and values are
// slices of b, each with its capacity cut to its length. Unknown fields are skipped, as
// a protocol buffers decoder skips them.
func (a *scanAnswer) decode(b []byte) error {
	n := 0
	if err := eachField(b, func(num protowire.Number, typ protowire.Type, field []byte) error {
		if num == scanResponseItems && typ == protowire.BytesType {
			n++
		}
		return nil
	}); err != nil {
		return err
	}
	a.items = make([]KeyValue, 0, n)
	return eachField(b, func(num protowire.Number, typ protowire.Type, field []byte) error {
		if num != scanResponseItems || typ != protowire.BytesType {
			return nil
		}
		var kv KeyValue
		err := eachField(field, func(num protowire.Number, typ protowire.Type, value []byte) error {
			switch {
			case num == keyValueKey && typ == protowire.BytesType:
				kv.Key = value[:len(value):len(value)]
			case num == keyValueValue && typ == protowire.BytesType:
				kv.Value = value[:len(value):len(value)]
			case num == keyValueTimestamp && typ == protowire.VarintType:
				ts, _ := protowire.ConsumeVarint(value)
				kv.Timestamp = hlc.Timestamp(ts)
			}
			return nil
		})
		a.items = append(a.items, kv)
		return err
	})
}

// eachField calls visit with each field of the message b: its number, its wire type,
// and its contents (a length-delimited field's bytes without their length, any other
// field's encoded value).
func eachField(b []byte, visit func(num protowire.Number, typ protowire.Type, field []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", errScanAnswer, protowire.ParseError(n))
		}
		if num > protowire.MaxValidNumber {
			return fmt.Errorf("%w: field number %d", errScanAnswer, num)
		}
		b = b[n:]
		var field []byte
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return fmt.Errorf("%w: %w", errScanAnswer, protowire.ParseError(m))
			}
			field, n = v, m
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: %w", errScanAnswer, protowire.ParseError(n))
			}
			field = b[:n]
		}
		if err := visit(num, typ, field); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
