package replica

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
)

// FuzzDecodeScanResponse: decodeScanResponse reads any payload as proto.Unmarshal and
// FromProto do: it fails where they fail, and otherwise yields the same records; no
// record's key or value can be appended to in place, over the bytes after it.
func FuzzDecodeScanResponse(f *testing.F) {
	seeds := []*kurav1.ReplicaScanResponse{
		{},
		{Records: []*kurav1.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1 << 40, ExpiresAt: 9}}},
		{Records: []*kurav1.Record{{Key: []byte("a"), Timestamp: 3, Tombstone: true}, {Key: []byte("b"), Value: bytes.Repeat([]byte("x"), 300)}}},
	}
	for _, seed := range seeds {
		payload, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(payload)
	}
	// A known field with another wire type, an unknown field, a group, a key given twice.
	odd := protowire.AppendTag(nil, 1, protowire.BytesType)
	record := protowire.AppendTag(nil, 1, protowire.VarintType)
	record = protowire.AppendVarint(record, 7)
	record = protowire.AppendTag(record, 9, protowire.StartGroupType)
	record = protowire.AppendTag(record, 9, protowire.EndGroupType)
	record = protowire.AppendTag(record, 1, protowire.BytesType)
	record = protowire.AppendBytes(record, []byte("first"))
	record = protowire.AppendTag(record, 1, protowire.BytesType)
	record = protowire.AppendBytes(record, []byte("second"))
	f.Add(protowire.AppendBytes(odd, record))
	f.Add([]byte{0x0a, 0x05, 0x0a}) // a record running past its end

	f.Fuzz(func(t *testing.T, payload []byte) {
		got, err := decodeScanResponse(payload)
		var want kurav1.ReplicaScanResponse
		wantErr := proto.Unmarshal(payload, &want)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeScanResponse: %v; proto.Unmarshal: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if len(got) != len(want.GetRecords()) {
			t.Fatalf("%d records, proto.Unmarshal %d", len(got), len(want.GetRecords()))
		}
		for i, m := range want.GetRecords() {
			w := FromProto(m)
			g := got[i]
			if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || g.Timestamp != w.Timestamp || g.Tombstone != w.Tombstone || g.ExpiresAt != w.ExpiresAt {
				t.Fatalf("record %d: %+v, proto.Unmarshal %+v", i, g, w)
			}
			if cap(g.Key) != len(g.Key) || cap(g.Value) != len(g.Value) {
				t.Fatalf("record %d: key or value with room to grow into the payload", i)
			}
		}
	})
}
