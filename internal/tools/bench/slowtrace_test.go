package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSlowTracerWritesOnlyForSlowRequests checks that a request under the threshold
// leaves no trace file and one over it leaves a trace that go tool trace reads (it
// starts with the trace header).
func TestSlowTracerWritesOnlyForSlowRequests(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "exp1")
	tr, err := startSlowTracer(prefix, 50*time.Millisecond, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	_, end := tr.request(context.Background(), "read")
	end(10 * time.Millisecond)
	tr.stop()
	if files, _ := filepath.Glob(prefix + ".*"); len(files) != 0 {
		t.Fatalf("a request under the threshold left %v", files)
	}

	tr, err = startSlowTracer(prefix, 50*time.Millisecond, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	tr.startRun("exp1", time.Now())
	_, end = tr.request(context.Background(), "update")
	end(60 * time.Millisecond)
	tr.stop()
	slow := tr.slowRequests()
	if len(slow) != 1 || slow[0].Run != "exp1" || slow[0].Kind != "update" || slow[0].LatencyMs != 60 {
		t.Errorf("slow requests listed: %+v, want the one update of exp1 at 60 ms", slow)
	}
	b, err := os.ReadFile(prefix + ".1.trace")
	if err != nil {
		t.Fatalf("a request over the threshold left no trace: %v", err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("the trace starts with %q, not the header of a Go trace (go 1.N trace)", b[:min(len(b), 16)])
	}
}

// TestSlowTracerNil checks that without --trace requests are not traced and cost no
// snapshot: a nil tracer's request hands back the context it was given.
func TestSlowTracerNil(t *testing.T) {
	var tr *slowTracer
	ctx := context.Background()
	got, end := tr.request(ctx, "read")
	end(time.Hour)
	tr.stop()
	if got != ctx {
		t.Error("a nil tracer changed the request's context")
	}
}
