package hints

import (
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/io/storage"
)

// TestForReadsAPageBoundedByCountAndBytes: a target's hints are read oldest first, a page
// ending at limit hints or at the hint whose stored bytes reach bytesMax, and more tells
// whether one was cut short; Pending counts what is stored, for every target.
func TestForReadsAPageBoundedByCountAndBytes(t *testing.T) {
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	s := NewStore(engine)
	for i := range 5 {
		if err := s.Add("b", "ks", lww.Record{Key: fmt.Appendf(nil, "k%d", i), Value: make([]byte, 1000), Timestamp: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add("c", "ks", lww.Record{Key: []byte("other"), Value: []byte("v"), Timestamp: 5}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Pending(); err != nil || n != 6 {
		t.Fatalf("Pending = %d, %v; want 6", n, err)
	}

	var read []string
	for _, page := range []struct {
		limit, bytesMax int
		want            int
		wantMore        bool
	}{
		{10, 2500, 3, true},   // the third hint brings the page past 2,500 bytes
		{1, 1 << 20, 1, true}, // the limit
		{10, 2500, 1, false},  // the last one
	} {
		hints, more, err := s.For("b", page.limit, page.bytesMax)
		if err != nil {
			t.Fatal(err)
		}
		if len(hints) != page.want || more != page.wantMore {
			t.Fatalf("For(b, %d, %d) = %d hints, more %v; want %d, more %v", page.limit, page.bytesMax, len(hints), more, page.want, page.wantMore)
		}
		for _, h := range hints {
			read = append(read, string(h.Record.Key))
			if err := s.Delivered(h); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(read) != "[k0 k1 k2 k3 k4]" {
		t.Errorf("read %v, want every hint of b once, oldest first", read)
	}
	if n, err := s.Pending(); err != nil || n != 1 {
		t.Errorf("Pending after b's delivery = %d, %v; want c's 1", n, err)
	}
}
