package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type sampleRow struct {
	Protocol  string   `json:"protocol"`
	Nodes     int      `json:"nodes"`
	TotalBps  float64  `json:"total_bps"`
	PaperBps  *float64 `json:"paper_bps"`
	internal  int
	Skipped   int `json:"-"`
	LatencyMs float64
}

func TestReportTableAndJSON(t *testing.T) {
	paper := 229e6
	r := &Report{
		Bench: "sample",
		Scale: "none",
		Rows: []sampleRow{
			{Protocol: "a", Nodes: 10, TotalBps: 1234.5, PaperBps: &paper},
			{Protocol: "b", Nodes: 1000, TotalBps: 0.25},
		},
		Summary: map[string]any{"ok": true},
		Notes:   []string{"scaled down"},
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"protocol", "total_bps", "paper_bps", "1234", "2.29e+08", "0.25", "-", "note: scaled down", `"ok": true`} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "internal") || strings.Contains(table.String(), "Skipped") || strings.Contains(table.String(), "LatencyMs") {
		t.Errorf("table shows fields without a JSON name:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"bench", "scale", "rows", "summary"} {
		if _, ok := decoded[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, js.String())
		}
	}
	if _, ok := decoded["fits"]; ok {
		t.Errorf("JSON has an empty fits: %s", js.String())
	}
}

func TestReportTableFlattensEmbeddedRows(t *testing.T) {
	type inner struct {
		Nodes    int     `json:"nodes"`
		TotalBps float64 `json:"total_bps"`
	}
	type outer struct {
		Source string `json:"source"`
		inner
		Extra *float64 `json:"extra,omitempty"`
	}
	var table bytes.Buffer
	r := &Report{Bench: "x", Rows: []outer{{Source: "sim", inner: inner{Nodes: 7, TotalBps: 12}}}}
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	header := strings.Fields(strings.Split(table.String(), "\n")[3])
	if strings.Join(header, " ") != "source nodes total_bps extra" {
		t.Fatalf("header = %v, want the embedded row's columns in place:\n%s", header, table.String())
	}
}

func TestReportTableGroups(t *testing.T) {
	type row struct {
		Mix     string  `json:"mix" table:"group"`
		Clients int     `json:"clients"`
		Mean    float64 `json:"latency_ms_mean"`
		Detail  float64 `json:"detail_ms" table:"-"`
	}
	type reduction struct {
		Mix     string  `json:"mix" table:"group"`
		MeanPct float64 `json:"mean_pct"`
	}
	r := &Report{Bench: "x", Rows: []row{{"9:1", 1, 2.5, 7}, {"9:1", 2, 3, 7}, {"5:5", 1, 4, 7}},
		Reduction: []reduction{{"9:1", 25}, {"5:5", 80}}}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(table.String(), "\n")[3:] {
		got = append(got, strings.Join(strings.Fields(line), " "))
	}
	want := []string{
		"mix 9:1", "clients latency_ms_mean", "1 2.5", "2 3", "",
		"mix 5:5", "clients latency_ms_mean", "1 4", "",
		"reduction:", "mix 9:1", "mean_pct", "25", "", "mix 5:5", "mean_pct", "80", "",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table:\n%s\nwant the group fields as headings and no detail:\n%s", table.String(), strings.Join(want, "\n"))
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"detail_ms": 7`) || !strings.Contains(js.String(), `"mix": "9:1"`) {
		t.Fatalf("JSON lacks the fields the table leaves out: %s", js.String())
	}
}
