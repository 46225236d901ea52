// Package geo is the arithmetic of Redis's geo commands, with no I/O. A geo set is a
// sorted set (package internal/core/collection/zset) whose scores are 52-bit geohashes: a point's
// longitude and latitude, each cut into 26 bits, interleaved. A search around a point
// reads the score ranges of the geohash box holding the point and of its eight
// neighbours, at a precision chosen from the radius, and keeps the members within the
// shape. Every step is Redis 7.0's (src/geohash.c, geohash_helper.c, geo.c), in the same
// order of floating-point operations, so that scores, boxes, the members found and their
// order are Redis's; the resp front end serves the commands on top of it.
package geo

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kuradb/kura/internal/core/collection/zset"
)

// The limits of the coordinates Redis indexes (EPSG:900913: no pole).
const (
	LonMin = -180.0
	LonMax = 180.0
	LatMin = -85.05112878
	LatMax = 85.05112878
)

const (
	// stepMax is the precision of a stored score: 26 bits each of longitude and latitude.
	stepMax = 26
	// earthRadius_m is Redis's earth radius (the quadratic mean radius of WGS-84).
	earthRadius_m = 6372797.560856
	// mercatorMax_m is the bound the precision of a search is estimated against.
	mercatorMax_m = 20037726.37
)

// pi and degree are variables, not constants, so that degree is Redis's D_R, M_PI/180.0
// rounded from the double M_PI, not Go's exact constant division rounded once.
var (
	pi     = math.Pi
	degree = pi / 180
)

func degToRad(deg float64) float64 { return deg * degree }
func radToDeg(rad float64) float64 { return rad / degree }

// span is a range of a coordinate.
type span struct{ min, max float64 }

var (
	lonSpan = span{LonMin, LonMax}
	latSpan = span{LatMin, LatMax}
	// The standard geohash's latitude span, which GEOHASH's strings use.
	latSpanStandard = span{-90, 90}
)

// hash is a geohash of step bits per coordinate: latitude in the even bits, longitude
// in the odd ones. The zero hash (no bits, step 0) marks a neighbour a search skips.
type hash struct {
	bits uint64
	step uint
}

func (h hash) isZero() bool { return h.bits == 0 && h.step == 0 }

// area is the box of coordinates a hash covers.
type area struct{ lon, lat span }

