package coord

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/lww"
)

func TestChunkKeysSortAsTheirUserKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// Short keys over a tiny alphabet that includes the escape bytes, so prefixes,
	// zero bytes and 0xFF meet often.
	alphabet := []byte{0x00, 0x01, 0xFF, 'a'}
	keys := map[string]bool{}
	for len(keys) < 300 {
		key := make([]byte, 1+rng.IntN(4))
		for i := range key {
			key[i] = alphabet[rng.IntN(len(alphabet))]
		}
		keys[string(key)] = true
	}
	var users []string
	var stored [][]byte
	for k := range keys {
		users = append(users, k)
		for _, i := range []int{0, 1, 255} {
			stored = append(stored, chunkKey([]byte(k), i))
		}
	}
	sort.Strings(users)
	sort.Slice(stored, func(i, j int) bool { return bytes.Compare(stored[i], stored[j]) < 0 })
	var order []string
	for _, ck := range stored {
		key, index, ok := parseChunkKey(ck)
		if !ok {
			t.Fatalf("chunk key %q does not parse", ck)
		}
		if !bytes.Equal(chunkKey(key, index), ck) {
			t.Fatalf("chunk key %q parses to (%q, %d), which encodes differently", ck, key, index)
		}
		if len(order) == 0 || order[len(order)-1] != string(key) {
			order = append(order, string(key))
		}
	}
	if fmt.Sprint(order) != fmt.Sprint(users) {
		t.Fatal("chunk keys in storage order do not list the user keys in order, each once")
	}
	// A bound splits chunk keys exactly at its key, so [bound(start), bound(end)) holds
	// the chunks of start <= key < end.
	for _, bound := range users[:20] {
		for _, key := range users {
			before := bytes.Compare(chunkKey([]byte(key), 7), chunkKeyBound([]byte(bound))) < 0
			if before != (key < bound) {
				t.Fatalf("chunk of %q sorts before bound %q: %v", key, bound, before)
			}
		}
	}
}

func TestParseChunkKeyRejectsOtherKeys(t *testing.T) {
	for _, raw := range []string{"", "plain", "a\x00", "a\x00\x02x", "a\x00\x01", "a\x00\x01\x02\x03"} {
		if _, _, ok := parseChunkKey([]byte(raw)); ok {
			t.Errorf("parseChunkKey(%q) accepted a key that is no chunk key", raw)
		}
	}
}

