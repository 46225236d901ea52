package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
)

// TestPrintJSON: issue 45, item 3. kura status --json printed 64-bit integers as strings
// ("load_bytes": "2935") and left out every field at its default, "alive": false among
// them. Numbers are numbers now, every field is there, in field order, and NaN, which
// JSON lacks, is the proto3 mapping's string. A name puts its unit last
// (cross_dc_bytes, once bytes_cross_dc).
func TestPrintJSON(t *testing.T) {
	tests := []struct {
		name string
		m    proto.Message
		want string
	}{
		{"clock", &kurav1.ClockStatus{OffsetMs: -3, Peers: 2, Ok: true, MaxOffsetMs: 500},
			`{"offset_ms":-3,"peers":2,"ok":true,"refusal":"","ahead_max_ms":0,"max_offset_ms":500}`},
		{"tokens past 2^53", &kurav1.RingNode{Id: "n1", Tokens: []uint64{math.MaxUint64, 7}, Ownership: 0.5},
			`{"id":"n1","dc":"","state":"","tokens":[18446744073709551615,7],"ownership":0.5,"effective":0}`},
		{"an unset message, an empty list", &kurav1.ClusterStatusResponse{Self: "n1"},
			`{"self":"n1","nodes":[],"streaming":null,"clock":null,"membership":null,"protocol_version":0}`},
		{"units last: cross_dc_bytes", &kurav1.StreamProgress{RangesTotal: 4, RangesDone: 1, Records: 9, Bytes: 300, CrossDcBytes: 120},
			`{"ranges_total":4,"ranges_done":1,"records":9,"bytes":300,"cross_dc_bytes":120}`},
		{"NaN", &kurav1.RingNode{Ownership: math.NaN(), Effective: math.Inf(1)},
			`{"id":"","dc":"","state":"","tokens":[],"ownership":"NaN","effective":"Infinity"}`},
		{"oneofs: only the member set", &kurav1.CompareAndSetRequest{Keyspace: "app", Condition: &kurav1.CompareAndSetRequest_IfAbsent{IfAbsent: true},
			Action: &kurav1.CompareAndSetRequest_Delete{Delete: true}},
			`{"keyspace":"app","key":"","if_absent":true,"delete":true,"serial_consistency":"CONSISTENCY_UNSPECIFIED"}`},
		{"bytes and an enum", &kurav1.GetRequest{Keyspace: "app", Key: []byte{0xff}, Consistency: kurav1.Consistency_QUORUM},
			`{"keyspace":"app","key":"/w==","consistency":"QUORUM"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printJSON(&out, tt.m); err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, out.Bytes()); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out.String())
			}
			if compact.String() != tt.want {
				t.Errorf("printJSON = %s\nwant       %s", compact.String(), tt.want)
			}
		})
	}
}