// spread puts the 32 bits of v in the even bits of the result.
func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// squeeze gathers the even bits of v, the inverse of spread.
func squeeze(v uint64) uint32 {
	x := v & 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// encode hashes a point at step bits per coordinate within the spans given; ok is false
// for a point outside them or outside the indexed limits.
func encode(lons, lats span, lon, lat float64, step uint) (h hash, ok bool) {
	if lon > LonMax || lon < LonMin || lat > LatMax || lat < LatMin ||
		lat < lats.min || lat > lats.max || lon < lons.min || lon > lons.max {
		return hash{}, false
	}
	latOffset := (lat - lats.min) / (lats.max - lats.min)
	lonOffset := (lon - lons.min) / (lons.max - lons.min)
	latOffset *= float64(uint64(1) << step)
	lonOffset *= float64(uint64(1) << step)
	return hash{bits: spread(uint32(latOffset)) | spread(uint32(lonOffset))<<1, step: step}, true
}

// decode is the area of h within the spans given.
func decode(lons, lats span, h hash) area {
	latCell, lonCell := squeeze(h.bits), squeeze(h.bits>>1)
	cells := float64(uint64(1) << h.step)
	latScale, lonScale := lats.max-lats.min, lons.max-lons.min
	// The explicit conversions keep each product rounded before the sum, as Redis's
	// compiled C does: no fused multiply-add.
	return area{
		lat: span{lats.min + float64(float64(latCell)/cells*latScale), lats.min + float64(float64(latCell+1)/cells*latScale)},
		lon: span{lons.min + float64(float64(lonCell)/cells*lonScale), lons.min + float64(float64(lonCell+1)/cells*lonScale)},
	}
}

// center is the middle of a, held to the indexed limits.
func (a area) center() (lon, lat float64) {
	lon = min(max((a.lon.min+a.lon.max)/2, LonMin), LonMax)
	lat = min(max((a.lat.min+a.lat.max)/2, LatMin), LatMax)
	return lon, lat
}

// Score is the sorted-set score of a point: its 52-bit geohash. ok is false for a point
// outside the indexed limits (LonMin..LonMax, LatMin..LatMax).
func Score(lon, lat float64) (score float64, ok bool) {
	h, ok := encode(lonSpan, latSpan, lon, lat, stepMax)
	return float64(h.bits), ok
}

// scoreBits is a score's geohash bits, as Redis's (uint64_t) cast of the double takes
// them: a negative score wraps as its int64 does on x86-64.
func scoreBits(score float64) uint64 {
	if score < 0 {
		return uint64(int64(score))
	}
	return uint64(score)
}

// Position is the point a score stands for: the center of its geohash box.
func Position(score float64) (lon, lat float64) {
	return decode(lonSpan, latSpan, hash{bits: scoreBits(score), step: stepMax}).center()
}

// geohashAlphabet is the standard geohash's base 32.
const geohashAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// Hash is GEOHASH's string of a score: the point re-encoded in the standard geohash's
// latitude span (-90..90), 11 characters of which the last is always '0' (52 bits).
func Hash(score float64) string {
	lon, lat := Position(score)
	h, _ := encode(lonSpan, latSpanStandard, lon, lat, stepMax)
	var b [11]byte
	for i := range b {
		idx := 0
		if i < 10 {
			idx = int(h.bits>>(52-(i+1)*5)) & 0x1f
		}
		b[i] = geohashAlphabet[idx]
	}
	return string(b[:])
}

// latDistance is the distance in meters between two latitudes on a meridian.
func latDistance(lat1, lat2 float64) float64 {
	return earthRadius_m * math.Abs(degToRad(lat2)-degToRad(lat1))
}

// Distance is the haversine distance in meters between two points, on Redis's sphere.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degToRad(lon1), degToRad(lon2)
	v := sin((lon2r - lon1r) / 2)
	if v == 0 {
		return latDistance(lat1, lat2)
	}
	lat1r, lat2r := degToRad(lat1), degToRad(lat2)
	u := sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(cos(lat1r)*cos(lat2r)*v*v)
	return 2.0 * earthRadius_m * asin(math.Sqrt(a))
}

// Unit is the length in meters of a unit of GEODIST and the searches: m, km, ft or mi
// in any case. ok is false for another.
func Unit(name []byte) (meters float64, ok bool) {
	switch strings.ToLower(string(name)) {
	case "m":
		return 1, true
	case "km":
		return 1000, true
	case "ft":
		return 0.3048, true
	case "mi":
		return 1609.34, true
	}
	return 0, false
}

// FormatDistance writes a distance as Redis answers one: rounded to 4 decimals, ties to
// even, as llrint does.
func FormatDistance(d float64) string {
	scaled := int64(math.RoundToEven(d * 10000))
	sign := ""
	if scaled < 0 {
		sign, scaled = "-", -scaled
	}
	frac := strconv.FormatInt(scaled%10000, 10)
	return sign + strconv.FormatInt(scaled/10000, 10) + "." + strings.Repeat("0", 4-len(frac)) + frac
}

