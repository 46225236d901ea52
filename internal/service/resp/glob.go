package resp

// matchGlob reports whether s matches pattern in Redis's glob syntax: * any run of bytes,
// ? one byte, [abc] [^abc] [a-z] a class, and \ quoting the next byte. It backtracks to
// the last * only, so it runs in O(len(pattern) * len(s)) at worst.
func matchGlob(pattern, s []byte) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				starP, starI = p, i
				p++
				continue
			case '?':
				p++
				i++
				continue
			default:
				if width, ok := matchOne(pattern[p:], s[i]); ok {
					p += width
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last * swallow one more byte and try again from there.
		starI++
		p, i = starP+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches byte c against the pattern element at the start of pattern (a literal,
// an escaped byte or a class) and returns the element's width.
func matchOne(pattern []byte, c byte) (width int, ok bool) {
	switch {
	case pattern[0] == '\\' && len(pattern) > 1:
		return 2, pattern[1] == c
	case pattern[0] == '[':
		return matchClass(pattern, c)
	default:
		return 1, pattern[0] == c
	}
}

// matchClass matches c against the class that starts pattern ("[...]"); an unterminated
// class extends to the end of the pattern, as in Redis.
func matchClass(pattern []byte, c byte) (width int, ok bool) {
	i := 1
	negate := i < len(pattern) && pattern[i] == '^'
	if negate {
		i++
	}
	matched := false
	for ; i < len(pattern) && pattern[i] != ']'; i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern):
			i++
			matched = matched || pattern[i] == c
		case i+2 < len(pattern) && pattern[i+1] == '-':
			// As Redis's stringmatchlen, a range may end in ']': "[a-]" is the range from
			// ']' to 'a', and the class goes on to the next ']'.
			lo, hi := pattern[i], pattern[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			matched = matched || (lo <= c && c <= hi)
			i += 2
		default:
			matched = matched || pattern[i] == c
		}
	}
	if i < len(pattern) {
		i++ // the closing ]
	}
	return i, matched != negate
}
