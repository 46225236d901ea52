package resp

import "testing"

// TestGeoCommands: the geo commands answer as redis-server 7.0.15 answers the same
// conversation (its replies, recorded), options, errors and their order included; then
// what is kura's own: a geo set emptied by ZREM is searched as the missing key Redis
// would have (a STORE to another hash tag: TestWritesAcrossHashTags).
func TestGeoCommands(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	converse(t, addr, []step{
		{cmd("GEOADD", "g{t}", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"), ":2\r\n"},
		{cmd("GEOADD", "g{t}", "CH", "13.361389", "38.115556", "Palermo", "15", "37", "Catania"), ":1\r\n"},
		{cmd("GEOADD", "g{t}", "NX", "1", "1", "Palermo", "2", "2", "new"), ":1\r\n"},
		{cmd("GEOADD", "g{t}", "XX", "CH", "15.087269", "37.502669", "Catania", "3", "3", "none"), ":1\r\n"},
		{cmd("GEOADD", "g{t}", "XX", "NX", "1", "1", "a"), "-ERR syntax error\r\n"},
		{cmd("GEOADD", "g{t}", "1", "1", "a", "2"), "-ERR syntax error\r\n"},
		{cmd("GEOADD", "g{t}", "200", "10", "a"), "-ERR invalid longitude,latitude pair 200.000000,10.000000\r\n"},
		{cmd("GEOADD", "g{t}", "x", "10", "a"), "-ERR value is not a valid float\r\n"},
		{cmd("ZSCORE", "g{t}", "Palermo"), "$16\r\n3479099956230698\r\n"},
		{cmd("GEOPOS", "g{t}", "Palermo", "none"), "*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n*-1\r\n"},
		{cmd("GEOHASH", "g{t}", "Palermo", "Catania", "none"), "*3\r\n$11\r\nsqc8b49rny0\r\n$11\r\nsqdtr74hyu0\r\n$-1\r\n"},
		{cmd("GEODIST", "g{t}", "Palermo", "Catania"), "$11\r\n166274.1516\r\n"},
		{cmd("GEODIST", "g{t}", "Palermo", "Catania", "KM"), "$8\r\n166.2742\r\n"},
		{cmd("GEODIST", "g{t}", "Palermo", "none"), "$-1\r\n"},
		{cmd("GEODIST", "g{t}", "Palermo", "Catania", "yd"), "-ERR unsupported unit provided. please use M, KM, FT, MI\r\n"},
		{cmd("GEODIST", "g{t}", "Palermo", "Catania", "km", "x"), "-ERR syntax error\r\n"},
		{cmd("GEODIST", "nokey{t}", "a", "b"), "$-1\r\n"},
		{cmd("GEOSEARCH", "g{t}", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC", "WITHCOORD", "WITHDIST", "WITHHASH"), "*2\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n*4\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n:3479099956230698\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n"},
		{cmd("GEOSEARCH", "g{t}", "FROMMEMBER", "Palermo", "BYBOX", "400", "400", "km", "DESC"), "*2\r\n$7\r\nCatania\r\n$7\r\nPalermo\r\n"},
		{cmd("GEOSEARCH", "g{t}", "FROMMEMBER", "none", "BYRADIUS", "1", "km"), "-ERR could not decode requested zset member\r\n"},
		{cmd("GEOSEARCH", "g{t}", "FROMLONLAT", "15", "37", "COUNT", "1"), "-ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH\r\n"},
		{cmd("geosearch", "g{t}", "BYRADIUS", "1", "km", "ASC", "WITHDIST"), "-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch\r\n"},
		{cmd("GEOSEARCH", "g{t}", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"), "-ERR syntax error\r\n"},
		{cmd("GEOSEARCH", "g{t}", "FROMLONLAT", "15", "37", "BYBOX", "1", "x", "km"), "-ERR need numeric height\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "200", "km", "COUNT", "1"), "*1\r\n$7\r\nCatania\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "200", "km", "COUNT", "1", "ANY"), "*1\r\n$7\r\nPalermo\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "200", "km", "ANY"), "-ERR the ANY argument requires COUNT argument\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "200", "km", "COUNT", "0"), "-ERR COUNT must be > 0\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "-1", "km"), "-ERR radius cannot be negative\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "x", "km"), "-ERR need numeric radius\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "1", "yd"), "-ERR unsupported unit provided. please use M, KM, FT, MI\r\n"},
		{cmd("GEORADIUS_RO", "g{t}", "15", "37", "200", "km", "STORE", "d{t}"), "-ERR syntax error\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "200", "km", "STORE", "d{t}", "WITHDIST"), "-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options\r\n"},
		{cmd("GEOSEARCHSTORE", "d{t}", "g{t}", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "WITHDIST"), "-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options\r\n"},
		{cmd("GEORADIUS", "g{t}", "15", "37", "200", "km", "STOREDIST", "d{t}", "ASC"), ":2\r\n"},
		{cmd("ZRANGE", "d{t}", "0", "-1", "WITHSCORES"), "*4\r\n$7\r\nCatania\r\n$18\r\n56.441257870158204\r\n$7\r\nPalermo\r\n$18\r\n190.44242984775784\r\n"},
		{cmd("GEORADIUSBYMEMBER", "g{t}", "Palermo", "200", "km", "STORE", "d{t}", "DESC", "COUNT", "1"), ":1\r\n"},
		{cmd("ZRANGE", "d{t}", "0", "-1", "WITHSCORES"), "*2\r\n$7\r\nCatania\r\n$16\r\n3479447370796909\r\n"},
		{cmd("GEOSEARCHSTORE", "d{t}", "g{t}", "FROMMEMBER", "Catania", "BYRADIUS", "200", "km", "STOREDIST"), ":2\r\n"},
		{cmd("ZRANGE", "d{t}", "0", "-1", "WITHSCORES"), "*4\r\n$7\r\nCatania\r\n$1\r\n0\r\n$7\r\nPalermo\r\n$18\r\n166.27415156960032\r\n"},
		{cmd("GEOSEARCHSTORE", "d{t}", "g{t}", "FROMLONLAT", "100", "10", "BYRADIUS", "1", "km"), ":0\r\n"},
		{cmd("EXISTS", "d{t}"), ":0\r\n"},
		{cmd("GEORADIUSBYMEMBER", "nokey{t}", "m", "abc", "km"), "*0\r\n"},
		{cmd("GEOSEARCH", "nokey{t}", "FROMMEMBER", "m", "BYRADIUS", "1", "km"), "*0\r\n"},
		{cmd("SET", "s{t}", "x"), "+OK\r\n"},
		{cmd("GEOPOS", "s{t}", "a"), wrongType},
		{cmd("GEOSEARCH", "s{t}", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"), wrongType},
		{cmd("GEOADD", "s{t}", "1", "1", "a"), wrongType},
		{cmd("ZREM", "g{t}", "Palermo", "Catania", "new"), ":3\r\n"},
		{cmd("GEORADIUSBYMEMBER", "g{t}", "Palermo", "200", "km"), "*0\r\n"},
		{cmd("GEOSEARCHSTORE", "d{t}", "g{t}", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"), ":0\r\n"},
	})
}

// TestGeoRESP3: coordinates are RESP3 doubles and a missing position or distance RESP3's
// null, as redis-server 7.0.15 answers; distances stay bulk strings.
func TestGeoRESP3(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	converse(t, addr, []step{
		{cmd("HELLO", "3"), "%7\r\n$6\r\nserver\r\n$4\r\nkura\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"},
		{cmd("GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"), ":2\r\n"},
		{cmd("GEOPOS", "g", "Palermo", "none"), "*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"},
		{cmd("GEODIST", "g", "Palermo", "none"), "_\r\n"},
		{cmd("GEODIST", "nokey", "a", "b"), "_\r\n"},
		{cmd("GEOHASH", "g", "none"), "*1\r\n_\r\n"},
		{cmd("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "WITHCOORD", "WITHDIST", "WITHHASH", "COUNT", "1"), "*1\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n"},
		{cmd("GEORADIUS_RO", "g", "15", "37", "200", "km", "WITHCOORD", "DESC"), "*2\r\n*2\r\n$7\r\nPalermo\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n*2\r\n$7\r\nCatania\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n"},
	})
}
