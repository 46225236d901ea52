package client

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
)

// FuzzScanAnswer: whatever the bytes, scanAnswer decodes them as protocol buffers
// decode a ScanResponse (the same items, or both refuse them), and never panics.
func FuzzScanAnswer(f *testing.F) {
	seed := &kurav1.ScanResponse{Items: []*kurav1.KeyValue{
		{Key: []byte("k1"), Value: []byte("v1"), Timestamp: 7},
		{Key: []byte("k2"), Timestamp: 1 << 40},
		{},
	}}
	wire, err := proto.Marshal(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(wire)
	f.Add(wire[:len(wire)-1])
	f.Add([]byte{})
	// An unknown field at each level, and an item's fields in another order.
	unknown := protowire.AppendTag(nil, 9, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 3)
	item := protowire.AppendTag(nil, 3, protowire.VarintType)
	item = protowire.AppendVarint(item, 42)
	item = append(item, unknown...)
	item = protowire.AppendTag(item, 1, protowire.BytesType)
	item = protowire.AppendBytes(item, []byte("key"))
	f.Add(append(append(unknown, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), item)...), wire...))
	f.Fuzz(func(t *testing.T, wire []byte) {
		var want kurav1.ScanResponse
		wantErr := proto.Unmarshal(wire, &want)
		var got scanAnswer
		err := got.decode(bytes.Clone(wire))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decode: %v; proto.Unmarshal: %v", err, wantErr)
		}
		if err != nil {
			if !errors.Is(err, errScanAnswer) {
				t.Fatalf("decode failed with %v, want a malformed scan answer", err)
			}
			return
		}
		if len(got.items) != len(want.GetItems()) {
			t.Fatalf("%d items, proto.Unmarshal %d", len(got.items), len(want.GetItems()))
		}
		for i, w := range want.GetItems() {
			g := got.items[i]
			if !bytes.Equal(g.Key, w.GetKey()) || !bytes.Equal(g.Value, w.GetValue()) || g.Timestamp != hlc.Timestamp(w.GetTimestamp()) {
				t.Fatalf("item %d: %q=%q at %d, proto.Unmarshal %q=%q at %d", i, g.Key, g.Value, g.Timestamp, w.GetKey(), w.GetValue(), w.GetTimestamp())
			}
			if cap(g.Key) != len(g.Key) || cap(g.Value) != len(g.Value) {
				t.Fatalf("item %d: key or value shares capacity with the bytes after it", i)
			}
		}
	})
}
