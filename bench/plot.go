package bench

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one named line of a figure, or one named set of bars.
type Series struct {
	Name string
	X    []float64 // ignored for bars
	Y    []float64
}

// Figure describes a chart: lines over a numeric X axis, or bars grouped by category when
// Categories is set (one bar per series in each category).
type Figure struct {
	Title      string
	XLabel     string
	YLabel     string
	LogX, LogY bool
	Categories []string
	Series     []Series
	// LegendOutside puts the legend to the right of the axes instead of in the data's top
	// right corner, where it would hide the lines that rise to the right.
	LegendOutside bool
	// XTicks, when set, are the only labelled ticks of the X axis: the values measured,
	// such as client counts, rather than round numbers between them.
	XTicks []float64
}

// Save draws the figure to a PNG file.
func (f Figure) Save(path string) error {
	return SavePanels(path, 1, f)
}

// SavePanels draws several figures into one PNG file, as panels in rows of columns
// (side by side when columns is the number of figures), each the size Save gives a
// figure alone.
func SavePanels(path string, columns int, figures ...Figure) error {
	if err := checkPNG(path); err != nil {
		return err
	}
	if columns < 1 || len(figures) == 0 {
		return fmt.Errorf("plot %s: want at least one figure and one column", path)
	}
	rows := (len(figures) + columns - 1) / columns
	img := vgimg.New(vg.Length(columns)*8*vg.Inch, vg.Length(rows)*5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: columns}
	for i, f := range figures {
		p, err := f.build()
		if err != nil {
			if len(figures) == 1 {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			return fmt.Errorf("plot %s: panel %q: %w", path, f.Title, err)
		}
		tile := tiles.At(dc, i%columns, i/columns)
		if !f.LegendOutside {
			p.Draw(tile)
			continue
		}
		// The legend gets a strip of its own at the right; the plot draws without it.
		legend := p.Legend
		p.Legend = plot.NewLegend()
		legend.Top, legend.Left = true, true
		strip := legend.Rectangle(tile).Size().X + legend.ThumbnailWidth
		p.Draw(draw.Crop(tile, 0, -strip, 0, 0))
		legend.Draw(draw.Crop(tile, tile.Size().X-strip+legend.ThumbnailWidth/2, 0, 0, -p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y-p.Title.Padding))
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return out.Close()
}

func checkPNG(path string) error {
	if !strings.EqualFold(filepath.Ext(path), ".png") {
		return fmt.Errorf("plot %s: only .png is supported", path)
	}
	return nil
}

// build lays the figure out as a plot.
func (f Figure) build() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.Legend.Top = true
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if len(f.XTicks) > 0 {
		ticks := make([]plot.Tick, len(f.XTicks))
		for i, x := range f.XTicks {
			ticks[i] = plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	var err error
	if len(f.Categories) > 0 {
		err = f.addBars(p)
	} else {
		err = f.addLines(p)
	}
	return p, err
}

func (f Figure) addLines(p *plot.Plot) error {
	for i, s := range f.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("series %s has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		points := make(plotter.XYs, len(s.X))
		for j := range s.X {
			points[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
		}
		line, dots, err := plotter.NewLinePoints(points)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		dots.Color = plotutil.Color(i)
		dots.Shape = plotutil.Shape(i)
		p.Add(line, dots)
		p.Legend.Add(s.Name, line, dots)
	}
	p.Add(plotter.NewGrid())
	return nil
}

func (f Figure) addBars(p *plot.Plot) error {
	width := vg.Points(40 / float64(max(1, len(f.Series))))
	for i, s := range f.Series {
		if len(s.Y) != len(f.Categories) {
			return fmt.Errorf("series %s has %d values for %d categories", s.Name, len(s.Y), len(f.Categories))
		}
		bars, err := plotter.NewBarChart(plotter.Values(s.Y), width)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Color = color.Black
		bars.Offset = width * vg.Length(float64(i)-float64(len(f.Series)-1)/2)
		p.Add(bars)
		p.Legend.Add(s.Name, bars)
	}
	p.NominalX(f.Categories...)
	return nil
}
