package bench

import (
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/kuradb/kura/consistency"
)

// TestGocqlClusterSettings checks, without connecting, the driver settings docs/peers.md
// states for the Cassandra rows, and the driver defaults they rely on, which were
// github.com/gocql/gocql v1.7.0's: a driver upgrade that changed one of them would change
// what the rows measure.
func TestGocqlClusterSettings(t *testing.T) {
	hosts := []string{"127.0.0.1", "127.0.0.2"}
	for _, tt := range []struct {
		coalescing   bool
		coalesceWait time.Duration
	}{
		{coalescing: false, coalesceWait: 0},
		{coalescing: true, coalesceWait: 200 * time.Microsecond},
	} {
		c := gocqlCluster(hosts, 3*time.Second, tt.coalescing)
		if c.WriteCoalesceWaitTime != tt.coalesceWait {
			t.Errorf("coalescing %v: WriteCoalesceWaitTime %v, want %v", tt.coalescing, c.WriteCoalesceWaitTime, tt.coalesceWait)
		}
		retry, ok := c.RetryPolicy.(*gocql.SimpleRetryPolicy)
		if !ok || retry.NumRetries != 0 {
			t.Errorf("coalescing %v: retry policy %#v, want no retries", tt.coalescing, c.RetryPolicy)
		}
		if c.PoolConfig.HostSelectionPolicy == nil {
			t.Errorf("coalescing %v: no host selection policy: not token-aware", tt.coalescing)
		}
		for _, f := range []struct {
			name      string
			got, want any
		}{
			{"Hosts", len(c.Hosts), len(hosts)},
			{"Port", c.Port, cassandraNativePort},
			{"ProtoVersion", c.ProtoVersion, 4},
			{"Timeout", c.Timeout, 3 * time.Second},
			{"ConnectTimeout", c.ConnectTimeout, 10 * time.Second},
			{"NumConns", c.NumConns, 2},
			{"PageSize", c.PageSize, 5000},
			{"NextPagePrefetch", c.NextPagePrefetch, 0.25},
			{"DefaultIdempotence", c.DefaultIdempotence, false},
		} {
			if f.got != f.want {
				t.Errorf("coalescing %v: %s %v, want %v", tt.coalescing, f.name, f.got, f.want)
			}
		}
	}
}

// TestGocqlLevels: every plain level kura's bench can be asked for names a Cassandra
// level, the same one.
func TestGocqlLevels(t *testing.T) {
	for _, cl := range consistency.Levels() {
		var g gocqlClient
		if err := g.setLevel(cl); err != nil {
			t.Errorf("%s: %v", cl, err)
			continue
		}
		if g.level.String() != cl.String() {
			t.Errorf("%s: Cassandra level %s", cl, g.level)
		}
	}
}
