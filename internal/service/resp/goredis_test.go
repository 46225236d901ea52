package resp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/data/coord"
)

// TestGoRedisSeesRedisReplies drives the front end with go-redis over a real socket, in
// RESP2 and RESP3: its parsers must read kura's replies as they read Redis's, and the
// error texts must be Redis's.
func TestGoRedisSeesRedisReplies(t *testing.T) {
	const valueMax = 1 << 16
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+protocol)), func(t *testing.T) {
			_, _, addr := startServer(t, Config{Limits: coord.Limits{KeyBytesMax: 1 << 10, ValueBytesMax: valueMax}})
			// One connection, so that every command below shares it.
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 1, ClientName: "suite"})
			defer rdb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}

			must(rdb.Set(ctx, "k", "hello", 0).Err())
			if n, err := rdb.StrLen(ctx, "k").Result(); err != nil || n != 5 {
				t.Errorf("STRLEN = %d, %v", n, err)
			}
			if s, err := rdb.GetRange(ctx, "k", -3, -1).Result(); err != nil || s != "llo" {
				t.Errorf("GETRANGE = %q, %v", s, err)
			}
			if s, err := rdb.Do(ctx, "SUBSTR", "k", 0, 1).Text(); err != nil || s != "he" {
				t.Errorf("SUBSTR = %q, %v", s, err)
			}
			if s, err := rdb.Type(ctx, "k").Result(); err != nil || s != "string" {
				t.Errorf("TYPE = %q, %v", s, err)
			}
			if s, err := rdb.Type(ctx, "nokey").Result(); err != nil || s != "none" {
				t.Errorf("TYPE of a missing key = %q, %v", s, err)
			}
			if n, err := rdb.Unlink(ctx, "k", "nokey").Result(); err != nil || n != 1 {
				t.Errorf("UNLINK = %d, %v", n, err)
			}
			if now, err := rdb.Time(ctx).Result(); err != nil || time.Since(now).Abs() > time.Minute {
				t.Errorf("TIME = %v, %v", now, err)
			}

			id, err := rdb.ClientID(ctx).Result()
			must(err)
			info, err := rdb.ClientInfo(ctx).Result()
			must(err)
			if info.ID != id || info.Name != "suite" || info.LastCmd != "client|info" || info.Resp != protocol || info.LibName == "" {
				t.Errorf("CLIENT INFO parsed as %+v", info)
			}
			if list, err := rdb.ClientList(ctx).Result(); err != nil || !strings.Contains(list, "name=suite ") {
				t.Errorf("CLIENT LIST = %q, %v", list, err)
			}

			params, err := rdb.ConfigGet(ctx, "*max*").Result()
			must(err)
			if params["maxmemory"] != "0" || params["proto-max-bulk-len"] != "65536" || params["maxclients"] != "10000" {
				t.Errorf("CONFIG GET *max* = %v", params)
			}
			must(rdb.ConfigSet(ctx, "timeout", "300").Err())
			if params, err := rdb.ConfigGet(ctx, "timeout").Result(); err != nil || params["timeout"] != "300" {
				t.Errorf("CONFIG GET timeout = %v, %v", params, err)
			}
			must(rdb.ConfigResetStat(ctx).Err())
			sections, err := rdb.InfoMap(ctx, "cpu", "memory", "stats").Result()
			must(err)
			if sections["CPU"]["used_cpu_user"] == "" || sections["Memory"]["used_memory"] == "" || sections["Stats"]["keyspace_hits"] == "" {
				t.Errorf("INFO cpu memory stats = %v", sections)
			}

			for _, tt := range []struct {
				args []any
				want string
			}{
				{[]any{"SET", "k", "v", "EX", "0"}, "ERR invalid expire time in 'set' command"},
				{[]any{"SET", "k", "v", "EX", "soon"}, "ERR value is not an integer or out of range"},
				{[]any{"SET", "k", "v", "NX", "XX"}, "ERR syntax error"},
				{[]any{"GETRANGE", "k", "a", "1"}, "ERR value is not an integer or out of range"},
				{[]any{"STRLEN"}, "ERR wrong number of arguments for 'strlen' command"},
				{[]any{"CONFIG", "SET", "maxmemory", "1"}, "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config: kura keeps its data on disk and does not limit its memory"},
				{[]any{"CONFIG", "SET", "nosuch", "1"}, "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
				{[]any{"CLIENT", "NOSUCH"}, "ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP."},
				{[]any{"NOSUCH", "a"}, "ERR unknown command 'NOSUCH', with args beginning with: 'a' "},
				{[]any{"SET", "big", strings.Repeat("v", valueMax+1)}, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
			} {
				if err := rdb.Do(ctx, tt.args...).Err(); err == nil || err.Error() != tt.want {
					t.Errorf("%.40v: %v, want %q", tt.args, err, tt.want)
				}
			}
			// The refused value left the connection as it was: same id, still serving.
			if again, err := rdb.ClientID(ctx).Result(); err != nil || again != id {
				t.Errorf("after the refused value: CLIENT ID %d, %v; want %d on the same connection", again, err, id)
			}
			must(rdb.Set(ctx, "big", strings.Repeat("v", valueMax), 0).Err())
			if n, err := rdb.StrLen(ctx, "big").Result(); err != nil || n != valueMax {
				t.Errorf("STRLEN of a value at the limit = %d, %v", n, err)
			}
		})
	}
}
