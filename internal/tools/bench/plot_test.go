package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFigureSave(t *testing.T) {
	dir := t.TempDir()
	figures := map[string]Figure{
		"lines.png": {Title: "t", XLabel: "n", YLabel: "bps", LogY: true, Series: []Series{
			{Name: "a", X: []float64{10, 100, 1000}, Y: []float64{1, 10, 100}},
			{Name: "b", X: []float64{10, 100, 1000}, Y: []float64{2, 4, 8}},
		}},
		"bars.png": {Title: "t", YLabel: "ms", Categories: []string{"ONE", "ALL"}, Series: []Series{
			{Name: "predicted", Y: []float64{1, 9}},
			{Name: "measured", Y: []float64{1.1, 8.7}},
		}},
	}
	for name, f := range figures {
		path := filepath.Join(dir, name)
		if err := f.Save(path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
			t.Fatalf("%s is not a PNG (err %v)", name, err)
		}
	}
	bad := Figure{Series: []Series{{Name: "x", X: []float64{1}, Y: []float64{1, 2}}}}
	if err := bad.Save(filepath.Join(dir, "bad.png")); err == nil {
		t.Fatal("mismatched series saved without error")
	}
	if err := figures["lines.png"].Save(filepath.Join(dir, "x.svg")); err == nil {
		t.Fatal("a non-PNG path was accepted")
	}
}

// Every tick of an axis carries a label in the tables' format, linear or log.
func TestLabelledTicks(t *testing.T) {
	for _, c := range []struct {
		ticker labelledTicks
		lo, hi float64
		want   []string // the labels, all of them when set
		min    int
	}{
		{labelledTicks{log: true}, 10, 1000, []string{"10", "20", "50", "100", "200", "500", "1,000"}, 0},
		{labelledTicks{log: true}, 1e3, 1e9, []string{"1 k", "10 k", "100 k", "1 M", "10 M", "100 M", "1 G"}, 0},
		{labelledTicks{log: true}, 4000, 30000, []string{"5 k", "10 k", "20 k"}, 0},
		{labelledTicks{}, 0, 1200, []string{"0", "200", "400", "600", "800", "1,000", "1,200"}, 0},
		{labelledTicks{}, 0, 2.5e6, nil, 3},
		{labelledTicks{}, 0, 0.3, nil, 3},
	} {
		ticks := c.ticker.Ticks(c.lo, c.hi)
		var labels []string
		for _, tick := range ticks {
			if tick.Label == "" || eNotation.MatchString(tick.Label) {
				t.Errorf("%v..%v: tick %v labelled %q", c.lo, c.hi, tick.Value, tick.Label)
			}
			labels = append(labels, tick.Label)
		}
		if c.want != nil && strings.Join(labels, " ") != strings.Join(c.want, " ") {
			t.Errorf("%v..%v: labels %q, want %q", c.lo, c.hi, labels, c.want)
		}
		if len(ticks) < c.min {
			t.Errorf("%v..%v: %d ticks %q, want at least %d", c.lo, c.hi, len(ticks), labels, c.min)
		}
	}
}
