package resp

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/kuradb/kura/internal/core/collection/geo"
	"github.com/kuradb/kura/internal/core/collection/zset"
	"github.com/kuradb/kura/internal/core/lww"
)

// Geo sets (docs/redis-types.md): as in Redis, a geo set is a sorted set whose scores
// are 52-bit geohashes (package internal/core/collection/geo). GEOADD is ZADD of the points' scores,
// the reads read the sorted set's records, and the *STORE forms store a sorted set as
// ZUNIONSTORE does; ZRANGE, ZREM and the rest serve geo sets as any sorted set.

// Redis's replies of the geo commands.
const (
	errGeoUnit      = "ERR unsupported unit provided. please use M, KM, FT, MI"
	errGeoMember    = "ERR could not decode requested zset member"
	errGeoNegative  = "ERR radius cannot be negative"
	errGeoBox       = "ERR height or width cannot be negative"
	errGeoCount     = "ERR COUNT must be > 0"
	errGeoAnyCount  = "ERR the ANY argument requires COUNT argument"
	errGeoStoreWith = "ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
)

// geoCommands are the geo commands of the table.
func geoCommands() []*command {
	read := []string{"readonly"}
	write := []string{"write", "denyoom"}
	key1 := func(name string, arity int, flags []string, run func(*conn, [][]byte)) *command {
		return &command{name: name, arity: arity, flags: flags, firstKey: 1, lastKey: 1, keyStep: 1, run: run}
	}
	search := func(form geoSearchForm, readOnly bool) func(*conn, [][]byte) {
		return func(c *conn, args [][]byte) { geoSearchCommand(c, args, form, readOnly) }
	}
	return []*command{
		key1("geoadd", -5, write, geoaddCommand),
		key1("geopos", -2, read, geoposCommand),
		key1("geohash", -2, read, geohashCommand),
		key1("geodist", -4, read, geodistCommand),
		key1("geosearch", -7, read, search(geoSearch, false)),
		{name: "geosearchstore", arity: -8, flags: write, firstKey: 1, lastKey: 2, keyStep: 1, run: search(geoSearchStore, false)},
		// Their STORE keys move with the arguments (movablekeys, from the key specs).
		key1("georadius", -6, write, search(geoRadius, false)),
		key1("georadius_ro", -6, read, search(geoRadius, true)),
		key1("georadiusbymember", -5, write, search(geoRadiusByMember, false)),
		key1("georadiusbymember_ro", -5, read, search(geoRadiusByMember, true)),
	}
}

// geoaddCommand is GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD of
// each member at its point's score, as Redis runs it, after Redis's checks.
func geoaddCommand(c *conn, args [][]byte) {
	i := 2
	var nx, xx bool
options:
	for ; i < len(args); i++ {
		switch upper(args[i]) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "CH":
		default:
			break options
		}
	}
	if (len(args)-i)%3 != 0 || (nx && xx) {
		c.w.Error(errSyntax)
		return
	}
	zadd := append([][]byte{[]byte("zadd")}, args[1:i]...)
	for ; i < len(args); i += 3 {
		lon, lat, ok := c.parseLonLat(args[i], args[i+1])
		if !ok {
			return
		}
		score, _ := geo.Score(lon, lat)
		zadd = append(zadd, strconv.AppendFloat(nil, score, 'f', -1, 64), args[i+2])
	}
	zaddCommand(c, zadd)
}

// parseLonLat reads a point's longitude and latitude, answering Redis's error for a
// number that is not one or a point outside the indexed limits. ok is false when the
// reply is written.
func (c *conn) parseLonLat(lonArg, latArg []byte) (lon, lat float64, ok bool) {
	lon, okLon := zset.ParseScore(lonArg)
	lat, okLat := zset.ParseScore(latArg)
	switch {
	case !okLon || !okLat:
		c.w.Error(errNotFloat)
		return 0, 0, false
	case lon < geo.LonMin || lon > geo.LonMax || lat < geo.LatMin || lat > geo.LatMax:
		c.w.Error(fmt.Sprintf("ERR invalid longitude,latitude pair %s,%s", cFloat(lon), cFloat(lat)))
		return 0, 0, false
	}
	return lon, lat, true
}

