package remote

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
)

// FuzzDecodeAnswers: decodeScanResponse, decodeReadResponse and decodeReadManyResponse
// read any payload as
// proto.Unmarshal and FromProto do: they fail where proto fails, and otherwise yield the
// same records; no record's key or value can be appended to in place, over the bytes
// after it.
func FuzzDecodeAnswers(f *testing.F) {
	record := &kurav1.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1 << 40, ExpiresAt: 9}
	seeds := []proto.Message{
		&kurav1.ReplicaScanResponse{},
		&kurav1.ReplicaScanResponse{Records: []*kurav1.Record{record}},
		&kurav1.ReplicaScanResponse{Records: []*kurav1.Record{{Key: []byte("a"), Timestamp: 3, Tombstone: true}, {Key: []byte("b"), Value: bytes.Repeat([]byte("x"), 300)}}},
		&kurav1.ReadResponse{},
		&kurav1.ReadResponse{Found: true, Record: record},
		&kurav1.ReadResponse{Found: true, Record: &kurav1.Record{Key: []byte("h"), Value: []byte("v"), Timestamp: 5, Type: uint32(lww.Hash)}},
		&kurav1.ReplicaScanResponse{Records: []*kurav1.Record{{Key: []byte("t"), Timestamp: 5, Type: 1 << 20}}},
		&kurav1.ReadManyResponse{Answers: []*kurav1.ReadResponse{{Found: true, Record: record}, {}, {Found: true, Record: &kurav1.Record{Key: []byte("d"), Tombstone: true}}}},
	}
	for _, seed := range seeds {
		payload, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(payload)
	}
	// A known field with another wire type, an unknown field, a group, a key given
	// twice, in a record given twice.
	odd := protowire.AppendTag(nil, 1, protowire.VarintType)
	odd = protowire.AppendVarint(odd, 7)
	odd = protowire.AppendTag(odd, 9, protowire.StartGroupType)
	odd = protowire.AppendTag(odd, 9, protowire.EndGroupType)
	odd = protowire.AppendTag(odd, 1, protowire.BytesType)
	odd = protowire.AppendBytes(odd, []byte("first"))
	odd = protowire.AppendTag(odd, 1, protowire.BytesType)
	odd = protowire.AppendBytes(odd, []byte("second"))
	for _, num := range []protowire.Number{1, 2} {
		twice := protowire.AppendTag(nil, num, protowire.BytesType)
		twice = protowire.AppendBytes(twice, odd)
		f.Add(append(twice, twice...))
	}
	f.Add([]byte{0x0a, 0x05, 0x0a}) // a record running past its end

	f.Fuzz(func(t *testing.T, payload []byte) {
		var scan kurav1.ReplicaScanResponse
		wantErr := proto.Unmarshal(payload, &scan)
		got, err := decodeScanResponse(payload)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeScanResponse: %v; proto.Unmarshal: %v", err, wantErr)
		}
		if err == nil {
			if len(got) != len(scan.GetRecords()) {
				t.Fatalf("%d records, proto.Unmarshal %d", len(got), len(scan.GetRecords()))
			}
			for i, m := range scan.GetRecords() {
				sameRecord(t, got[i], replica.FromProto(m))
			}
		}

		var read kurav1.ReadResponse
		wantErr = proto.Unmarshal(payload, &read)
		rec, found, err := decodeReadResponse(payload)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeReadResponse: %v; proto.Unmarshal: %v", err, wantErr)
		}
		if err == nil {
			if found != read.GetFound() {
				t.Fatalf("found %v, proto.Unmarshal %v", found, read.GetFound())
			}
			sameRecord(t, rec, replica.FromProto(read.GetRecord()))
		}

		var many kurav1.ReadManyResponse
		wantErr = proto.Unmarshal(payload, &many)
		records, founds, err := decodeReadManyResponse(payload)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeReadManyResponse: %v; proto.Unmarshal: %v", err, wantErr)
		}
		if err == nil {
			if len(records) != len(many.GetAnswers()) || len(founds) != len(records) {
				t.Fatalf("%d records and %d found flags, proto.Unmarshal %d answers", len(records), len(founds), len(many.GetAnswers()))
			}
			for i, a := range many.GetAnswers() {
				if founds[i] != a.GetFound() {
					t.Fatalf("answer %d: found %v, proto.Unmarshal %v", i, founds[i], a.GetFound())
				}
				sameRecord(t, records[i], replica.FromProto(a.GetRecord()))
			}
		}
	})
}

func sameRecord(t *testing.T, got, want lww.Record) {
	t.Helper()
	if !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) || got.Timestamp != want.Timestamp ||
		got.Tombstone != want.Tombstone || got.ExpiresAt != want.ExpiresAt || got.Type != want.Type {
		t.Fatalf("decoded %+v, proto.Unmarshal %+v", got, want)
	}
	if cap(got.Key) != len(got.Key) || cap(got.Value) != len(got.Value) {
		t.Fatalf("decoded %+v: a key or value with room to grow into the payload", got)
	}
}