func TestChunkRequirementTable(t *testing.T) {
	code, err := erasure.New(6, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Chunks of one key: 4 in a (can rebuild alone), 2 in b (cannot).
	perDC := map[string]int{"a": 4, "b": 2}
	tests := []struct {
		level consistency.Level
		local string
		want  consistency.Requirement
	}{
		{consistency.Any, "a", consistency.Requirement{Total: 1, Hinted: true}},
		{consistency.One, "a", consistency.Requirement{Total: 4}},
		{consistency.Two, "a", consistency.Requirement{Total: 5}},
		{consistency.Quorum, "b", consistency.Requirement{Total: 5}},
		{consistency.LocalOne, "a", consistency.Requirement{Total: 4, PerDC: map[string]int{"a": 4}}},
		{consistency.LocalOne, "b", consistency.Requirement{Total: 4}},
		{consistency.LocalQuorum, "a", consistency.Requirement{Total: 4, PerDC: map[string]int{"a": 4}}},
		{consistency.LocalQuorum, "b", consistency.Requirement{Total: 5}},
		{consistency.EachQuorum, "b", consistency.Requirement{Total: 5, PerDC: map[string]int{"a": 4}}},
		{consistency.All, "b", consistency.Requirement{Total: 6, PerDC: map[string]int{"a": 4, "b": 2}}},
		{consistency.Level(99), "a", consistency.Requirement{Total: 7}},
	}
	for _, tt := range tests {
		got := chunkRequirement(tt.level, code, perDC, tt.local)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || got.Hinted != tt.want.Hinted {
			t.Errorf("%v from %s = %+v, want %+v", tt.level, tt.local, got, tt.want)
		}
	}
	// Quorums must overlap in k chunks: any two sets of ceil((m+k)/2) of m share k.
	for m := 2; m <= 8; m++ {
		for k := 1; k <= m; k++ {
			code, err := erasure.New(m, k)
			if err != nil {
				t.Fatal(err)
			}
			q := chunkRequirement(consistency.Quorum, code, map[string]int{"a": m}, "a").Total
			if 2*q-m < k || q > m {
				t.Errorf("(m=%d, k=%d): quorum %d overlaps in %d chunks", m, k, q, 2*q-m)
			}
		}
	}
}

// chunkRecord returns chunk index of value as its owner would store it.
func chunkRecord(t *testing.T, code *erasure.Code, value string, ts hlc.Timestamp, index int) lww.Record {
	t.Helper()
	chunks, err := code.Encode([]byte(value), uint64(ts))
	if err != nil {
		t.Fatal(err)
	}
	return lww.Record{Key: chunkKey([]byte("k"), index), Value: chunks[index], Timestamp: ts}
}

func TestChunkGatherServesTheNewestCompleteVersion(t *testing.T) {
	code, err := erasure.New(5, 3)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		index int
		rec   lww.Record
		found bool
	}
	old := func(i int) answer { return answer{i, chunkRecord(t, code, "old", 10, i), true} }
	mid := func(i int) answer { return answer{i, chunkRecord(t, code, "middle", 20, i), true} }
	tomb := func(i int) answer {
		return answer{i, lww.Record{Key: chunkKey([]byte("k"), i), Tombstone: true, Timestamp: 30}, true}
	}
	missing := func(i int) answer { return answer{index: i} }
	corrupt := func(i int) answer {
		a := mid(i)
		a.rec.Value = bytes.Clone(a.rec.Value)
		a.rec.Value[len(a.rec.Value)-1] ^= 0x40
		return a
	}
	misplaced := func(i int) answer { a := mid((i + 1) % 5); a.index = i; return a }
	tests := []struct {
		name      string
		answers   []answer
		deficit   int    // after all answers
		want      string // the value served; "" for not found
		wantTS    hlc.Timestamp
		stale     []int
		wantError bool
	}{
		{"k of one version", []answer{mid(0), mid(3), mid(4)}, 0, "middle", 20, nil, false},
		{"newer version wins over older chunks", []answer{old(0), mid(2), old(1), mid(3), mid(4)}, 0, "middle", 20, []int{0, 1}, false},
		{"newest incomplete: ask for the missing chunks", []answer{old(0), old(1), old(2), mid(3)}, 2, "old", 10, []int{}, false},
		{"corrupt chunk counts as missing", []answer{mid(0), corrupt(1), mid(2)}, 1, "", 0, nil, true},
		{"corrupt chunk is repaired", []answer{mid(0), corrupt(1), mid(2), mid(3)}, 0, "middle", 20, []int{1}, false},
		{"chunk in the wrong slot counts as missing", []answer{mid(0), misplaced(1), mid(2), mid(4)}, 0, "middle", 20, []int{1}, false},
		{"tombstone newer than the value deletes it", []answer{mid(0), mid(1), mid(2), tomb(3)}, 0, "", 30, []int{0, 1, 2}, false},
		{"nothing anywhere", []answer{missing(0), missing(1), missing(2)}, 0, "", 0, nil, false},
		{"a write in flight over nothing reads as absent", []answer{mid(0), missing(1), mid(2), missing(3), missing(4)}, 1, "", 0, nil, false},
		{"chunks of two writes, neither complete", []answer{old(0), mid(1), missing(2), missing(3), missing(4)}, 2, "", 0, nil, true},
		{"missing chunks are repaired", []answer{mid(0), missing(1), mid(2), mid(3)}, 0, "middle", 20, []int{1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newChunkGather(code)
			for _, a := range tt.answers {
				g.add(a.index, a.rec, a.found)
			}
			if got := g.deficit(); got != tt.deficit {
				t.Fatalf("deficit = %d, want %d", got, tt.deficit)
			}
			v, err := g.resolve()
			if tt.wantError {
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("resolve err = %v, want unavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && tt.wantTS == 0:
				if v != nil {
					t.Fatalf("resolved %+v, want nothing", v)
				}
				return
			case tt.want == "":
				if v == nil || !v.tombstone || v.timestamp != tt.wantTS {
					t.Fatalf("resolved %+v, want the tombstone at %d", v, tt.wantTS)
				}
			default:
				value, err := code.Decode(v.chunks)
				if err != nil || string(value) != tt.want || v.timestamp != tt.wantTS {
					t.Fatalf("resolved %q at %d (%v), want %q at %d", value, v.timestamp, err, tt.want, tt.wantTS)
				}
			}
			if got := g.stale(v.timestamp); fmt.Sprint(got) != fmt.Sprint(tt.stale) {
				t.Fatalf("stale = %v, want %v", got, tt.stale)
			}
		})
	}
}

func TestChunkGatherCountsADamagedChunkMissing(t *testing.T) {
	code, err := erasure.New(5, 3)
	if err != nil {
		t.Fatal(err)
	}
	chunk := chunkRecord(t, code, "a value", 20, 2)
	damaged := bytes.Clone(chunk.Value)
	damaged[erasure.HeaderBytes] ^= 1
	g := newChunkGather(code)
	g.add(2, lww.Record{Key: chunk.Key, Value: damaged, Timestamp: 20}, true)
	if g.corrupt != 1 || len(g.versions) != 0 {
		t.Fatalf("gather of a damaged chunk: %d corrupt, %d versions; want it counted damaged", g.corrupt, len(g.versions))
	}
}