// FormatCoordinate writes a longitude or latitude as Redis answers one (its
// human-friendly long double): 17 decimals, their trailing zeros and a bare point cut,
// "-0" as "0".
func FormatCoordinate(c float64) string {
	s := strconv.FormatFloat(c, 'f', 17, 64)
	s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// Shape is the area of a search: a circle of Radius, or with Box a rectangle of Width
// by Height, around the point Lon, Lat; the lengths are in units of UnitMeters meters.
type Shape struct {
	Lon, Lat              float64
	Box                   bool
	Radius, Width, Height float64
	UnitMeters            float64
}

// bounds is the box of coordinates that holds the shape: minimum longitude, minimum
// latitude, maximum longitude, maximum latitude.
func (s Shape) bounds() (lonMin, latMin, lonMax, latMax float64) {
	height, width := s.UnitMeters*s.Radius, s.UnitMeters*s.Radius
	if s.Box {
		height, width = s.UnitMeters*(s.Height/2), s.UnitMeters*(s.Width/2)
	}
	latDelta := radToDeg(height / earthRadius_m)
	lonDeltaTop := radToDeg(width / earthRadius_m / cos(degToRad(s.Lat+latDelta)))
	lonDeltaBottom := radToDeg(width / earthRadius_m / cos(degToRad(s.Lat-latDelta)))
	// In the southern hemisphere the box is widest at its top, in the northern at its
	// bottom: Redis takes the other edge's width.
	lonDelta := lonDeltaTop
	if s.Lat < 0 {
		lonDelta = lonDeltaBottom
	}
	return s.Lon - lonDelta, s.Lat - latDelta, s.Lon + lonDelta, s.Lat + latDelta
}

// estimateStep is the precision of the geohash boxes a search of a radius at a
// latitude reads: the finest whose box with its neighbours holds the radius in most
// cases, coarser towards the poles.
func estimateStep(radius_m, lat float64) uint {
	if radius_m == 0 {
		return stepMax
	}
	step := 1
	for radius_m < mercatorMax_m {
		radius_m *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint(min(max(step, 1), stepMax))
}

// moveLon moves h one box east (d > 0) or west (d < 0), wrapping around.
func (h hash) moveLon(d int) hash {
	lon, lat := h.bits&0xaaaaaaaaaaaaaaaa, h.bits&0x5555555555555555
	fill := uint64(0x5555555555555555) >> (64 - h.step*2)
	if d > 0 {
		lon += fill + 1
	} else {
		lon = (lon | fill) - (fill + 1)
	}
	lon &= 0xaaaaaaaaaaaaaaaa >> (64 - h.step*2)
	return hash{bits: lon | lat, step: h.step}
}

// moveLat moves h one box north (d > 0) or south (d < 0), wrapping around.
func (h hash) moveLat(d int) hash {
	lon, lat := h.bits&0xaaaaaaaaaaaaaaaa, h.bits&0x5555555555555555
	fill := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - h.step*2)
	if d > 0 {
		lat += fill + 1
	} else {
		lat = (lat | fill) - (fill + 1)
	}
	lat &= 0x5555555555555555 >> (64 - h.step*2)
	return hash{bits: lon | lat, step: h.step}
}

// Neighbour indexes in the order a search reads the boxes: the center's box, then north,
// south, east, west, north-east, north-west, south-east, south-west.
const (
	boxCenter = iota
	boxNorth
	boxSouth
	boxEast
	boxWest
	boxNorthEast
	boxNorthWest
	boxSouthEast
	boxSouthWest
	boxCount
)

// neighbourhood is h and its eight neighbours, in search order.
func neighbourhood(h hash) [boxCount]hash {
	return [boxCount]hash{
		boxCenter:    h,
		boxNorth:     h.moveLat(1),
		boxSouth:     h.moveLat(-1),
		boxEast:      h.moveLon(1),
		boxWest:      h.moveLon(-1),
		boxNorthEast: h.moveLon(1).moveLat(1),
		boxNorthWest: h.moveLon(-1).moveLat(1),
		boxSouthEast: h.moveLon(1).moveLat(-1),
		boxSouthWest: h.moveLon(-1).moveLat(-1),
	}
}

// boxes are the geohash boxes a search of s reads, in search order, the useless ones
// zero: Redis's geohashCalculateAreasByShapeWGS84.
func (s Shape) boxes() [boxCount]hash {
	lonMin, latMin, lonMax, latMax := s.bounds()
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt(float64((s.Width/2)*(s.Width/2)) + float64((s.Height/2)*(s.Height/2)))
	}
	step := estimateStep(radius*s.UnitMeters, s.Lat)
	h, _ := encode(lonSpan, latSpan, s.Lon, s.Lat, step)
	boxes := neighbourhood(h)
	// Near an edge of its box, the shape may reach past a neighbour: one step coarser.
	north, south := decode(lonSpan, latSpan, boxes[boxNorth]), decode(lonSpan, latSpan, boxes[boxSouth])
	east, west := decode(lonSpan, latSpan, boxes[boxEast]), decode(lonSpan, latSpan, boxes[boxWest])
	if step > 1 && (north.lat.max < latMax || south.lat.min > latMin || east.lon.max < lonMax || west.lon.min > lonMin) {
		step--
		h, _ = encode(lonSpan, latSpan, s.Lon, s.Lat, step)
		boxes = neighbourhood(h)
	}
	if step >= 2 {
		center := decode(lonSpan, latSpan, h)
		drop := func(which ...int) {
			for _, i := range which {
				boxes[i] = hash{}
			}
		}
		if center.lat.min < latMin {
			drop(boxSouth, boxSouthWest, boxSouthEast)
		}
		if center.lat.max > latMax {
			drop(boxNorth, boxNorthEast, boxNorthWest)
		}
		if center.lon.min < lonMin {
			drop(boxWest, boxSouthWest, boxNorthWest)
		}
		if center.lon.max > lonMax {
			drop(boxEast, boxSouthEast, boxNorthEast)
		}
	}
	return boxes
}

