package element

import (
	"bytes"
	"testing"

	"github.com/kuradb/kura/hlc"
)

func TestKeyLayout(t *testing.T) {
	long := bytes.Repeat([]byte("k"), 200) // a two-byte length
	tests := []struct {
		collection string
		kind       Kind
		suffix     string
		want       []byte
	}{
		{"cart", HashField, "qty", []byte("\x00\x01\x04carthqty")},
		{"", Reset, "", []byte("\x00\x01\x00r")},
		{"{u}x", SetAdd, "m\x00", []byte("\x00\x01\x04{u}xsm\x00")},
		{string(long), ListItem, "", append(append([]byte("\x00\x01\xc8\x01"), long...), 'l')},
	}
	for _, tt := range tests {
		got := Key([]byte(tt.collection), tt.kind, []byte(tt.suffix))
		if !bytes.Equal(got, tt.want) {
			t.Errorf("Key(%q, %q, %q) = %q, want %q", tt.collection, tt.kind, tt.suffix, got, tt.want)
		}
		if !bytes.HasPrefix(got, KindPrefix([]byte(tt.collection), tt.kind)) || !bytes.HasPrefix(got, Prefix([]byte(tt.collection))) {
			t.Errorf("Key(%q, %q, %q) = %q lacks its prefixes", tt.collection, tt.kind, tt.suffix, got)
		}
	}
}

func TestParseRefusesWhatKeyNeverWrites(t *testing.T) {
	tests := []struct {
		name string
		key  string
	}{
		{"empty", ""},
		{"an ordinary key", "user:42"},
		{"marker only", "\x00\x01"},
		{"another version", "\x00\x02\x01ah"},
		{"no kind", "\x00\x01\x04cart"},
		{"shorter than its length", "\x00\x01\x09cart"},
		{"overlong length", "\x00\x01\x84\x00carth"}, // 4 written in two bytes
		{"truncated length", "\x00\x01\x80"},
		{"length past 64 bits", "\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"},
	}
	for _, tt := range tests {
		if c, k, s, ok := Parse([]byte(tt.key)); ok {
			t.Errorf("%s: Parse(%q) = %q, %q, %q, true; want not an element key", tt.name, tt.key, c, k, s)
		}
		if IsKey([]byte(tt.key)) {
			t.Errorf("%s: IsKey(%q) = true", tt.name, tt.key)
		}
	}
	if key := Key([]byte("cart"), HashField, []byte("f")); !IsKey(key) {
		t.Errorf("IsKey(%q) = false for a key Key wrote", key)
	}
}

func TestResetValue(t *testing.T) {
	tests := []struct {
		name   string
		value  []byte
		wantAt hlc.Timestamp
		wantOK bool
	}{
		{"a point", ResetValue(0x0102030405060708), 0x0102030405060708, true},
		{"its bytes", []byte{1, 2, 3, 4, 5, 6, 7, 8}, 0x0102030405060708, true},
		{"empty", nil, 0, false},
		{"short", []byte{1, 2, 3, 4, 5, 6, 7}, 0, false},
		{"long", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, 0, false},
	}
	for _, tt := range tests {
		if at, ok := ParseResetValue(tt.value); at != tt.wantAt || ok != tt.wantOK {
			t.Errorf("%s: ParseResetValue(%x) = %d, %t; want %d, %t", tt.name, tt.value, at, ok, tt.wantAt, tt.wantOK)
		}
	}
}

// FuzzRoundTrip checks that Parse inverts Key, that a key Parse accepts is the one Key
// writes for its parts (one key per record), and that one collection's prefix is never
// a prefix of another's keys.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("cart"), byte(HashField), []byte("qty"), []byte("cart2"))
	f.Add([]byte(""), byte(Reset), []byte(""), []byte("\x00"))
	f.Add([]byte("{u}"), byte(SetAdd), []byte("\x00\x01\x03abc"), []byte("{u"))
	f.Fuzz(func(t *testing.T, collection []byte, kind byte, suffix []byte, other []byte) {
		key := Key(collection, Kind(kind), suffix)
		c, k, s, ok := Parse(key)
		if !ok || !bytes.Equal(c, collection) || k != Kind(kind) || !bytes.Equal(s, suffix) {
			t.Fatalf("Parse(Key(%q, %q, %q)) = %q, %q, %q, %v", collection, kind, suffix, c, k, s, ok)
		}
		if !bytes.Equal(other, collection) && bytes.HasPrefix(key, Prefix(other)) {
			t.Fatalf("Prefix(%q) = %q is a prefix of %q's key %q", other, Prefix(other), collection, key)
		}
		// Arbitrary bytes: whatever Parse accepts, Key writes back byte for byte.
		for _, data := range [][]byte{suffix, other, append([]byte{0x00, 0x01}, other...)} {
			if c, k, s, ok := Parse(data); ok && !bytes.Equal(Key(c, k, s), data) {
				t.Fatalf("Parse(%q) = %q, %q, %q, which Key writes as %q", data, c, k, s, Key(c, k, s))
			}
		}
	})
}

// TestPrefixEnd: the end of a collection's scan lies after each of its element keys and
// before the keys of every other collection that sort after them.
func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		collection string
		want       []byte
		inside     []byte // a key of the collection
		outside    []byte // the least key of a collection after it
	}{
		{"cart", []byte("\x00\x01\x04caru"), Key([]byte("cart"), HashField, []byte("\xff\xff")), Prefix([]byte("caru"))},
		{"a\xff", []byte("\x00\x01\x02b"), Key([]byte("a\xff"), ListItem, []byte("\xff")), Prefix([]byte("b\x00"))},
		{"\xff", []byte("\x00\x01\x02"), Key([]byte("\xff"), Reset, nil), Prefix([]byte("\x00\x00"))},
	}
	for _, tt := range tests {
		got := PrefixEnd([]byte(tt.collection))
		if !bytes.Equal(got, tt.want) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tt.collection, got, tt.want)
		}
		if bytes.Compare(tt.inside, got) >= 0 || bytes.Compare(tt.outside, got) < 0 {
			t.Errorf("PrefixEnd(%q) = %q: %q should be before it and %q not", tt.collection, got, tt.inside, tt.outside)
		}
	}
}

func TestTag(t *testing.T) {
	tests := []struct {
		name string
		a, b []byte
		same bool
	}{
		{"one add", Tag(7, "n1"), Tag(7, "n1"), true},
		{"two nodes, one timestamp", Tag(7, "n1"), Tag(7, "n2"), false},
		{"one node, two timestamps", Tag(7, "n1"), Tag(8, "n1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.a) != TagBytes || bytes.Equal(tt.a, tt.b) != tt.same {
				t.Fatalf("Tag = %x and %x, want %d bytes, equal %v", tt.a, tt.b, TagBytes, tt.same)
			}
			if at, ok := ParseTag(tt.a); !ok || at != 7 {
				t.Fatalf("ParseTag(%x) = %v, %v; want 7", tt.a, at, ok)
			}
		})
	}
	if _, ok := ParseTag(make([]byte, TagBytes-1)); ok {
		t.Fatal("ParseTag took 11 bytes")
	}
}
