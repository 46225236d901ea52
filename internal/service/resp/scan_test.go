package resp

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
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
	fake.storeHeld("item:1", lww.Hash)
	sort.Strings(all)
	var strs []string
	for _, k := range all {
		if k != "item:1" {
			strs = append(strs, k)
		}
	}
	c := dial(t, addr)

	calls := func(count int) int { return (len(all) + count - 1) / count }
	tests := []struct {
		name      string
		options   []string
		want      []string
		callsWant int
	}{
		{"default count", nil, all, calls(scanCountDefault)},
		{"count 7", []string{"COUNT", "7"}, all, calls(7)},
		{"match prefix", []string{"MATCH", "user:*", "COUNT", "20"}, users, calls(20)},
		{"match inside", []string{"COUNT", "1000", "MATCH", "*:05?"}, users[50:57], 1},
		{"match nothing", []string{"MATCH", "nope*"}, nil, calls(scanCountDefault)},
		{"type string", []string{"TYPE", "string", "COUNT", "100"}, strs, 1},
		{"type hash", []string{"TYPE", "HASH"}, []string{"item:1"}, calls(scanCountDefault)},
		{"type list", []string{"TYPE", "list", "COUNT", "100"}, nil, 1},
		{"no such type", []string{"TYPE", "nosuch"}, nil, 1}, // no walk: no key has it
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, calls := scanAll(t, c, tt.options...)
			sort.Strings(keys)
			if !reflect.DeepEqual(keys, tt.want) {
				t.Fatalf("keys %q, want %q", keys, tt.want)
			}
			if calls != tt.callsWant {
				t.Fatalf("%d calls, want %d", calls, tt.callsWant)
			}
		})
	}
}

// TestScanCursorsNeedNoState resumes a scan on another connection (and so, since the
// cursor is a position every node knows, on another node), at any cursor a client sends.
func TestScanCursorsNeedNoState(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	for i := range 20 {
		fake.data["default"][fmt.Sprint(i)] = nil
	}
	first := dial(t, addr).call("SCAN", "0").([]any)
	cursor := first[0].(string)
	if cursor == "0" || len(first[1].([]any)) != 10 {
		t.Fatalf("SCAN 0 of 20 keys: %v", first)
	}
	fake.takeOps()
	next := dial(t, addr).call("SCAN", cursor).([]any)
	if next[0] != "0" || len(next[1].([]any)) != 10 {
		t.Errorf("continuing on another connection: %v, want the other 10 keys and the end", next)
	}
	// Besides the walk, the page's records are read again (an emptied collection's key is
	// left out): nothing the first call left.
	if ops := walks(fake.takeOps()); !reflect.DeepEqual(ops, []string{"scankeys default ONE"}) {
		t.Errorf("the second call walked %q, want one scankeys", ops)
	}
	// The largest cursor a client can send is a position like any other.
	if reply := dial(t, addr).call("SCAN", "18446744073709551615").([]any); reply[0] != "0" {
		t.Errorf("SCAN at the last position: %v", reply)
	}
}

func TestScanRefusesBadArguments(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	tests := []struct {
		args []string
		want string
	}{
		{cmd("SCAN", "abc"), "ERR invalid cursor"},
		{cmd("SCAN", "-1"), "ERR invalid cursor"},
		{cmd("SCAN", "18446744073709551616"), "ERR invalid cursor"},
		{cmd("SCAN", "0", "COUNT", "0"), "ERR syntax error"},
		{cmd("SCAN", "0", "COUNT", "x"), "ERR value is not an integer or out of range"},
		{cmd("SCAN", "0", "MATCH"), "ERR syntax error"},
		{cmd("SCAN", "0", "LIMIT", "3"), "ERR syntax error"},
		{cmd("KEYS"), "ERR wrong number of arguments for 'keys' command"},
	}
	for _, tt := range tests {
		if got := c.call(tt.args...); got != replyError(tt.want) {
			t.Errorf("%q: %v, want %q", tt.args, got, tt.want)
		}
	}
}

func TestScanCountIsCappedAtTheScanLimit(t *testing.T) {
	tests := []struct {
		scanLimitMax int
		count        string
		wantPage     int
	}{
		{0, "5000", 5000},
		{7, "100", 7},
		{7, "3", 3},
	}
	for _, tt := range tests {
		_, fake, addr := startServer(t, Config{Limits: coord.Limits{ScanLimitMax: tt.scanLimitMax}})
		for i := range 5010 {
			fake.data["default"][fmt.Sprintf("k%05d", i)] = nil
		}
		reply := dial(t, addr).call("SCAN", "0", "COUNT", tt.count).([]any)
		if got := len(reply[1].([]any)); got != tt.wantPage || reply[0] == "0" {
			t.Errorf("scan limit %d, COUNT %s: %d keys and cursor %v, want %d and a cursor", tt.scanLimitMax, tt.count, got, reply[0], tt.wantPage)
		}
	}
}