// contains reports whether the point of score is within s, and its distance in meters
// from s's center.
func (s Shape) contains(score float64) (lon, lat, dist_m float64, ok bool) {
	lon, lat = Position(score)
	if !s.Box {
		dist_m = Distance(s.Lon, s.Lat, lon, lat)
		return lon, lat, dist_m, dist_m <= s.Radius*s.UnitMeters
	}
	// Latitude first, the cheaper distance.
	if latDistance(lat, s.Lat) > s.Height*s.UnitMeters/2 {
		return lon, lat, 0, false
	}
	if Distance(lon, lat, s.Lon, lat) > s.Width*s.UnitMeters/2 {
		return lon, lat, 0, false
	}
	return lon, lat, Distance(s.Lon, s.Lat, lon, lat), true
}

// Found is a member a search found: its score, position and distance in meters from
// the search's center.
type Found struct {
	zset.Member
	Lon, Lat, Dist_m float64
}

// Search finds the members of a geo set within s, members in Redis's order (score, then
// name: zset.Fold's), and answers them in Redis's order of discovery: box by box in
// search order, each box's members by score. With limit above 0 it stops at limit
// members (GEOSEARCH's ANY).
func Search(members []zset.Member, s Shape, limit int) []Found {
	var found []Found
	boxes := s.boxes()
	last := 0
	for i, h := range boxes {
		if h.isZero() {
			continue
		}
		// A huge radius can make neighbours the same box: skip a box equal to the last
		// one read. Redis's test leaves the center's box out of the comparison (its index
		// is 0, read as "none").
		if last != 0 && h == boxes[last] {
			continue
		}
		if limit > 0 && len(found) >= limit {
			break
		}
		found = appendInBox(found, members, h, s, limit)
		last = i
	}
	return found
}

// appendInBox appends the members of box h within s: the scores from h's bits to the
// next box's, aligned to 52 bits, the upper bound excluded.
func appendInBox(found []Found, members []zset.Member, h hash, s Shape, limit int) []Found {
	lo := float64(h.bits << (stepMax*2 - h.step*2))
	hi := float64((h.bits + 1) << (stepMax*2 - h.step*2))
	i := sort.Search(len(members), func(i int) bool { return members[i].Score >= lo })
	for ; i < len(members) && members[i].Score < hi; i++ {
		if lon, lat, dist, ok := s.contains(members[i].Score); ok {
			found = append(found, Found{Member: members[i], Lon: lon, Lat: lat, Dist_m: dist})
		}
		if limit > 0 && len(found) >= limit {
			break
		}
	}
	return found
}
