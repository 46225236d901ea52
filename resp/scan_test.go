package resp

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kuradb/kura/coord"
)

// scanAll walks a SCAN to its end and returns the keys and the number of calls.
func scanAll(t *testing.T, c *client, options ...string) ([]string, int) {
	t.Helper()
	var keys []string
	cursor := "0"
	for calls := 1; ; calls++ {
		reply, ok := c.call(append([]string{"SCAN", cursor}, options...)...).([]any)
		if !ok || len(reply) != 2 {
			t.Fatalf("SCAN reply %v", reply)
		}
		cursor = reply[0].(string)
		for _, k := range reply[1].([]any) {
			keys = append(keys, k.(string))
		}
		if cursor == "0" {
			return keys, calls
		}
		if calls > 1000 {
			t.Fatal("SCAN does not end")
		}
	}
}

func TestScanWalksEveryKeyOnce(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	var users, all []string
	for i := range 57 {
		users = append(users, fmt.Sprintf("user:%03d", i))
	}
	all = append(all, users...)
	all = append(all, "item:1", "item:2", "zzz", "user;after", "key with space\nand newline")
	for _, k := range all {
		fake.data["default"][k] = []byte("v")
	}
	sort.Strings(all)
	c := dial(t, addr)

	tests := []struct {
		name      string
		options   []string
		want      []string
		callsWant int
	}{
		{"default count", nil, all, len(all)/scanCountDefault + 1},
		{"count 7", []string{"COUNT", "7"}, all, len(all)/7 + 1},
		{"match prefix", []string{"MATCH", "user:*", "COUNT", "20"}, users, len(users)/20 + 1},
		{"match inside", []string{"COUNT", "1000", "MATCH", "*:05?"}, users[50:57], 1},
		{"match nothing", []string{"MATCH", "nope*"}, nil, 1},
		{"type string", []string{"TYPE", "string", "COUNT", "100"}, all, 1},
		{"type hash", []string{"TYPE", "hash"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, calls := scanAll(t, c, tt.options...)
			if !reflect.DeepEqual(keys, tt.want) {
				t.Fatalf("keys %q, want %q", keys, tt.want)
			}
			if calls != tt.callsWant {
				t.Fatalf("%d calls, want %d", calls, tt.callsWant)
			}
		})
	}
}

func TestScanRefusesBadArguments(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	for i := range 20 {
		fake.data["default"][fmt.Sprint(i)] = nil
	}
	c := dial(t, addr)
	first := c.call("SCAN", "0").([]any)
	cursor := first[0].(string)
	if cursor == "0" {
		t.Fatal("a scan of 20 keys ended after 10")
	}
	tests := []struct {
		args []string
		want string
	}{
		{cmd("SCAN", "abc"), "ERR invalid cursor"},
		{cmd("SCAN", "12345"), "ERR invalid cursor: unknown to this node, expired, or from another keyspace"},
		{cmd("SCAN", "0", "COUNT", "0"), "ERR syntax error"},
		{cmd("SCAN", "0", "COUNT", "x"), "ERR value is not an integer or out of range"},
		{cmd("SCAN", "0", "MATCH"), "ERR syntax error"},
		{cmd("SCAN", "0", "LIMIT", "3"), "ERR syntax error"},
	}
	for _, tt := range tests {
		if got := c.call(tt.args...); got != replyError(tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, got, tt.want)
		}
	}
	// A cursor belongs to its keyspace.
	c.call("KURA.KEYSPACE", "other")
	if got := c.call("SCAN", cursor); got != replyError("ERR invalid cursor: unknown to this node, expired, or from another keyspace") {
		t.Errorf("cursor of another keyspace: %v", got)
	}
	// Any connection of the node may continue a scan.
	c.call("KURA.KEYSPACE", "default")
	next := dial(t, addr).call("SCAN", cursor).([]any)
	if len(next[1].([]any)) != 10 {
		t.Errorf("continuing on another connection: %v", next)
	}
}

