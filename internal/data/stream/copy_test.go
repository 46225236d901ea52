package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica/replicatest"
	"github.com/kuradb/kura/internal/io/transport"
)

// TestCopyKeepsPagesOfLargeValuesWithinAFrame: a range of large values, 40 of 10 KB
// over frames of 64 KiB, streams whole in pages of PageBytes, each within a frame; pages
// bounded by records alone (PageRecords of them) would not fit one, and the stream
// would fail as it did between real nodes before PageBytes.
func TestCopyKeepsPagesOfLargeValuesWithinAFrame(t *testing.T) {
	const frameBytes = 64 << 10
	for _, tt := range []struct {
		name      string
		pageBytes int
		wantErr   error
	}{
		{"pages of 16 KiB", 16 << 10, nil},
		{"pages bounded by records alone", 1 << 30, transport.ErrFrameTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, srcEngine := replicatest.NewLocal(t, "ks")
			dst, _ := replicatest.NewLocal(t, "ks")
			var recs []lww.Record
			for i := range 40 {
				recs = append(recs, lww.Record{Key: fmt.Appendf(nil, "k%02d", i), Value: make([]byte, 10_000), Timestamp: 5})
			}
			if _, err := srcEngine.ApplyBatch("ks", recs); err != nil {
				t.Fatal(err)
			}
			s := New(Config{PageBytes: tt.pageBytes})
			st, err := s.copy(context.Background(), replicatest.Framed{Replica: src, FrameBytes: frameBytes},
				replicatest.Framed{Replica: dst, FrameBytes: frameBytes}, "ks", ring.Range{}, false)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("copy: %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			copied, _, err := dst.StoredBytes("ks")
			if err != nil {
				t.Fatal(err)
			}
			if st.Records != int64(len(recs)) || copied != len(recs) {
				t.Fatalf("streamed %d records, %d stored at the destination; want %d", st.Records, copied, len(recs))
			}
		})
	}
}
