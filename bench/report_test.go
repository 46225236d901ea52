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
