package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/replica/local"
	"github.com/kuradb/kura/internal/data/replica/replicatest"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
	"github.com/kuradb/kura/internal/io/transport"
)

// loopback is a Caller that hands every request to a Server in this process, and keeps
// the size of the last answer. A handler's error comes back as its text, as over the
// transport.
type loopback struct {
	server     *Server
	lastAnswer int
	// answerMax, when above zero, refuses a larger answer as the transport refuses one
	// over its frame.
	answerMax int
}

func (l *loopback) Call(ctx context.Context, to transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	answer, err := l.server.Handle(ctx, transport.Peer{ID: "caller"}, kind, payload)
	l.lastAnswer = len(answer)
	if err == nil && l.answerMax > 0 && len(answer) > l.answerMax {
		err = fmt.Errorf("%w: response of %d bytes, limit %d per frame", transport.ErrFrameTooLarge, len(answer), l.answerMax)
	}
	if err != nil {
		return nil, &transport.RemoteError{Msg: err.Error()}
	}
	return answer, nil
}

// named is a replica with the name a test's messages give it.
type named struct {
	name string
	replica.Replica
}

// bothSides returns a local replica and the remote one over it: what a test asserts of
// one, it asserts of both.
func bothSides(local *local.Local, remote *Remote) []named {
	return []named{{"local", local}, {"remote", remote}}
}

type keepClock struct{}

func (keepClock) Observe(hlc.Timestamp) error { return nil }

// newReplica returns a Local replica over an in-memory engine holding keyspace "ks", its
// reads on a read stage of config stage, and a Remote reaching it over a loopback.
func newReplica(t testing.TB, opts storage.Options, stage sched.Config) (*storage.Engine, *local.Local, *Remote, *loopback) {
	t.Helper()
	local, engine := replicatest.NewLocalWith(t, "ks", opts, stage)
	net := &loopback{server: NewServer(local, keepClock{})}
	remote := NewSet("caller", nil, net).Replica(cluster.Node{ID: "replica"}).(*Remote)
	return engine, local, remote, net
}

