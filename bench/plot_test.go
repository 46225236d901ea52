package bench

import (
	"bytes"
	"os"
	"path/filepath"
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
