package bench

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	membership "github.com/kuradb/kura/internal/tools/membership/experiment"
	"github.com/kuradb/kura/internal/tools/routing/experiment"
)

// tableSamples holds, per bench, a row of every type its report tabulates (rows, fits,
// reductions), with text as long as the bench writes; the test fills the numbers in.
var tableSamples = map[string][]any{
	"gossip":         {GossipRow{Source: "real", Row: membership.Row{Protocol: "scuttlebutt"}}, GossipFit{Protocol: "scuttlebutt"}},
	"latency-model":  {latencyModelRow{Setup: "6-node-2dc", Consistency: "QUORUM", Op: "write"}},
	"ldr":            {ldrRow{Experiment: "latency", Scheme: "replicate", ReaderDC: "saopaulo"}},
	"dht-membership": {DHTMembershipRow{experiment.MembershipRow{Protocol: "mlchord"}}},
	"peers":          peersSamples,
	"power":          {PowerRow{Run: "exp2-suppressed", Events: "n12 asleep, n13 waking"}},
	"rebalance":      {RebalanceRow{Step: "decommission", Nodes: "dc1-n4, dc2-n4"}},
	"redis":          {RedisRow{Target: "kura-3-quorum", Op: "SETNX"}},
	"redis-races":    {RaceRow{Target: "kura-3-quorum", Check: "SETNX one winner"}},
	"redis-apps":     {RedisAppsRow{Pattern: patternLeaderboard, Target: appKuraThree + pnSuffix, Persistence: "save off, aof always"}, AppCheck{Pattern: patternQueue, Target: appRedisAlways}},
	"repair":         {RepairRow{Case: "rebuild wiped virginia-3"}},
	"routing": {RoutingRow{},
		RoutingEmulatedRow{Layout: "tokyo 10 + saopaulo 5", Protocol: "mlchord-paper"},
		routingEmulatedReduction{Layout: "tokyo 10 + saopaulo 5"}},
	"scale":      {ScaleRow{Part: scalePartRouting, Protocol: "mlchord"}},
	"scheduling": {SchedulingRow{Mix: "9:1", Variant: "ReS+P"}, SchedulingReduction{Mix: "9:1", Variant: "ReS+P"}, schedCheck{Check: "kura scan mean vs O (want A's), 9:1, 1000 clients"}},
}

// peersSamples are the peers bench's rows, with its longest names.
var peersSamples = []any{
	PeerRow{Layout: layoutThree, System: sysRedisDefault, Consistency: "LOCAL_QUORUM", Workload: "E", Distribution: distZipfian},
	PeerRatio{Layout: layoutThree, Kura: sysKuraRESP, Peer: sysRedisDefault, Consistency: "LOCAL_QUORUM", Workload: "E",
		Distribution: distZipfian, Note: "n/a: Redis has no range scans"},
}

// eNotation matches a number written as 2.202e+06.
var eNotation = regexp.MustCompile(`\d[eE][+-]?\d`)

// TestEveryBenchTableReads renders a table of every row type of every bench, its numbers
// as large as the bench's get, and checks that a person can read it: no line wider than
// MaxWidth with every chosen column shown, no number in e-notation, no JSON.
func TestEveryBenchTableReads(t *testing.T) {
	for _, b := range All() {
		samples, ok := tableSamples[b.Name]
		if !ok {
			t.Errorf("bench %s has no sample rows here: add them to tableSamples", b.Name)
			continue
		}
		for _, sample := range samples {
			t.Run(b.Name+"/"+reflect.TypeOf(sample).Name(), func(t *testing.T) {
				row := reflect.New(reflect.TypeOf(sample)).Elem()
				row.Set(reflect.ValueOf(sample))
				fillNumbers(row, "")
				rows := reflect.MakeSlice(reflect.SliceOf(row.Type()), 0, 2)
				rows = reflect.Append(rows, row, row)
				r := &Report{Bench: b.Name, Scale: b.Summary, Rows: rows.Interface(),
					Summary: map[string]any{"wall_s": 1234.5678, "total_bps": 2.202e6, "lists": []float64{1e9, 0.5},
						"nested": map[string]any{"rows": 165952, "checks": []schedCheck{{Check: "x", GotPct: 1e7}}}},
					Notes: []string{strings.Repeat("a long note about how to read the table, ", 8)}}
				var out bytes.Buffer
				if err := r.WriteTable(&out); err != nil {
					t.Fatal(err)
				}
				text := out.String()
				for _, line := range strings.Split(text, "\n") {
					if width := utf8.RuneCountInString(line); width > MaxWidth {
						t.Errorf("a line is %d columns wide:\n%s", width, line)
					}
				}
				if strings.Contains(text, "only in --json") {
					t.Errorf("the chosen columns do not fit %d columns:\n%s", MaxWidth, text)
				}
				if m := eNotation.FindString(text); m != "" {
					t.Errorf("a number in e-notation (%s):\n%s", m, text)
				}
				if strings.ContainsAny(text, "{}\"") {
					t.Errorf("JSON in the text output:\n%s", text)
				}
				if testing.Verbose() {
					t.Logf("\n%s", text)
				}
			})
		}
	}
}

// fillNumbers sets every number of v to a value as wide as a bench writes: large counts,
// rates and sizes in the millions, other figures in the thousands, negative.
func fillNumbers(v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.Struct:
		for _, f := range jsonFields(v.Type(), nil) {
			fillNumbers(v.FieldByIndex(f.index), f.name)
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillNumbers(v.Elem(), name)
	case reflect.Float32, reflect.Float64:
		if usesSI(name) {
			v.SetFloat(-123.456e6)
		} else {
			v.SetFloat(-1234.5678)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(12345)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(12345)
	case reflect.String:
		if v.String() == "" {
			v.SetString("abcdefgh")
		}
	}
}

func TestFormatNumber(t *testing.T) {
	for _, c := range []struct {
		name  string
		x     float64
		whole bool
		want  string
	}{
		{"keys", 165952, true, "165,952"},
		{"keys", -1234567, true, "-1,234,567"},
		{"ops", 12, true, "12"},
		{"total_bps", 2.202e6, false, "2.20 M"},
		{"total_bps", 593945, false, "594 k"},
		{"total_bps", 39115, false, "39.1 k"},
		{"total_bps", 999.7, false, "1.00 k"},
		{"streamed_bytes", 2e12, true, "2.00 T"},
		{"interdc_bps", 512, false, "512"},
		{"latency_ms_mean", 1152.4, false, "1,152"},
		{"latency_ms_mean", 39.14, false, "39.1"},
		{"hops_mean", 4.115, false, "4.12"},
		{"hops_mean", 0.4912, false, "0.491"},
		{"error_fraction", 1e-7, false, "0"},
		{"error_fraction", -1e-7, false, "0"},
		{"qps", 2.5e9, false, "2,500,000,000"},
		{"interdc_bytes_per_get_mean", 6120, false, "6.12 k"},
		{"transport_bytes_per_data_byte", 1.5, false, "1.50"},
		{"maintenance_bps_per_node", 22175, false, "22.2 k"},
	} {
		if got := formatNumber(c.name, c.x, c.whole); got != c.want {
			t.Errorf("formatNumber(%q, %v) = %q, want %q", c.name, c.x, got, c.want)
		}
	}
}