// cFloat writes f as C's printf %f does.
func cFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// readScores reads the scores of members of sorted set key: found false for a member
// it does not hold. exists is false for a missing key; ok false when the reply is
// written (an error, WRONGTYPE).
func (c *conn) readScores(key []byte, members [][]byte) (scores []float64, found []bool, exists, ok bool) {
	keys := make([][]byte, len(members))
	for i, name := range members {
		keys[i] = zset.MemberKey(key, name)
	}
	coll, results, ok := c.readElements(key, lww.SortedSet, keys)
	if !ok {
		return nil, nil, false, false
	}
	scores, found = make([]float64, len(results)), make([]bool, len(results))
	for i, r := range results {
		if r.Found {
			scores[i], found[i] = zset.ParseScoreValue(r.Record.Value)
		}
	}
	return scores, found, coll.Found, true
}

// geoposCommand is GEOPOS key member [...]: each member's [longitude, latitude], or a
// null array for a member the set does not hold.
func geoposCommand(c *conn, args [][]byte) {
	scores, found, _, ok := c.readScores(args[1], args[2:])
	if !ok {
		return
	}
	c.w.ArrayHeader(len(scores))
	for i, score := range scores {
		if !found[i] {
			c.nullArray()
			continue
		}
		c.writeCoordinates(geo.Position(score))
	}
}

// writeCoordinates answers a point as [longitude, latitude].
func (c *conn) writeCoordinates(lon, lat float64) {
	c.w.ArrayHeader(2)
	c.w.Double(geo.FormatCoordinate(lon))
	c.w.Double(geo.FormatCoordinate(lat))
}

// geohashCommand is GEOHASH key member [...]: each member's standard 11-character
// geohash, or null.
func geohashCommand(c *conn, args [][]byte) {
	scores, found, _, ok := c.readScores(args[1], args[2:])
	if !ok {
		return
	}
	c.w.ArrayHeader(len(scores))
	for i, score := range scores {
		if found[i] {
			c.w.BulkString(geo.Hash(score))
		} else {
			c.w.Null()
		}
	}
}

// geodistCommand is GEODIST key member1 member2 [M|KM|FT|MI]: the distance between the
// two members' points, or null when either is missing.
func geodistCommand(c *conn, args [][]byte) {
	unit := 1.0
	switch {
	case len(args) == 5:
		var ok bool
		if unit, ok = geo.Unit(args[4]); !ok {
			c.w.Error(errGeoUnit)
			return
		}
	case len(args) > 5:
		c.w.Error(errSyntax)
		return
	}
	scores, found, _, ok := c.readScores(args[1], args[2:4])
	switch {
	case !ok:
	case !found[0] || !found[1]:
		c.w.Null()
	default:
		lon1, lat1 := geo.Position(scores[0])
		lon2, lat2 := geo.Position(scores[1])
		c.w.BulkString(geo.FormatDistance(geo.Distance(lon1, lat1, lon2, lat2) / unit))
	}
}

// geoSearchForm is which search command runs: where its center and shape come from.
type geoSearchForm int

const (
	// geoRadius is GEORADIUS[_RO] key longitude latitude radius unit [options].
	geoRadius geoSearchForm = iota
	// geoRadiusByMember is GEORADIUSBYMEMBER[_RO] key member radius unit [options].
	geoRadiusByMember
	// geoSearch is GEOSEARCH key FROMMEMBER|FROMLONLAT ... BYRADIUS|BYBOX ... [options].
	geoSearch
	// geoSearchStore is GEOSEARCHSTORE dst src ..., GEOSEARCH's arguments after dst.
	geoSearchStore
)

