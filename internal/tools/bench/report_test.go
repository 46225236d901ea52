package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
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
			{Protocol: "a", Nodes: 10, TotalBps: 1234.4, PaperBps: &paper},
			{Protocol: "b", Nodes: 1000, TotalBps: 0.25},
		},
		Summary: map[string]any{"ok": true, "wall_s": 2.5, "per_dc": map[string]any{"dc1": 1e6}},
		Notes:   []string{"scaled down"},
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	want := `bench sample
scale: none

                 total_  paper_
protocol  nodes     bps     bps
a            10  1.23 k   229 M
b         1,000   0.250       -

summary:
  ok          yes
  per_dc.dc1  1,000,000
  wall_s      2.50

note: scaled down
`
	if table.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), want)
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

func TestTableColumns(t *testing.T) {
	type inner struct {
		Nodes    int     `json:"nodes"`
		TotalBps float64 `json:"total_bps"`
		Loss     float64 `json:"loss"`
	}
	type outer struct {
		Source string `json:"source"`
		inner
		Extra  *float64 `json:"extra,omitempty"`
		Detail int      `json:"detail" table:"-"`
	}
	type chosen struct {
		Source string `json:"source" table:"group"`
		inner  `table:"nodes,loss"`
	}
	for _, c := range []struct {
		row  any
		want []string
	}{
		{outer{}, []string{"source", "nodes", "total_bps", "loss", "extra"}},
		{chosen{}, []string{"source", "nodes", "loss"}},
	} {
		var got []string
		for _, col := range tableColumns(reflect.TypeOf(c.row), nil) {
			got = append(got, col.name)
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%T: columns %v, want %v", c.row, got, c.want)
		}
	}
	type typo struct {
		inner `table:"nodes,los"`
	}
	defer func() {
		if recover() == nil {
			t.Error("a table tag naming no field was accepted")
		}
	}()
	tableColumns(reflect.TypeOf(typo{}), nil)
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
	want := `bench x
scale:

mix 9:1
         latency_
clients   ms_mean
      1      2.50
      2      3.00

mix 5:5
         latency_
clients   ms_mean
      1      4.00

reduction:
mix 9:1
mean_
  pct
 25.0

mix 5:5
mean_
  pct
 80.0
`
	if table.String() != want {
		t.Fatalf("table:\n%s\nwant the group fields as headings and no detail:\n%s", table.String(), want)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"detail_ms": 7`) || !strings.Contains(js.String(), `"mix": "9:1"`) {
		t.Fatalf("JSON lacks the fields the table leaves out: %s", js.String())
	}
}

// A table whose columns do not fit leaves the last ones to the JSON and says so; a last
// column of text is wrapped into the width left.
func TestReportTableFitsMaxWidth(t *testing.T) {
	var fields []reflect.StructField
	for _, name := range strings.Fields("A B C D E F G H I J K L") {
		fields = append(fields, reflect.StructField{Name: name, Type: reflect.TypeFor[float64](),
			Tag: reflect.StructTag(`json:"figure_` + strings.ToLower(name) + `_with_a_long_name"`)})
	}
	wide := reflect.MakeSlice(reflect.SliceOf(reflect.StructOf(fields)), 1, 1).Interface()
	type note struct {
		Ops    int    `json:"ops"`
		Events string `json:"events"`
	}
	long := strings.Repeat("n3 asleep after 18.2 s; ", 10)
	for _, c := range []struct {
		rows any
		want string
	}{
		{wide, "(only in --json: "},
		{[]note{{Ops: 1, Events: long}}, "n3 asleep after 18.2 s;"},
	} {
		var table bytes.Buffer
		if err := (&Report{Bench: "x", Rows: c.rows}).WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(table.String(), "\n") {
			if len(line) > MaxWidth {
				t.Errorf("a line of %d columns:\n%s", len(line), table.String())
			}
		}
		if !strings.Contains(table.String(), c.want) {
			t.Errorf("table lacks %q:\n%s", c.want, table.String())
		}
	}
}

// Text is wrapped at MaxWidth between words, never between a number and its unit.
func TestWrap(t *testing.T) {
	text := strings.Repeat("x", 104) + " every 10 s (paper: 10 per machine every 30 s) so that every size is steady by 200 s"
	lines := wrap("scale: ", text)
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " every") || !strings.HasPrefix(lines[1], "       10 s (paper:") {
		t.Errorf("wrapped:\n%s", strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if len(l) > MaxWidth {
			t.Errorf("a line of %d columns: %q", len(l), l)
		}
	}
}
