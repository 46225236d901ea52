package resp

// lcsCommand is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest
// common subsequence of the two values (a missing key is an empty string), its length,
// or the ranges of it in each value, as Redis 7.0 computes and orders them. The table of
// (len1+1)*(len2+1) 32-bit lengths it needs may be at most proto-max-bulk-len bytes, as in
// Redis: two values of about 2,000 bytes each at kura's default 16 MiB.
func lcsCommand(c *conn, args [][]byte) {
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for i := 3; i < len(args); i++ {
		switch upper(args[i]) {
		case "IDX":
			getIdx = true
		case "LEN":
			getLen = true
		case "WITHMATCHLEN":
			withMatchLen = true
		case "MINMATCHLEN":
			if i+1 == len(args) {
				c.w.Error(errSyntax)
				return
			}
			n, ok := parseInt(args[i+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			minMatchLen = max(n, 0)
			i++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if getLen && getIdx {
		c.w.Error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	var values [2][]byte
	for i := range values {
		rec, _, err := c.lookupString(args[1+i])
		if err != nil {
			c.replyTransactError(err)
			return
		}
		values[i] = rec.Value
	}
	a, b := values[0], values[1]
	if cells := (len(a) + 1) * (len(b) + 1); cells*4 > c.s.limits.BulkBytesMax {
		c.w.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	lcs := lcsTable(a, b)
	total := lcs.at(len(a), len(b))
	if getLen {
		c.w.Int(int64(total))
		return
	}
	common, matches := lcs.walk(a, b)
	if !getIdx {
		c.w.Bulk(common)
		return
	}
	var kept []lcsMatch
	for _, m := range matches {
		if minMatchLen == 0 || int64(m.length()) >= minMatchLen {
			kept = append(kept, m)
		}
	}
	c.w.MapHeader(2)
	c.w.BulkString("matches")
	c.w.ArrayHeader(len(kept))
	for _, m := range kept {
		if withMatchLen {
			c.w.ArrayHeader(3)
		} else {
			c.w.ArrayHeader(2)
		}
		for _, r := range [][2]int{{m.aStart, m.aEnd}, {m.bStart, m.bEnd}} {
			c.w.ArrayHeader(2)
			c.w.Int(int64(r[0]))
			c.w.Int(int64(r[1]))
		}
		if withMatchLen {
			c.w.Int(int64(m.length()))
		}
	}
	c.w.BulkString("len")
	c.w.Int(int64(total))
}

// lcsLengths is the dynamic programme's table: at(i, j) is the length of the longest
// common subsequence of a[:i] and b[:j].
type lcsLengths struct {
	cells []uint32
	width int // len(b)+1
}

func (t lcsLengths) at(i, j int) uint32 { return t.cells[i*t.width+j] }

func lcsTable(a, b []byte) lcsLengths {
	t := lcsLengths{cells: make([]uint32, (len(a)+1)*(len(b)+1)), width: len(b) + 1}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				t.cells[i*t.width+j] = t.at(i-1, j-1) + 1
			default:
				t.cells[i*t.width+j] = max(t.at(i-1, j), t.at(i, j-1))
			}
		}
	}
	return t
}

// lcsMatch is a run of the subsequence common to both values: a[aStart..aEnd] equals
// b[bStart..bEnd], the ends included.
type lcsMatch struct{ aStart, aEnd, bStart, bEnd int }

func (m lcsMatch) length() int { return m.aEnd - m.aStart + 1 }

// walk goes back from the ends of a and b as Redis's LCS does, and returns the common
// subsequence and its runs, last first: where the two lengths tie, it steps back in b.
func (t lcsLengths) walk(a, b []byte) ([]byte, []lcsMatch) {
	common := make([]byte, t.at(len(a), len(b)))
	var matches []lcsMatch
	// run is the run being extended backwards; a step back in only one value ends it.
	var run *lcsMatch
	k := len(common)
	for i, j := len(a), len(b); i > 0 && j > 0; {
		if a[i-1] == b[j-1] {
			k--
			common[k] = a[i-1]
			i, j = i-1, j-1
			if run != nil {
				run.aStart, run.bStart = i, j
			} else {
				run = &lcsMatch{aStart: i, aEnd: i, bStart: j, bEnd: j}
			}
			continue
		}
		if t.at(i-1, j) > t.at(i, j-1) {
			i--
		} else {
			j--
		}
		if run != nil {
			matches = append(matches, *run)
			run = nil
		}
	}
	if run != nil {
		matches = append(matches, *run)
	}
	return common, matches
}