// geoSearchCommand is the search commands (geoSearchForm), readOnly for the _RO forms
// that take no STORE: the members within a radius or a box of a point or of a member,
// found as Redis finds them (geo.Search), sorted by distance on ASC or DESC (or COUNT),
// at most COUNT of them (with ANY, the first COUNT found), answered with WITHDIST,
// WITHHASH and WITHCOORD, or stored in a sorted set with STORE, STOREDIST (the distances
// as scores) or GEOSEARCHSTORE. Redis's parsing and errors, in its order: the source is
// read first, a member's point found as its argument is parsed.
func geoSearchCommand(c *conn, args [][]byte, form geoSearchForm, readOnly bool) {
	src, base := args[1], 2
	var dst []byte
	if form == geoSearchStore {
		dst, src, base = args[1], args[2], 3
	}
	members, ok := c.readZset(src)
	if !ok {
		return
	}
	// An emptied sorted set keeps its header in kura (docs/redis-types.md); Redis would
	// have no key.
	exists := len(members) > 0
	var shape geo.Shape
	searches := form == geoSearch || form == geoSearchStore
	switch {
	case form == geoRadius:
		base = 6
		if shape.Lon, shape.Lat, ok = c.parseLonLat(args[2], args[3]); !ok {
			return
		}
		if shape.Radius, shape.UnitMeters, ok = c.parseRadius(args[4], args[5]); !ok {
			return
		}
	case form == geoRadiusByMember && exists:
		base = 5
		if shape.Lon, shape.Lat, ok = c.memberPoint(members, args[2]); !ok {
			return
		}
		if shape.Radius, shape.UnitMeters, ok = c.parseRadius(args[3], args[4]); !ok {
			return
		}
	case form == geoRadiusByMember:
		// Without the key, the arguments are parsed for the reply's form alone.
		base = 5
	}
	var withDist, withHash, withCoord, anyFound, storeDist, fromMember, fromLonLat, byRadius, byBox bool
	order := 0 // 1 ascending, -1 descending, 0 as found
	count := int64(0)
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		left := len(rest) - 1 - i
		switch word := upper(rest[i]); {
		case word == "WITHDIST":
			withDist = true
		case word == "WITHHASH":
			withHash = true
		case word == "WITHCOORD":
			withCoord = true
		case word == "ANY":
			anyFound = true
		case word == "ASC":
			order = 1
		case word == "DESC":
			order = -1
		case word == "COUNT" && left >= 1:
			if count, ok = parseInt(rest[i+1]); !ok {
				c.w.Error(errNotInt)
				return
			}
			if count <= 0 {
				c.w.Error(errGeoCount)
				return
			}
			i++
		case (word == "STORE" || word == "STOREDIST") && left >= 1 && !readOnly && !searches:
			dst, storeDist = rest[i+1], word == "STOREDIST"
			i++
		case word == "STOREDIST" && form == geoSearchStore:
			storeDist = true
		case word == "FROMMEMBER" && left >= 1 && searches && !fromLonLat:
			if exists {
				if shape.Lon, shape.Lat, ok = c.memberPoint(members, rest[i+1]); !ok {
					return
				}
			}
			fromMember = true
			i++
		case word == "FROMLONLAT" && left >= 2 && searches && !fromMember:
			if shape.Lon, shape.Lat, ok = c.parseLonLat(rest[i+1], rest[i+2]); !ok {
				return
			}
			fromLonLat = true
			i += 2
		case word == "BYRADIUS" && left >= 2 && searches && !byBox:
			if shape.Radius, shape.UnitMeters, ok = c.parseRadius(rest[i+1], rest[i+2]); !ok {
				return
			}
			byRadius = true
			i += 2
		case word == "BYBOX" && left >= 3 && searches && !byRadius:
			if shape.Width, shape.Height, shape.UnitMeters, ok = c.parseBox(rest[i+1], rest[i+2], rest[i+3]); !ok {
				return
			}
			shape.Box, byBox = true, true
			i += 3
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	storing := dst != nil
	switch {
	case storing && (withDist || withHash || withCoord):
		what := "STORE option in GEORADIUS"
		if form == geoSearchStore {
			what = "GEOSEARCHSTORE"
		}
		c.w.Error(fmt.Sprintf(errGeoStoreWith, what))
		return
	case searches && !fromMember && !fromLonLat:
		c.w.Error(fmt.Sprintf("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %s", args[0]))
		return
	case searches && !byRadius && !byBox:
		c.w.Error(fmt.Sprintf("ERR exactly one of BYRADIUS and BYBOX can be specified for %s", args[0]))
		return
	case anyFound && count == 0:
		c.w.Error(errGeoAnyCount)
		return
	case storing && !c.sameSlot([][]byte{dst, src}):
		return
	case !exists && storing:
		c.storeNothing(dst)
		return
	case !exists:
		c.w.ArrayHeader(0)
		return
	}
	if count != 0 && order == 0 && !anyFound {
		order = 1
	}
	limit := 0
	if anyFound {
		limit = int(count)
	}
	found := geo.Search(members, shape, limit)
	if order != 0 {
		sort.SliceStable(found, func(i, j int) bool {
			if order > 0 {
				return found[i].Dist_m < found[j].Dist_m
			}
			return found[i].Dist_m > found[j].Dist_m
		})
	}
	if count != 0 && int64(len(found)) > count {
		found = found[:count]
	}
	if storing {
		stored := make([]zset.Member, len(found))
		for i, f := range found {
			stored[i] = f.Member
			if storeDist {
				stored[i].Score = f.Dist_m / shape.UnitMeters
			}
		}
		c.storeZset(dst, stored)
		return
	}
	options := btoi(withDist) + btoi(withHash) + btoi(withCoord)
	c.w.ArrayHeader(len(found))
	for _, f := range found {
		if options > 0 {
			c.w.ArrayHeader(options + 1)
		}
		c.w.Bulk(f.Name)
		if withDist {
			c.w.BulkString(geo.FormatDistance(f.Dist_m / shape.UnitMeters))
		}
		if withHash {
			c.w.Int(int64(f.Score))
		}
		if withCoord {
			c.writeCoordinates(f.Lon, f.Lat)
		}
	}
}

// memberPoint is the point of member of a geo set's members, answering Redis's error
// when the set does not hold it. ok is false when the reply is written.
func (c *conn) memberPoint(members []zset.Member, member []byte) (lon, lat float64, ok bool) {
	for _, m := range members {
		if bytes.Equal(m.Name, member) {
			lon, lat = geo.Position(m.Score)
			return lon, lat, true
		}
	}
	c.w.Error(errGeoMember)
	return 0, 0, false
}

// parseRadius reads a search's radius and unit. ok is false when the reply is written.
func (c *conn) parseRadius(radiusArg, unitArg []byte) (radius, unit float64, ok bool) {
	radius, ok = zset.ParseScore(radiusArg)
	switch {
	case !ok:
		c.w.Error("ERR need numeric radius")
		return 0, 0, false
	case radius < 0:
		c.w.Error(errGeoNegative)
		return 0, 0, false
	}
	if unit, ok = geo.Unit(unitArg); !ok {
		c.w.Error(errGeoUnit)
	}
	return radius, unit, ok
}

// parseBox reads a search's box, width, height and unit. ok is false when the reply is
// written.
func (c *conn) parseBox(widthArg, heightArg, unitArg []byte) (width, height, unit float64, ok bool) {
	if width, ok = zset.ParseScore(widthArg); !ok {
		c.w.Error("ERR need numeric width")
		return 0, 0, 0, false
	}
	if height, ok = zset.ParseScore(heightArg); !ok {
		c.w.Error("ERR need numeric height")
		return 0, 0, 0, false
	}
	if width < 0 || height < 0 {
		c.w.Error(errGeoBox)
		return 0, 0, 0, false
	}
	if unit, ok = geo.Unit(unitArg); !ok {
		c.w.Error(errGeoUnit)
	}
	return width, height, unit, ok
}
