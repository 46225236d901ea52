package node

import (
	"testing"
	"time"

	"github.com/kuradb/kura/membership"
	"github.com/kuradb/kura/membership/ferry"
	"github.com/kuradb/kura/schema"
)

// A short gossip round speeds Ferry's clock up, but its probe and suspicion timeouts
// never become shorter in real time than detectionFloor; at a round of a second or more
// they are the defaults.
func TestFerryTimeoutsKeepARealTimeFloor(t *testing.T) {
	def := ferry.DefaultOptions
	for _, tc := range []struct {
		interval             time.Duration
		probe, suspect, wide time.Duration // in core time
	}{
		{0, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{time.Second, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{2 * time.Second, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{500 * time.Millisecond, def.ProbeTimeout, def.SuspectTimeout, def.RemoteProbeTimeout},
		{200 * time.Millisecond, 1250 * time.Millisecond, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{50 * time.Millisecond, 5 * time.Second, 10 * time.Second, 10 * time.Second},
	} {
		opts := ferryOptionsAt(tc.interval)
		if opts.ProbeTimeout != tc.probe || opts.SuspectTimeout != tc.suspect || opts.RemoteProbeTimeout != tc.wide {
			t.Errorf("interval %v: probe %v, suspect %v, remote probe %v; want %v, %v, %v", tc.interval,
				opts.ProbeTimeout, opts.SuspectTimeout, opts.RemoteProbeTimeout, tc.probe, tc.suspect, tc.wide)
		}
		if tc.interval > 0 {
			scale := float64(membership.Round) / float64(tc.interval)
			if real := time.Duration(float64(opts.ProbeTimeout) / scale); real < detectionFloor {
				t.Errorf("interval %v: a probe stage lasts %v of real time, under %v", tc.interval, real, detectionFloor)
			}
		}
	}
}

func TestTokensRoundTrip(t *testing.T) {
	for _, tokens := range [][]uint64{nil, {0}, {1, 1 << 63, ^uint64(0)}} {
		got, err := parseTokens(formatTokens(tokens))
		if err != nil || len(got) != len(tokens) {
			t.Fatalf("parseTokens(formatTokens(%v)) = %v, %v", tokens, got, err)
		}
		for i := range tokens {
			if got[i] != tokens[i] {
				t.Fatalf("token %d: %d, want %d", i, got[i], tokens[i])
			}
		}
	}
	if _, err := parseTokens("12,x"); err == nil {
		t.Fatal("a malformed token list was accepted")
	}
}

// A node that missed a keyspace's announcement notices the gossiped schema digest and
// pulls the catalog.
func TestMissedKeyspaceArrivesThroughGossip(t *testing.T) {
	a := startNode(t, "a", "dc1")
	b := startNode(t, "b", "dc1", a.Addr())
	waitUntil(t, "a and b know each other", func() bool {
		return a.View().State("b").Reachable() && b.View().State("a").Reachable()
	})
	// Define the keyspace on a alone, as if the announcement to b had been lost.
	ks, err := schema.Keyspace{Name: "quiet", Replication: "simple=1", Timestamp: a.clock.Now()}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.catalog.Apply(ks); err != nil {
		t.Fatal(err)
	}
	a.schemas.Changed()
	waitUntil(t, "b learns the keyspace", func() bool {
		_, err := b.Keyspace("quiet")
		return err == nil
	})
}
