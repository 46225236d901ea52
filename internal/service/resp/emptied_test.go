package resp

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestEmptiedCollectionReadsAsAbsent empties a collection of each type by each of its
// removal commands, with go-redis in RESP2 and RESP3: the header stays, but every command
// takes the key for absent, as Redis, which deletes an emptied key, does
// (docs/redis-types.md, "An emptied collection reads as absent"). A write of the same
// type starts from empty, and a write of another type, or SET NX, creates the key anew.
func TestEmptiedCollectionReadsAsAbsent(t *testing.T) {
	type do func(ctx context.Context, rdb *redis.Client, key string) error
	fill := map[string]do{
		"hash": func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.HSet(ctx, key, "a", "1", "b", "2").Err()
		},
		"set": func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.SAdd(ctx, key, "a", "b").Err()
		},
		"zset": func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.ZAdd(ctx, key, redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err()
		},
		"list": func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.RPush(ctx, key, "a", "b").Err()
		},
	}
	// again writes one element of the type to an emptied key and reads the whole key
	// back: only that element, nothing of the emptied life.
	again := map[string]func(ctx context.Context, rdb *redis.Client, key string) (any, error){
		"hash": func(ctx context.Context, rdb *redis.Client, key string) (any, error) {
			if err := rdb.HSet(ctx, key, "c", "3").Err(); err != nil {
				return nil, err
			}
			return rdb.HGetAll(ctx, key).Result()
		},
		"set": func(ctx context.Context, rdb *redis.Client, key string) (any, error) {
			if err := rdb.SAdd(ctx, key, "c").Err(); err != nil {
				return nil, err
			}
			return rdb.SMembers(ctx, key).Result()
		},
		"zset": func(ctx context.Context, rdb *redis.Client, key string) (any, error) {
			if err := rdb.ZAdd(ctx, key, redis.Z{Score: 3, Member: "c"}).Err(); err != nil {
				return nil, err
			}
			return rdb.ZRange(ctx, key, 0, -1).Result()
		},
		"list": func(ctx context.Context, rdb *redis.Client, key string) (any, error) {
			if err := rdb.LPush(ctx, key, "c").Err(); err != nil {
				return nil, err
			}
			return rdb.LRange(ctx, key, 0, -1).Result()
		},
	}
	wantAgain := map[string]any{
		"hash": map[string]string{"c": "3"},
		"set":  []string{"c"},
		"zset": []string{"c"},
		"list": []string{"c"},
	}
	// otherType writes a collection of another type over the emptied key.
	otherType := map[string]do{
		"hash": func(ctx context.Context, rdb *redis.Client, key string) error { return rdb.RPush(ctx, key, "x").Err() },
		"set": func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.HSet(ctx, key, "x", "1").Err()
		},
		"zset": func(ctx context.Context, rdb *redis.Client, key string) error { return rdb.SAdd(ctx, key, "x").Err() },
		"list": func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.ZAdd(ctx, key, redis.Z{Score: 1, Member: "x"}).Err()
		},
	}
	wantOtherType := map[string]string{"hash": "list", "set": "hash", "zset": "set", "list": "zset"}

	tests := []struct {
		typ, name string
		empty     do
	}{
		{"hash", "HDEL", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.HDel(ctx, key, "a", "b").Err()
		}},
		{"set", "SREM", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.SRem(ctx, key, "a", "b").Err()
		}},
		{"set", "SPOP", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.SPopN(ctx, key, 2).Err()
		}},
		{"zset", "ZREM", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.ZRem(ctx, key, "a", "b").Err()
		}},
		{"zset", "ZPOPMIN", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.ZPopMin(ctx, key, 2).Err()
		}},
		{"zset", "ZREMRANGEBYSCORE", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.ZRemRangeByScore(ctx, key, "-inf", "+inf").Err()
		}},
		{"list", "LPOP", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.LPopCount(ctx, key, 2).Err()
		}},
		{"list", "RPOP", func(ctx context.Context, rdb *redis.Client, key string) error {
			if err := rdb.RPop(ctx, key).Err(); err != nil {
				return err
			}
			return rdb.RPop(ctx, key).Err()
		}},
		{"list", "LREM", func(ctx context.Context, rdb *redis.Client, key string) error {
			if err := rdb.LRem(ctx, key, 0, "a").Err(); err != nil {
				return err
			}
			return rdb.LRem(ctx, key, 0, "b").Err()
		}},
		{"list", "LTRIM", func(ctx context.Context, rdb *redis.Client, key string) error {
			return rdb.LTrim(ctx, key, 5, 1).Err()
		}},
	}
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+protocol)), func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.typ+"/"+tt.name, func(t *testing.T) {
					_, _, addr := startServer(t, Config{})
					rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 1})
					defer rdb.Close()
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					must := func(err error) {
						t.Helper()
						if err != nil {
							t.Fatal(err)
						}
					}
					must(rdb.Set(ctx, "str", "v", 0).Err())
					for _, key := range []string{"k", "k2", "k3"} {
						must(fill[tt.typ](ctx, rdb, key))
						must(tt.empty(ctx, rdb, key))
					}

					if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
						t.Errorf("EXISTS = %d, %v, want 0", n, err)
					}
					if s, err := rdb.Type(ctx, "k").Result(); err != nil || s != "none" {
						t.Errorf("TYPE = %q, %v, want none", s, err)
					}
					if keys, _, err := rdb.Scan(ctx, 0, "", 100).Result(); err != nil || !reflect.DeepEqual(keys, []string{"str"}) {
						t.Errorf("SCAN = %q, %v, want only str", keys, err)
					}
					if keys, err := rdb.Keys(ctx, "*").Result(); err != nil || !reflect.DeepEqual(keys, []string{"str"}) {
						t.Errorf("KEYS * = %q, %v, want only str", keys, err)
					}
					if d, err := rdb.PTTL(ctx, "k").Result(); err != nil || d != -2 {
						t.Errorf("PTTL = %v, %v, want -2 (no key)", d, err)
					}
					if ok, err := rdb.Expire(ctx, "k", time.Minute).Result(); err != nil || ok {
						t.Errorf("EXPIRE = %v, %v, want false (no key)", ok, err)
					}
					if n, err := rdb.RPushX(ctx, "k", "x").Result(); err != nil || n != 0 {
						t.Errorf("RPUSHX = %d, %v, want 0, nothing pushed", n, err)
					}
					if err := rdb.Rename(ctx, "k", "k4").Err(); err == nil || err.Error() != "ERR no such key" {
						t.Errorf("RENAME = %v, want ERR no such key", err)
					}
					if s, err := rdb.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
						t.Errorf("GET = %q, %v, want nil", s, err)
					}
					if n, err := rdb.Del(ctx, "k").Result(); err != nil || n != 0 {
						t.Errorf("DEL = %d, %v, want 0", n, err)
					}

					// Written again with its own type: from empty.
					got, err := again[tt.typ](ctx, rdb, "k")
					if err != nil || !reflect.DeepEqual(got, wantAgain[tt.typ]) {
						t.Errorf("written again: %v, %v, want %v", got, err, wantAgain[tt.typ])
					}
					// Another type, and a string by a transaction, create the key anew.
					if err := otherType[tt.typ](ctx, rdb, "k2"); err != nil {
						t.Errorf("a %s over it: %v", wantOtherType[tt.typ], err)
					}
					if s, err := rdb.Type(ctx, "k2").Result(); err != nil || s != wantOtherType[tt.typ] {
						t.Errorf("TYPE after a %s over it = %q, %v", wantOtherType[tt.typ], s, err)
					}
					if ok, err := rdb.SetNX(ctx, "k3", "s", 0).Result(); err != nil || !ok {
						t.Errorf("SET NX = %v, %v, want set", ok, err)
					}
					if s, err := rdb.Get(ctx, "k3").Result(); err != nil || s != "s" {
						t.Errorf("GET after SET NX = %q, %v", s, err)
					}
					keys, err := rdb.Keys(ctx, "*").Result()
					slices.Sort(keys)
					if want := []string{"k", "k2", "k3", "str"}; err != nil || !reflect.DeepEqual(keys, want) {
						t.Errorf("KEYS * = %q, %v, want %q", keys, err, want)
					}
				})
			}
		})
	}
}
