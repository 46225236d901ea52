package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
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
// Categories is set (one bar per series in each category). Every figure is drawn alike,
// so that each reads on its own: the legend in a strip to the right of the axes, never
// over the data; every tick labelled, in the number format of the tables (no e-notation);
// and, by the bench's care, one quantity per axis whose label names its unit (two units
// make two panels, see SavePanels).
type Figure struct {
	Title      string
	XLabel     string
	YLabel     string
	LogX, LogY bool
	Categories []string
	Series     []Series
	// XTicks, when set, are the only ticks of the X axis: the values measured, such as
	// client counts, rather than round numbers between them.
	XTicks []float64
}

// Save draws the figure to a PNG file.
func (f Figure) Save(path string) error {
	return SavePanels(path, 1, f)
}

// SavePanels draws several figures into one PNG file, as panels in rows of columns
// (side by side when columns is the number of figures), each the size Save gives a
// figure alone: 8 x 5 inches of plot and a strip for the legend.
func SavePanels(path string, columns int, figures ...Figure) error {
	if err := checkPNG(path); err != nil {
		return err
	}
	if columns < 1 || len(figures) == 0 {
		return fmt.Errorf("plot %s: want at least one figure and one column", path)
	}
	rows := (len(figures) + columns - 1) / columns
	plots := make([]*plot.Plot, len(figures))
	legends := make([]plot.Legend, len(figures))
	// Each panel is 8 x 5 inches of plot, and to its right a strip as wide as the widest
	// legend, so that no legend hides data and no plot is squeezed by its legend.
	scratch := draw.New(vgimg.New(8*vg.Inch, 5*vg.Inch))
	strip := vg.Length(0)
	for i, f := range figures {
		p, err := f.build()
		if err != nil {
			if len(figures) == 1 {
				return fmt.Errorf("plot %s: %w", path, err)
			}
			return fmt.Errorf("plot %s: panel %q: %w", path, f.Title, err)
		}
		plots[i], legends[i] = p, p.Legend
		p.Legend = plot.NewLegend()
		legends[i].Top, legends[i].Left = true, true
		strip = max(strip, legends[i].Rectangle(scratch).Size().X+2*legends[i].ThumbnailWidth)
	}
	img := vgimg.New(vg.Length(columns)*(8*vg.Inch+strip), vg.Length(rows)*5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: columns}
	for i, p := range plots {
		tile := tiles.At(dc, i%columns, i/columns)
		p.Draw(draw.Crop(tile, 0, -strip, 0, 0))
		title := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		legends[i].Draw(draw.Crop(tile, tile.Size().X-strip+legends[i].ThumbnailWidth, 0, 0, -title))
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
	p.X.Tick.Marker, p.Y.Tick.Marker = labelledTicks{}, labelledTicks{}
	if f.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = labelledTicks{log: true}
	}
	if len(f.XTicks) > 0 {
		ticks := make([]plot.Tick, len(f.XTicks))
		for i, x := range f.XTicks {
			ticks[i] = plot.Tick{Value: x, Label: formatTick(x, slices.Max(f.XTicks) >= 1e4)}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	if f.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = labelledTicks{log: true}
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
	// A margin, so that no point sits on the frame; an axis from 0 stays at 0.
	for _, axis := range []struct {
		a   *plot.Axis
		log bool
	}{{&p.X, f.LogX || len(f.XTicks) > 0}, {&p.Y, f.LogY}} {
		if margin := (axis.a.Max - axis.a.Min) * 0.04; !axis.log && margin > 0 {
			if axis.a.Min != 0 {
				axis.a.Min -= margin
			}
			axis.a.Max += margin
		}
	}
	return nil
}

func (f Figure) addBars(p *plot.Plot) error {
	// The bars of a category fill about half its share of the panel's 6 inches of data.
	width := min(vg.Points(36), 3*vg.Inch/vg.Length(max(1, len(f.Categories)*len(f.Series))))
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
	// Room above the tallest bar, so that it does not touch the title.
	if p.Y.Max > 0 && !f.LogY {
		p.Y.Max *= 1.05
	}
	return nil
}

// labelledTicks marks an axis with ticks that all carry a label, written by formatTick:
// gonum's defaults leave the minor ticks bare and write large values as 1e+06. A linear
// axis gets 4 to 10 ticks at a round step (1, 2, 2.5 or 5 times a power of ten); a log
// axis gets 1, 2 and 5 times each power of ten, or the powers alone when the axis spans
// more than three decades.
type labelledTicks struct{ log bool }

// Ticks returns the ticks between lo and hi.
func (t labelledTicks) Ticks(lo, hi float64) []plot.Tick {
	// An axis that reaches ten thousand writes all its thousands with SI prefixes.
	si := max(math.Abs(lo), math.Abs(hi)) >= 1e4
	label := func(v float64) plot.Tick { return plot.Tick{Value: v, Label: formatTick(v, si)} }
	if hi <= lo {
		return []plot.Tick{label(lo)}
	}
	if !t.log {
		magnitude := math.Pow(10, math.Floor(math.Log10((hi-lo)/4)))
		step := magnitude
		for _, m := range []float64{1, 2, 2.5, 5, 10} {
			if step = m * magnitude; (hi-lo)/step <= 9 {
				break
			}
		}
		var ticks []plot.Tick
		for i := math.Ceil(lo / step); i*step <= hi*(1+1e-9); i++ {
			ticks = append(ticks, label(i*step))
		}
		return ticks
	}
	if lo <= 0 {
		return nil
	}
	steps := []float64{1, 2, 5}
	if math.Log10(hi/lo) > 3 {
		steps = []float64{1}
	}
	var ticks []plot.Tick
	for decade := math.Pow(10, math.Floor(math.Log10(lo))); decade <= hi; decade *= 10 {
		for _, step := range steps {
			if v := decade * step; v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				ticks = append(ticks, label(v))
			}
		}
	}
	return ticks
}

// formatTick writes a tick's value as briefly as it is exact: 0.25, 40, 1,500, or with si
// from a thousand on with an SI prefix, 5 k, 20 k, 1.5 M.
func formatTick(v float64, si bool) string {
	a := math.Abs(v)
	if si && a >= 1000 {
		prefix := -1
		for a >= 1000 && prefix < len(siPrefixes)-1 {
			a /= 1000
			prefix++
		}
		digits := strconv.FormatFloat(math.Copysign(a, v), 'f', -1, 64)
		if len(digits) > 5 {
			digits = strconv.FormatFloat(math.Copysign(a, v), 'f', 2, 64)
		}
		return digits + " " + siPrefixes[prefix]
	}
	// Rounded to 9 decimals, the noise of a tick computed as a sum of steps goes.
	s := strconv.FormatFloat(math.Round(v*1e9)/1e9, 'f', -1, 64)
	if s == "-0" {
		s = "0"
	}
	return groupThousands(s)
}
