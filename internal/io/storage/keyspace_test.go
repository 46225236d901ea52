package storage

import (
	"bytes"
	"errors"
	"testing"
)

func TestValidateKeyspace(t *testing.T) {
	tests := []struct {
		ks      string
		wantErr bool
	}{
		{"users", false},
		{"a", false},
		{"a\x01b", false},
		{"\xff", false},
		{"", true},
		{"\x00", true},
		{"a\x00b", true},
		{"a\x00", true},
	}
	for _, tt := range tests {
		err := validateKeyspace(tt.ks)
		if gotErr := errors.Is(err, ErrInvalidKeyspace); gotErr != tt.wantErr {
			t.Errorf("validateKeyspace(%q) = %v, want ErrInvalidKeyspace: %t", tt.ks, err, tt.wantErr)
		}
	}
}

func TestKeyspaceBoundsHoldOnlyOwnKeys(t *testing.T) {
	tests := []struct {
		ks      string
		userKey []byte
		inside  bool
	}{
		{"a", nil, true},
		{"a", []byte{0}, true},
		{"a", []byte{0xff, 0xff}, true},
		{"a", []byte("zzz"), true},
		{"ab", nil, false},
		{"a\x01", nil, false},
		{"\xff", []byte("x"), false},
		{"A", []byte("x"), false},
	}
	lower, upper := keyspaceBounds("a")
	for _, tt := range tests {
		key := encodeKey(tt.ks, tt.userKey)
		inside := bytes.Compare(key, lower) >= 0 && bytes.Compare(key, upper) < 0
		if inside != tt.inside {
			t.Errorf("key %q of keyspace %q inside keyspace \"a\" = %t, want %t", tt.userKey, tt.ks, inside, tt.inside)
		}
	}
}

func TestSplitKey(t *testing.T) {
	tests := []struct {
		name        string
		encoded     []byte
		wantKs      string
		wantUserKey []byte
		wantErr     bool
	}{
		{"plain", encodeKey("users", []byte("alice")), "users", []byte("alice"), false},
		{"user key holds separator", encodeKey("k", []byte{0, 1, 0}), "k", []byte{0, 1, 0}, false},
		{"empty user key", encodeKey("k", nil), "k", []byte{}, false},
		{"no separator", []byte("users"), "", nil, true},
		{"empty keyspace", []byte("\x00alice"), "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks, userKey, err := splitKey(tt.encoded)
			if gotErr := errors.Is(err, ErrCorrupt); gotErr != tt.wantErr {
				t.Fatalf("splitKey(%q) error = %v, want ErrCorrupt: %t", tt.encoded, err, tt.wantErr)
			}
			if ks != tt.wantKs || !bytes.Equal(userKey, tt.wantUserKey) {
				t.Errorf("splitKey(%q) = %q, %q, want %q, %q", tt.encoded, ks, userKey, tt.wantKs, tt.wantUserKey)
			}
		})
	}
}
