package geo

import (
	"math"
	"sort"
	"strconv"
	"testing"

	"github.com/kuradb/kura/internal/core/collection/zset"
)

// The expected values of these tests are redis-server 7.0.15's replies: GEOADD then
// ZSCORE, GEOPOS, GEOHASH, GEODIST and GEOSEARCH on the same points.

// point is a point of the tests, with Redis's score, GEOPOS and GEOHASH of it.
type point struct {
	name           string
	lon, lat       float64
	score          float64
	posLon, posLat string
	hash           string
}

var points = []point{
	{"palermo", 13.361389, 38.115556, 3479099956230698, "13.36138933897018433", "38.11555639549629859", "sqc8b49rny0"},
	{"catania", 15.087269, 37.502669, 3479447370796909, "15.08726745843887329", "37.50266842333162032", "sqdtr74hyu0"},
	{"origin", 0, 0, 3377699720527872, "0.00000268220901489", "0.00000126736058093", "s0000000000"},
	// The corners of the indexed area: the north-east one overflows 52 bits, as in Redis.
	{"ne", 180, 85.05112878, 13510798882111488, "180", "85.0511287799999991", "bp05b5048p0"},
	{"sw", -180, -85.05112878, 0, "-179.99999731779098511", "-85.05112751263942528", "00bh0hbj200"},
	{"oakland", -122.27652, 37.805186, 1367952638197536, "-122.27652043104171753", "37.80518485897756165", "9q9p1d0znt0"},
	{"tiny", -0.0001, -0.0001, 1125899906841058, "-0.00009924173355103", "-0.00010012148579364", "7zzzzzzzmt0"},
}

func TestScorePositionHash(t *testing.T) {
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			score, ok := Score(p.lon, p.lat)
			if !ok || score != p.score {
				t.Fatalf("Score(%v, %v) = %v, %v; want %v", p.lon, p.lat, score, ok, p.score)
			}
			lon, lat := Position(score)
			if got := FormatCoordinate(lon); got != p.posLon {
				t.Errorf("longitude %s, want %s", got, p.posLon)
			}
			if got := FormatCoordinate(lat); got != p.posLat {
				t.Errorf("latitude %s, want %s", got, p.posLat)
			}
			if got := Hash(score); got != p.hash {
				t.Errorf("Hash = %s, want %s", got, p.hash)
			}
		})
	}
}

func TestScoreRefusesOutsideLimits(t *testing.T) {
	for _, c := range []struct{ lon, lat float64 }{{180.0001, 0}, {-180.0001, 0}, {0, 85.06}, {0, -85.06}, {math.Inf(1), 0}} {
		if _, ok := Score(c.lon, c.lat); ok {
			t.Errorf("Score(%v, %v) accepted", c.lon, c.lat)
		}
	}
}

func TestDistance(t *testing.T) {
	byName := map[string]point{}
	for _, p := range points {
		byName[p.name] = p
	}
	for _, c := range []struct {
		a, b, unit, want string
	}{
		{"palermo", "catania", "m", "166274.1516"},
		{"palermo", "catania", "KM", "166.2742"},
		{"palermo", "catania", "mi", "103.3182"},
		{"palermo", "catania", "ft", "545518.8700"},
		{"origin", "tiny", "m", "15.9904"},
		{"oakland", "palermo", "km", "10431.6657"},
		{"palermo", "palermo", "m", "0.0000"},
	} {
		unit, ok := Unit([]byte(c.unit))
		if !ok {
			t.Fatalf("unit %q refused", c.unit)
		}
		lon1, lat1 := Position(byName[c.a].score)
		lon2, lat2 := Position(byName[c.b].score)
		if got := FormatDistance(Distance(lon1, lat1, lon2, lat2) / unit); got != c.want {
			t.Errorf("%s-%s in %s: %s, want %s", c.a, c.b, c.unit, got, c.want)
		}
	}
	if _, ok := Unit([]byte("kmm")); ok {
		t.Error("unit kmm accepted")
	}
}

// TestDistanceFullPrecision: distances to the last bit, as STOREDIST stores them
// (GEOSEARCHSTORE ... STOREDIST, then ZRANGE WITHSCORES, in km): the math package's sin,
// cos and asin miss these by an ulp.
func TestDistanceFullPrecision(t *testing.T) {
	palermo, catania := points[0].score, points[1].score
	for _, c := range []struct {
		lon, lat float64
		score    float64
		want     string
	}{
		{15, 37, palermo, "190.44242984775784"},
		{15, 37, catania, "56.441257870158204"},
	} {
		lon, lat := Position(c.score)
		if got := strconv.FormatFloat(Distance(c.lon, c.lat, lon, lat)/1000, 'g', 17, 64); got != c.want {
			t.Errorf("distance from %v,%v: %s, want %s", c.lon, c.lat, got, c.want)
		}
	}
	lon1, lat1 := Position(catania)
	lon2, lat2 := Position(palermo)
	if got := strconv.FormatFloat(Distance(lon1, lat1, lon2, lat2)/1000, 'g', 17, 64); got != "166.27415156960032" {
		t.Errorf("catania-palermo: %s, want 166.27415156960032", got)
	}
}

func TestFormatDistance(t *testing.T) {
	for _, c := range []struct {
		d    float64
		want string
	}{{0, "0.0000"}, {0.00004, "0.0000"}, {0.0005, "0.0005"}, {1234567.89, "1234567.8900"}} {
		if got := FormatDistance(c.d); got != c.want {
			t.Errorf("FormatDistance(%v) = %s, want %s", c.d, got, c.want)
		}
	}
}

func TestSearch(t *testing.T) {
	var members []zset.Member
	for _, p := range points {
		members = append(members, zset.Member{Name: []byte(p.name), Score: p.score})
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Score < members[j].Score })
	km := 1000.0
	for _, c := range []struct {
		name  string
		shape Shape
		limit int
		want  []string // in Redis's order of discovery, with distances in the shape's unit
	}{
		{"radius 200 km", Shape{Lon: 15, Lat: 37, Radius: 200, UnitMeters: km}, 0, []string{"palermo 190.4424", "catania 56.4413"}},
		{"radius 100 km", Shape{Lon: 15, Lat: 37, Radius: 100, UnitMeters: km}, 0, []string{"catania 56.4413"}},
		{"box 300x100 km", Shape{Lon: 14, Lat: 38, Box: true, Width: 300, Height: 100, UnitMeters: km}, 0, []string{"palermo 57.3862"}},
		// The whole earth: the north-east corner's score is past every box, as in Redis.
		{"radius 50000 km", Shape{Radius: 50000, UnitMeters: km}, 0, []string{"origin 0.0003", "palermo 4454.7332", "catania 4449.6961", "oakland 12786.1003", "sw 10560.8118", "tiny 0.0157"}},
		{"any 2", Shape{Radius: 50000, UnitMeters: km}, 2, []string{"origin 0.0003", "palermo 4454.7332"}},
		{"nothing", Shape{Lon: 100, Lat: 10, Radius: 1, UnitMeters: km}, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, f := range Search(members, c.shape, c.limit) {
				got = append(got, string(f.Name)+" "+FormatDistance(f.Dist_m/c.shape.UnitMeters))
			}
			if len(got) != len(c.want) {
				t.Fatalf("found %q, want %q", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("found %q, want %q", got, c.want)
					break
				}
			}
		})
	}
}