func TestTreeDigestLocalAndRemoteAgree(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	engine, local, remote, net := newReplica(t, storage.Options{TombstoneGrace: time.Hour}, sched.Config{})
	var recs []lww.Record
	for i := range 3000 { // several pages of the tree's scan
		recs = append(recs, lww.Record{Key: fmt.Appendf(nil, "k%04d", i), Value: []byte("v"), Timestamp: hlc.FromTime(now)})
	}
	recs = append(recs, lww.Record{Key: []byte("gone"), Timestamp: hlc.FromTime(now.Add(-2 * time.Hour)), Tombstone: true})
	if _, err := engine.ApplyBatch("ks", recs); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.CollectGarbage(now, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, req := range []replica.TreeRequest{
		{Keyspace: "ks", Range: ring.Range{}, Depth: 8},
		{Keyspace: "ks", Range: ring.Range{Start: 1 << 62, End: 1 << 63}, Depth: 3},
	} {
		mine, err := local.TreeDigest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := remote.TreeDigest(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if mine.Merkle.Root() != theirs.Merkle.Root() || !slices.Equal(mine.Merkle.Leaves(), theirs.Merkle.Leaves()) ||
			mine.Merkle.Records() != theirs.Merkle.Records() || mine.Watermark != theirs.Watermark {
			t.Fatalf("range %v: the remote tree (%d records) differs from the local one (%d)", req.Range, theirs.Merkle.Records(), mine.Merkle.Records())
		}
		if theirs.WireBytes() != net.lastAnswer {
			t.Errorf("WireBytes = %d, the answer was %d bytes", theirs.WireBytes(), net.lastAnswer)
		}
		if want := hlc.FromTime(now.Add(-time.Hour)) - 1; mine.Watermark != want {
			t.Errorf("watermark %v, want %v", mine.Watermark, want)
		}
	}
	whole, _ := local.TreeDigest(ctx, replica.TreeRequest{Keyspace: "ks", Depth: 0})
	if whole.Merkle.Records() != 3000 {
		t.Errorf("the whole ring's tree counts %d records, want 3000", whole.Merkle.Records())
	}
	for _, bad := range []replica.TreeRequest{{Keyspace: "ks", Depth: 17}, {Keyspace: "none"}} {
		if _, err := remote.TreeDigest(ctx, bad); err == nil {
			t.Errorf("TreeDigest(%+v) succeeded", bad)
		}
	}
}

func TestScanKeysOnly(t *testing.T) {
	engine, _, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
	if _, err := engine.ApplyBatch("ks", []lww.Record{
		{Key: []byte("a"), Value: []byte("a value"), Timestamp: 5},
		{Key: []byte("b"), Timestamp: 6, Tombstone: true},
	}); err != nil {
		t.Fatal(err)
	}
	recs, err := remote.Scan(context.Background(), replica.ScanRequest{Keyspace: "ks", Ranges: []ring.Range{{}}, KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []lww.Record{{Key: []byte("a"), Timestamp: 5}, {Key: []byte("b"), Timestamp: 6, Tombstone: true}}
	if len(recs) != len(want) {
		t.Fatalf("listed %d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if string(r.Key) != string(want[i].Key) || len(r.Value) != 0 || r.Timestamp != want[i].Timestamp || r.Tombstone != want[i].Tombstone {
			t.Errorf("listed %+v, want %+v", r, want[i])
		}
	}
}

// TestScanRefusesAnAnswerOverItsBound: a scan whose records pass the request's BytesMax
// fails with ErrScanTooLarge, on this node and over the wire, rather than answer part
// of them as if the range ended there; under the bound, or with none, it answers all.
// An answer too large for the internode frame is refused alike.
func TestScanRefusesAnAnswerOverItsBound(t *testing.T) {
	engine, local, remote, net := newReplica(t, storage.Options{}, sched.Config{})
	var recs []lww.Record
	for i := range 10 {
		recs = append(recs, lww.Record{Key: []byte{'k', byte('0' + i)}, Value: make([]byte, 1000), Timestamp: 5})
	}
	if _, err := engine.ApplyBatch("ks", recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range bothSides(local, remote) {
		for _, tt := range []struct {
			bytesMax int
			refused  bool
		}{{4000, true}, {20000, false}, {0, false}} {
			got, err := r.Scan(context.Background(), replica.ScanRequest{Keyspace: "ks", Ranges: []ring.Range{{}}, BytesMax: tt.bytesMax})
			switch {
			case tt.refused && !errors.Is(err, replica.ErrScanTooLarge):
				t.Errorf("%s scan of 10 KB under %d bytes: %d records, %v; want replica.ErrScanTooLarge", r.name, tt.bytesMax, len(got), err)
			case !tt.refused && (err != nil || len(got) != len(recs)):
				t.Errorf("%s scan of 10 KB under %d bytes: %d records, %v; want all %d", r.name, tt.bytesMax, len(got), err, len(recs))
			}
		}
	}

	// An answer under the bound asked but over the internode frame is the same refusal;
	// a scan that asked for no bound (streaming pages) keeps the transport's error.
	net.answerMax = 5000
	if _, err := remote.Scan(context.Background(), replica.ScanRequest{Keyspace: "ks", Ranges: []ring.Range{{}}, BytesMax: 20000}); !errors.Is(err, replica.ErrScanTooLarge) {
		t.Errorf("remote scan over the frame: %v, want replica.ErrScanTooLarge", err)
	}
	if _, err := remote.Scan(context.Background(), replica.ScanRequest{Keyspace: "ks", Ranges: []ring.Range{{}}}); err == nil || errors.Is(err, replica.ErrScanTooLarge) {
		t.Errorf("remote scan with no bound over the frame: %v, want the transport's refusal", err)
	}
}

// TestScanPagesCutByBytes: a scan with PageBytes ends its answer at the record that
// brings the answer's bytes to PageBytes (counting keys alone when it lists keys only),
// across the read stage's own pages; CutShort tells the caller to read on, and paging on
// from the last key reads every record once, in order, on this node and over the wire.
func TestScanPagesCutByBytes(t *testing.T) {
	engine, local, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
	var recs []lww.Record
	var want []string
	for i := range 600 {
		recs = append(recs, lww.Record{Key: fmt.Appendf(nil, "k%03d", i), Value: make([]byte, 1000), Timestamp: 5})
		want = append(want, string(recs[i].Key))
	}
	if _, err := engine.ApplyBatch("ks", recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range bothSides(local, remote) {
		for _, tt := range []struct {
			name             string
			pageBytes, limit int
			keysOnly         bool
			wantFirst        int // records in the first page
		}{
			{"three values a page", 2500, 0, false, 3},
			{"past the read stage's page", 300_000, 0, false, 299},
			{"the record limit first", 1 << 30, 250, false, 250},
			{"keys alone counted", 40, 0, true, 10},
		} {
			t.Run(r.name+"/"+tt.name, func(t *testing.T) {
				var got []string
				var start []byte
				for pages := 0; ; pages++ {
					req := replica.ScanRequest{Keyspace: "ks", Start: start, Limit: tt.limit, PageBytes: tt.pageBytes, KeysOnly: tt.keysOnly, Ranges: []ring.Range{{}}}
					page, err := r.Scan(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					if pages == 0 && len(page) != tt.wantFirst {
						t.Fatalf("first page of %d records, want %d", len(page), tt.wantFirst)
					}
					if len(page) > 1 && len(page) != tt.limit && replica.RecordBytes(page[:len(page)-1]) >= tt.pageBytes {
						t.Fatalf("page %d goes on past the record that reached %d bytes", pages, tt.pageBytes)
					}
					for _, rec := range page {
						got = append(got, string(rec.Key))
					}
					if !req.CutShort(page) {
						break
					}
					start = append(slices.Clone(page[len(page)-1].Key), 0)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("paged through %d records, want each of the %d once, in order", len(got), len(want))
				}
			})
		}
	}
}

// A Digest scan answers every record a plain scan does, in the same order, with the same
// versions, each live value replaced by its digest and tombstones without one; its bounds
// count the digests, and it reads past the read stage's pages as a plain scan does.
func TestScanDigestsStandForValues(t *testing.T) {
	engine, local, remote, _ := newReplica(t, storage.Options{}, sched.Config{})
	var recs []lww.Record
	for i := range 600 {
		r := lww.Record{Key: fmt.Appendf(nil, "k%03d", i), Value: fmt.Appendf(make([]byte, 0, 2000), "%02000d", i), Timestamp: hlc.Timestamp(5 + i%3)}
		switch i % 7 {
		case 0:
			r.Value, r.Tombstone = nil, true
		case 1:
			r.ExpiresAt = hlc.Timestamp(1 << 60)
		}
		recs = append(recs, r)
	}
	if _, err := engine.ApplyBatch("ks", recs); err != nil {
		t.Fatal(err)
	}
	const bytesMax = 100 << 10 // over the digests' bytes, far under the values'
	for _, r := range bothSides(local, remote) {
		t.Run(r.name, func(t *testing.T) {
			req := replica.ScanRequest{Keyspace: "ks", Ranges: []ring.Range{{}}, BytesMax: bytesMax}
			if _, err := r.Scan(context.Background(), req); !errors.Is(err, replica.ErrScanTooLarge) {
				t.Fatalf("plain scan of %d values of 2,000 bytes under %d bytes: err = %v, want replica.ErrScanTooLarge", len(recs), bytesMax, err)
			}
			req.Digest = true
			digests, err := r.Scan(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(digests) != len(recs) {
				t.Fatalf("digest scan answered %d records, want %d", len(digests), len(recs))
			}
			for i, d := range digests {
				want := recs[i]
				if string(d.Key) != string(want.Key) || d.Timestamp != want.Timestamp || d.Tombstone != want.Tombstone || d.ExpiresAt != want.ExpiresAt {
					t.Fatalf("record %d = %s@%v tombstone %v expiry %v, want %s@%v tombstone %v expiry %v",
						i, d.Key, d.Timestamp, d.Tombstone, d.ExpiresAt, want.Key, want.Timestamp, want.Tombstone, want.ExpiresAt)
				}
				switch {
				case want.Tombstone && d.Value != nil:
					t.Fatalf("tombstone %s answered with value %x", d.Key, d.Value)
				case !want.Tombstone && !replica.DigestMatches(d.Value, want.Value):
					t.Fatalf("record %s answered %x, not its value's digest", d.Key, d.Value)
				case !want.Tombstone && replica.DigestMatches(d.Value, recs[(i+1)%len(recs)].Value):
					t.Fatalf("record %s's digest %x matches another value", d.Key, d.Value)
				}
			}
		})
	}
}

func TestBatchesSplitByBytes(t *testing.T) {
	rec := func(valueBytes int) lww.Record { return lww.Record{Key: []byte("k"), Value: make([]byte, valueBytes)} }
	tests := []struct {
		name     string
		values   []int
		bytesMax int
		want     []int // records per batch
	}{
		{"none", nil, 100, nil},
		{"all in one", []int{9, 9, 9}, 100, []int{3}},
		{"exactly at the bound", []int{49, 49, 9}, 100, []int{2, 1}},
		{"a record over the bound alone", []int{9, 500, 9}, 100, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var records []lww.Record
			for _, v := range tt.values {
				records = append(records, rec(v))
			}
			var got []int
			for batch := range replica.Batches(records, tt.bytesMax) {
				got = append(got, len(batch))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("batches of %v records, want %v", got, tt.want)
			}
		})
	}
}
