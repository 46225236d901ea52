package erasure

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// parseAll parses every chunk of an encoding.
func parseAll(t testing.TB, raws [][]byte) []Chunk {
	t.Helper()
	chunks := make([]Chunk, len(raws))
	for i, raw := range raws {
		c, err := Parse(raw)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		chunks[i] = c
	}
	return chunks
}

// subset returns the chunks whose index bit is set in mask.
func subset(chunks []Chunk, mask uint) []Chunk {
	var out []Chunk
	for i, c := range chunks {
		if mask&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	return out
}

func TestAnyKChunksRebuildTheValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	codes := [][2]int{{2, 1}, {3, 2}, {4, 2}, {5, 3}, {6, 4}, {7, 3}, {8, 7}, {4, 4}}
	for _, mk := range codes {
		m, k := mk[0], mk[1]
		for _, length := range []int{0, 1, k - 1, k + 1, 1000, 10240} {
			t.Run(fmt.Sprintf("m=%d,k=%d,len=%d", m, k, length), func(t *testing.T) {
				code, err := New(m, k)
				if err != nil {
					t.Fatal(err)
				}
				value := make([]byte, length)
				for i := range value {
					value[i] = byte(rng.Uint32())
				}
				raws, err := code.Encode(value, 99)
				if err != nil {
					t.Fatal(err)
				}
				chunks := parseAll(t, raws)
				// Every subset of at least k chunks, in reverse order so that parity
				// chunks come first.
				for mask := uint(1); mask < 1<<m; mask++ {
					if bits.OnesCount(mask) < k {
						continue
					}
					given := subset(chunks, mask)
					for i, j := 0, len(given)-1; i < j; i, j = i+1, j-1 {
						given[i], given[j] = given[j], given[i]
					}
					got, err := code.Decode(given)
					if err != nil {
						t.Fatalf("chunks %b: %v", mask, err)
					}
					if !bytes.Equal(got, value) {
						t.Fatalf("chunks %b rebuilt %d bytes that differ from the value", mask, len(got))
					}
				}
			})
		}
	}
}

func TestDecodeRefusesTooFewOrMixedChunks(t *testing.T) {
	code, err := New(5, 3)
	if err != nil {
		t.Fatal(err)
	}
	older := parseAll(t, must(code.Encode([]byte("the older value"), 1)))
	newer := parseAll(t, must(code.Encode([]byte("the newer value"), 2)))
	longer := parseAll(t, must(code.Encode([]byte("a value of another length"), 2)))
	other, err := New(5, 2)
	if err != nil {
		t.Fatal(err)
	}
	otherCode := parseAll(t, must(other.Encode([]byte("the newer value"), 2)))
	tests := []struct {
		name   string
		chunks []Chunk
		want   error
	}{
		{"none", nil, ErrTooFewChunks},
		{"k-1", newer[:2], ErrTooFewChunks},
		{"two timestamps", []Chunk{newer[0], newer[1], older[2]}, ErrMixedChunks},
		{"two lengths", []Chunk{newer[0], newer[1], longer[2]}, ErrMixedChunks},
		{"another code", []Chunk{newer[0], newer[1], otherCode[2]}, ErrMixedChunks},
		{"an index twice", []Chunk{newer[0], newer[1], newer[1]}, ErrMixedChunks},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := code.Decode(tt.chunks); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	code, err := New(6, 4)
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("deterministic "), 100)
	a, b := must(code.Encode(value, 5)), must(code.Encode(value, 5))
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("chunk %d differs between two encodings of one write", i)
		}
	}
}

func TestNewValidatesTheCode(t *testing.T) {
	tests := []struct {
		m, k int
		ok   bool
	}{
		{2, 1, true}, {6, 4, true}, {4, 4, true}, {255, 200, true},
		{1, 0, false}, {3, 4, false}, {256, 4, false}, {0, 0, false},
	}
	for _, tt := range tests {
		c, err := New(tt.m, tt.k)
		if tt.ok != (err == nil) {
			t.Fatalf("New(%d, %d) err = %v, want ok %v", tt.m, tt.k, err, tt.ok)
		}
		if !tt.ok && !errors.Is(err, ErrInvalidCode) {
			t.Fatalf("New(%d, %d) err = %v, want ErrInvalidCode", tt.m, tt.k, err)
		}
		if tt.ok && (c.M() != tt.m || c.K() != tt.k) {
			t.Fatalf("New(%d, %d) is a (%d, %d) code", tt.m, tt.k, c.M(), c.K())
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The benchmarks give the CPU cost LDR adds per put (Encode) and per get (Decode) for the
// paper's 10 KB values: reading the k data chunks, and rebuilding when data chunks are
// missing and parity must stand in.
func BenchmarkEncode(b *testing.B) {
	for _, mk := range [][2]int{{6, 4}, {8, 2}, {8, 7}} {
		b.Run(fmt.Sprintf("m=%d,k=%d", mk[0], mk[1]), func(b *testing.B) {
			code := must(New(mk[0], mk[1]))
			value := make([]byte, 10240)
			b.SetBytes(int64(len(value)))
			for b.Loop() {
				if _, err := code.Encode(value, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, mk := range [][2]int{{6, 4}, {8, 2}, {8, 7}} {
		code := must(New(mk[0], mk[1]))
		value := make([]byte, 10240)
		chunks := parseAll(b, must(code.Encode(value, 1)))
		m, k := mk[0], mk[1]
		for _, tc := range []struct {
			name   string
			chunks []Chunk
		}{
			{"data chunks", chunks[:k]},
			{"parity stands in", chunks[m-k:]},
		} {
			b.Run(fmt.Sprintf("m=%d,k=%d/%s", m, k, tc.name), func(b *testing.B) {
				b.SetBytes(int64(len(value)))
				for b.Loop() {
					if _, err := code.Decode(tc.chunks); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