// walks are the key walks among a fake backend's ops: its reads of the keys a walk
// found (settle's) left out.
func walks(ops []string) []string {
	return slices.DeleteFunc(ops, func(op string) bool { return strings.HasPrefix(op, "get ") })
}

func TestKeys(t *testing.T) {
	_, fake, addr := startServer(t, Config{Limits: coord.Limits{ScanLimitMax: 100}})
	var all, users []string
	for i := range 250 {
		k := fmt.Sprintf("user:%03d", i)
		all, users = append(all, k), append(users, k)
	}
	all = append(all, "item:1", "a[b]")
	for _, k := range all {
		fake.data["default"][k] = nil
	}
	sort.Strings(all)
	c := dial(t, addr)
	tests := []struct {
		pattern string
		want    []string
	}{
		{"*", all},
		{"user:*", users},
		{"user:1?9", []string{"user:109", "user:119", "user:129", "user:139", "user:149", "user:159", "user:169", "user:179", "user:189", "user:199"}},
		{`a\[b\]`, []string{"a[b]"}},
		{"nope", nil},
	}
	for _, tt := range tests {
		fake.takeOps()
		reply := c.call("KEYS", tt.pattern).([]any)
		var got []string
		for _, k := range reply {
			got = append(got, k.(string))
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("KEYS %s = %q, want %q", tt.pattern, got, tt.want)
		}
		// Pages of the scan limit: three for 252 keys.
		if ops := walks(fake.takeOps()); len(ops) != 3 {
			t.Errorf("KEYS %s walked %d pages, want 3", tt.pattern, len(ops))
		}
	}
}

func TestDBSizeAndInfoCount(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	c := dial(t, addr)
	if got := c.call("DBSIZE"); got != int64(0) {
		t.Fatalf("DBSIZE of an empty keyspace = %v", got)
	}
	if info := c.call("INFO", "keyspace").(string); strings.Contains(info, "db0:") {
		t.Errorf("INFO shows db0 for an empty keyspace, as Redis does not:\n%s", info)
	}
	for i := range 1234 {
		fake.data["default"][fmt.Sprintf("k%05d", i)] = nil
	}
	fake.takeOps()
	if got := c.call("DBSIZE"); got != int64(1234) {
		t.Fatalf("DBSIZE = %v, want 1234", got)
	}
	if ops := fake.takeOps(); !reflect.DeepEqual(ops, []string{"countkeys default ONE"}) {
		t.Fatalf("DBSIZE made %q, want one count", ops)
	}
	if info := c.call("INFO", "keyspace").(string); !strings.Contains(info, "# Keyspace\r\ndb0:keys=1234,expires=617\r\ndefault:replication=") {
		t.Errorf("INFO keyspace:\n%s", info)
	}
	fake.data["default"]["broken"] = nil
	if got := c.call("DBSIZE"); got != replyError("UNAVAILABLE "+errBroken.Error()) {
		t.Errorf("DBSIZE of a keyspace that cannot be counted = %v", got)
	}
	if info := c.call("INFO", "keyspace").(string); strings.Contains(info, "db0:") || !strings.Contains(info, "default:replication=") {
		t.Errorf("INFO when the count fails:\n%s", info)
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

// stuckBackend holds every ScanKeys until its context ends, and reports that end.
type stuckBackend struct {
	*fakeBackend
	started chan struct{}
	ended   chan error
}

func (b *stuckBackend) ScanKeys(ctx context.Context, _ string, _ uint64, _ int, _ consistency.Level) ([][]byte, uint64, error) {
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return nil, 0, ctx.Err()
	case <-time.After(30 * time.Second):
		b.ended <- nil
		return nil, 0, nil
	}
}

// TestHangingUpStopsTheWork closes connections while their KEYS and SCAN wait on the
// backend: the work's context ends, abruptly closed or half-closed alike.
func TestHangingUpStopsTheWork(t *testing.T) {
	for _, hangUp := range []string{"close", "close write"} {
		t.Run(hangUp, func(t *testing.T) {
			stuck := &stuckBackend{fakeBackend: newFakeBackend(), started: make(chan struct{}, 1), ended: make(chan error, 1)}
			_, _, addr := startServer(t, Config{Backend: stuck})
			c := dial(t, addr)
			c.send(encode("KEYS", "*"))
			<-stuck.started
			if hangUp == "close" {
				c.nc.Close()
			} else if err := c.nc.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if err := <-stuck.ended; err != context.Canceled {
				t.Fatalf("the backend's work ended with %v, want it canceled", err)
			}
			// Other connections are not affected.
			other := dial(t, addr)
			other.do("+PONG\r\n", "PING")
		})
	}
}
