package ring

import (
	"encoding/binary"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// DefaultVnodes is how many tokens a node takes unless configured otherwise: enough to
// spread load within a few percent on small clusters while keeping the ring small.
const DefaultVnodes = 16

// TokensFor returns a node's vnode tokens, derived from its id alone (xxhash64 of the id
// followed by a big-endian counter), so every node computes the same ring from a member
// list without exchanging tokens. The derivation must never change between versions. The
// tokens are distinct; a collision with another node's tokens is possible in principle
// (about n²/2^65 for n tokens in all) and New reports it. It returns nil for vnodes <= 0.
func TokensFor(nodeID string, vnodes int) []Token {
	if vnodes <= 0 {
		return nil
	}
	input := make([]byte, len(nodeID)+8)
	copy(input, nodeID)
	tokens := make([]Token, 0, vnodes)
	seen := make(map[Token]bool, vnodes)
	// The counter runs past vnodes only when two of the node's own hashes collide.
	for counter := uint64(0); len(tokens) < vnodes; counter++ {
		binary.BigEndian.PutUint64(input[len(nodeID):], counter)
		t := Token(xxhash.Sum64(input))
		if seen[t] {
			continue
		}
		seen[t] = true
		tokens = append(tokens, t)
	}
	return tokens
}

// EvenTokens returns n tokens spaced evenly, floor(i * 2^64 / n) for i in [0, n), for
// experiments that want the papers' evenly spaced layout of one token per node. It returns
// nil for n <= 0.
func EvenTokens(n int) []Token {
	if n <= 0 {
		return nil
	}
	tokens := make([]Token, n)
	for i := range n {
		// i * 2^64 is the 128-bit number (i, 0); i < n keeps the quotient in 64 bits.
		quotient, _ := bits.Div64(uint64(i), 0, uint64(n))
		tokens[i] = Token(quotient)
	}
	return tokens
}
