package resp

import (
	"fmt"
	"testing"
)

// TestIncrbyfloatAnswersAsRedis: each row sets the key (nil: deletes it), adds the
// increment and compares the raw reply. The replies were recorded from redis-server
// 7.0.15 on x86-64 (the 80-bit long double), running these rows one by one.
func TestIncrbyfloatAnswersAsRedis(t *testing.T) {
	tests := []struct {
		value     any // the key's value before, a string; nil for no key
		increment string
		want      string
	}{
		{nil, "10.5", "$4\r\n10.5\r\n"},
		{"10.5", "0.1", "$4\r\n10.6\r\n"},
		{"1.1", "2.2", "$3\r\n3.3\r\n"},
		{"0.1", "0.2", "$3\r\n0.3\r\n"},
		{"0", "+inf", "-ERR increment would produce NaN or Infinity\r\n"},
		{nil, "inf", "-ERR increment would produce NaN or Infinity\r\n"},
		{nil, "-inf", "-ERR increment would produce NaN or Infinity\r\n"},
		{nil, "Infinity", "-ERR increment would produce NaN or Infinity\r\n"},
		{nil, "INF", "-ERR increment would produce NaN or Infinity\r\n"},
		{nil, "infinit", "-ERR value is not a valid float\r\n"},
		{nil, "nan", "-ERR value is not a valid float\r\n"},
		{nil, "NaN", "-ERR value is not a valid float\r\n"},
		{nil, "1e400", "$401\r\n10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880\r\n"},
		{nil, "-1e400", "$402\r\n-10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880\r\n"},
		{nil, "1.2e4932", "-ERR value is not a valid float\r\n"},
		{nil, "1e5000", "-ERR value is not a valid float\r\n"},
		{nil, "1e-400", "$1\r\n0\r\n"},
		{nil, "1e-4950", "$1\r\n0\r\n"},
		{nil, "1e-5000", "-ERR value is not a valid float\r\n"},
		{nil, "0x10", "$2\r\n16\r\n"},
		{nil, "0x1.8p3", "$2\r\n12\r\n"},
		{nil, "0X.8P1", "$1\r\n1\r\n"},
		{nil, "0x", "-ERR value is not a valid float\r\n"},
		{nil, "0xp1", "-ERR value is not a valid float\r\n"},
		{nil, "1e", "-ERR value is not a valid float\r\n"},
		{nil, "1.", "$1\r\n1\r\n"},
		{nil, ".5", "$3\r\n0.5\r\n"},
		{nil, ".", "-ERR value is not a valid float\r\n"},
		{nil, "1.e5", "$6\r\n100000\r\n"},
		{nil, " 1", "-ERR value is not a valid float\r\n"},
		{nil, "1 ", "-ERR value is not a valid float\r\n"},
		{nil, "+-1", "-ERR value is not a valid float\r\n"},
		{nil, "-0", "$1\r\n0\r\n"},
		{nil, "1e+3", "$4\r\n1000\r\n"},
		{nil, "1_000", "-ERR value is not a valid float\r\n"},
		{nil, "0e999999999", "$1\r\n0\r\n"},
		{nil, "3.0e3", "$4\r\n3000\r\n"},
		{nil, "", "-ERR value is not a valid float\r\n"},
		{nil, "+", "-ERR value is not a valid float\r\n"},
		{"1e308", "1e308", "$309\r\n199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096\r\n"},
		{"5", "1e400", "$401\r\n10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880\r\n"},
		{"inf", "1", "-ERR increment would produce NaN or Infinity\r\n"},
		{"1e4932", "1e4932", "-ERR increment would produce NaN or Infinity\r\n"},
		{"0.024390243902439025", "-0.024390243902439025", "$1\r\n0\r\n"},
		{"abc", "1", "-ERR value is not a valid float\r\n"},
		{nil, "1e-20", "$1\r\n0\r\n"},
		{nil, "-1e-20", "$1\r\n0\r\n"},
		{nil, "1e-17", "$19\r\n0.00000000000000001\r\n"},
		{nil, "5e-18", "$1\r\n0\r\n"},
		{nil, "1.5e-17", "$19\r\n0.00000000000000002\r\n"},
		{nil, "0.30000000000000000555", "$19\r\n0.30000000000000001\r\n"},
		{nil, "123456789012345678901234567890", "$30\r\n123456789012345678899921813504\r\n"},
		{"1e400", "1", "$401\r\n10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880\r\n"},
		{nil, "0.1e-99999999999999999999", "-ERR value is not a valid float\r\n"},
		{nil, "1e99999999999999999999", "-ERR value is not a valid float\r\n"},
		{nil, "-1.5", "$4\r\n-1.5\r\n"},
		{"1", "-1", "$1\r\n0\r\n"},
	}
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	for _, tt := range tests {
		c.call("DEL", "k")
		if v, ok := tt.value.(string); ok {
			c.do("+OK\r\n", "SET", "k", v)
		}
		c.send(encode("INCRBYFLOAT", "k", tt.increment))
		got := c.reply()
		if err, ok := got.(replyError); ok {
			got = "-" + string(err) + "\r\n"
		} else {
			got = fmt.Sprintf("$%d\r\n%s\r\n", len(got.(string)), got)
		}
		if got != tt.want {
			t.Errorf("SET k %v, INCRBYFLOAT k %q = %q, want %q", tt.value, tt.increment, got, tt.want)
		}
	}
}

// TestParseLongDoubleAtTheEdgesOfTheRange: the numbers at the ends of the extended
// format's range, taken or refused as redis-server 7.0.15 on x86-64 took or refused
// them as INCRBYFLOAT's increment (taken: it answered a number).
func TestParseLongDoubleAtTheEdgesOfTheRange(t *testing.T) {
	tests := []struct {
		number string
		taken  bool
	}{
		{"0x1p-16445", true},                  // the smallest subnormal
		{"0x1p-16446", false},                 // half of it: a tie, rounded to even, zero
		{"0x1.8p-16446", true},                // rounded up to the smallest subnormal
		{"3.6e-4951", true},                   // just under the smallest subnormal, 3.645e-4951
		{"1.82e-4951", false},                 // just under half of it
		{"1.8e-4951", false},                  // under half of it
		{"0x1p16383", true},                   // the largest power of two
		{"0x1p16384", false},                  // past the largest value
		{"0x1.fffffffffffffffep16383", true},  // the largest value
		{"0x1.ffffffffffffffffp16383", false}, // rounded up past it
		{"1.1897314953572317650e4932", true},  // the largest value's decimal
		{"1.18973149535723176505e4932", true}, // rounded down to it
		{"1.2e4932", false},
	}
	for _, tt := range tests {
		if _, taken := parseLongDouble([]byte(tt.number)); taken != tt.taken {
			t.Errorf("parseLongDouble(%q) taken %v, want %v", tt.number, taken, tt.taken)
		}
	}
	largest, _ := parseLongDouble([]byte("0x1.fffffffffffffffep16383"))
	if got := string(formatLongDouble(largest)); got[:60] != "118973149535723176502126385303097020516906332229462420044032" || len(got) != 4933 {
		t.Errorf("the largest value formats as %.60s... (%d digits), want redis-server's 118973149535723176502126385303097020516906332229462420044032... (4933 digits)", got, len(got))
	}
}