func TestCursorTableForgetsTheOldest(t *testing.T) {
	table := newCursorTable(3)
	var cursors []uint64
	for i := range 10 {
		c := table.save(scanPosition{keyspace: "ks", lastKey: []byte{byte(i)}})
		if c == 0 || c >= 1<<63 {
			t.Fatalf("cursor %d: 0 is reserved and clients may parse cursors as signed", c)
		}
		cursors = append(cursors, c)
	}
	for i, c := range cursors {
		pos, ok := table.load(c)
		if want := i >= 7; ok != want {
			t.Fatalf("cursor %d known %v, want %v", i, ok, want)
		}
		if ok && pos.lastKey[0] != byte(i) {
			t.Fatalf("cursor %d resumes after %v", i, pos.lastKey)
		}
	}
	if len(table.byAge)-table.dropped != 3 || table.dropped > 3 {
		t.Fatalf("the age list keeps %d entries, %d dropped", len(table.byAge), table.dropped)
	}
}

func TestScanPagesAreCapped(t *testing.T) {
	tests := []struct {
		scanLimitMax int
		count        string
		wantPage     int
	}{
		{0, "5000", scanPageKeys},
		{7, "100", 7},
		{7, "3", 3},
	}
	for _, tt := range tests {
		_, fake, addr := startServer(t, Config{Limits: coord.Limits{ScanLimitMax: tt.scanLimitMax}})
		for i := range scanPageKeys + 10 {
			fake.data["default"][fmt.Sprintf("k%05d", i)] = nil
		}
		reply := dial(t, addr).call("SCAN", "0", "COUNT", tt.count).([]any)
		if got := len(reply[1].([]any)); got != tt.wantPage || reply[0] == "0" {
			t.Errorf("scan limit %d, COUNT %s: %d keys and cursor %v, want %d and a cursor", tt.scanLimitMax, tt.count, got, reply[0], tt.wantPage)
		}
		if got := dial(t, addr).call("DBSIZE"); got != int64(scanPageKeys+10) {
			t.Errorf("scan limit %d: DBSIZE = %v", tt.scanLimitMax, got)
		}
	}
}

func TestRange(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	for _, k := range []string{"a", "b", "c", "d"} {
		fake.data["default"][k] = []byte(strings.ToUpper(k))
	}
	tests := []struct {
		args []string
		want any
	}{
		{cmd("KURA.RANGE", "b", "d", "0"), []any{[]any{"b", "B"}, []any{"c", "C"}}},
		{cmd("KURA.RANGE", "", "", "3"), []any{[]any{"a", "A"}, []any{"b", "B"}, []any{"c", "C"}}},
		{cmd("KURA.RANGE", "c", "", "0"), []any{[]any{"c", "C"}, []any{"d", "D"}}},
		{cmd("KURA.RANGE", "x", "", "0"), []any{}},
		{cmd("KURA.RANGE", "a", "b", "-1"), replyError("ERR value is not an integer or out of range")},
		{cmd("KURA.RANGE", "a", "b"), replyError("ERR wrong number of arguments for 'kura.range' command")},
	}
	c := dial(t, addr)
	for _, tt := range tests {
		if got := c.call(tt.args...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestDBSizeCountsAcrossPages(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	c := dial(t, addr)
	if got := c.call("DBSIZE"); got != int64(0) {
		t.Fatalf("DBSIZE of an empty keyspace = %v", got)
	}
	for i := range 2*scanPageKeys + 5 {
		fake.data["default"][fmt.Sprintf("k%05d", i)] = nil
	}
	fake.takeOps()
	if got := c.call("DBSIZE"); got != int64(2*scanPageKeys+5) {
		t.Fatalf("DBSIZE = %v, want %d", got, 2*scanPageKeys+5)
	}
	if ops := fake.takeOps(); len(ops) != 3 {
		t.Fatalf("DBSIZE made %d scans, want 3: %q", len(ops), ops)
	}
}
