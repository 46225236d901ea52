package resp

import (
	"math/big"
	"strings"
)

// INCRBYFLOAT's arithmetic. Redis reads the value and the increment with strtold and adds
// them as C long doubles, on x86-64 the 80-bit extended format: a 64-bit significand and
// binary exponents to 16383. So 1e400 is a valid increment, a sum past float64's range a
// valid result, and "+inf" a valid number whose sum is refused as infinite. kura does the
// same arithmetic in math/big, rounding where the x87 format rounds, so that its replies
// are Redis's digit for digit.
const (
	// extendedPrec is the extended format's significand, in bits.
	extendedPrec = 64
	// extendedExpMax and extendedExpMin bound the exponent of a finite and of a normal
	// extended value, in big.Float's terms (x = m * 2^exp, 0.5 <= m < 1): the largest is
	// just under 2^16384, the smallest normal 2^-16382.
	extendedExpMax = 16384
	extendedExpMin = -16381
	// extendedSubnormalExp is the exponent of the smallest subnormal, 2^-16445: values
	// below the normal range are multiples of it.
	extendedSubnormalExp = -16445
	// longDoubleCharsMax is Redis's MAX_LONG_DOUBLE_CHARS: a longer string is no number.
	longDoubleCharsMax = 5 << 10
	// decimalExpMax and decimalExpMin bound the decimal exponent of a number's first
	// digit beyond which it overflows (LDBL_MAX is 1.19e4932) or rounds to zero (the
	// smallest subnormal is 3.6e-4951); between them big.Rat finds the exact value.
	decimalExpMax = 4933
	decimalExpMin = -4952
)

// parseLongDouble reads a number as Redis's string2ld does with glibc's strtold, and
// reports whether Redis takes it: decimal or hexadecimal ("0x1.8p3"), "inf" or
// "infinity" in any case, an optional sign; no space before, nothing after, no NaN, and
// neither an overflow nor an underflow to zero. The value is rounded to the extended
// format.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= longDoubleCharsMax || isCSpace(b[0]) {
		return nil, false
	}
	s := string(b)
	negative := s[0] == '-'
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	if lower := strings.ToLower(s); lower == "inf" || lower == "infinity" {
		return new(big.Float).SetInf(negative), true
	}
	base, expMark := 10, byte('e')
	if len(s) > 2 && s[0] == '0' && s[1]|0x20 == 'x' {
		base, expMark = 16, 'p'
		s = s[2:]
	}
	digits, fraction, rest := scanMantissa(s, base)
	if len(digits)+len(fraction) == 0 {
		return nil, false
	}
	exp := 0
	if len(rest) > 0 {
		var ok bool
		if exp, ok = scanExponent(rest, expMark); !ok {
			return nil, false
		}
	}
	mantissa, _ := new(big.Int).SetString(digits+fraction, base)
	if mantissa.Sign() == 0 {
		f := new(big.Float).SetPrec(extendedPrec)
		if negative {
			f.Neg(f)
		}
		return f, true
	}
	exact := new(big.Rat)
	if base == 10 {
		// The first significant digit's power of ten decides overflow and underflow
		// before the exact value is worked out with powers of ten that large.
		first := len(digits) + len(fraction) - len(mantissa.String())
		magnitude := len(digits) - first - 1 + exp
		if magnitude >= decimalExpMax || magnitude < decimalExpMin {
			return nil, false
		}
		exact.SetFrac(mantissa, big.NewInt(1))
		exact.Mul(exact, powerRat(10, exp-len(fraction)))
	} else {
		magnitude := mantissa.BitLen() - 1 - 4*len(fraction) + exp
		if magnitude >= extendedExpMax || magnitude < extendedSubnormalExp-1 {
			return nil, false
		}
		exact.SetFrac(mantissa, big.NewInt(1))
		exact.Mul(exact, powerRat(2, exp-4*len(fraction)))
	}
	if negative {
		exact.Neg(exact)
	}
	return roundExtended(exact)
}

// scanMantissa splits the start of s into the digits before the point and those after
// it, in base 10 or 16, and returns what follows them.
func scanMantissa(s string, base int) (digits, fraction, rest string) {
	n := 0
	for n < len(s) && isDigit(s[n], base) {
		n++
	}
	digits, rest = s[:n], s[n:]
	if len(rest) > 0 && rest[0] == '.' {
		m := 1
		for m < len(rest) && isDigit(rest[m], base) {
			m++
		}
		fraction, rest = rest[1:m], rest[m:]
	}
	return digits, fraction, rest
}

// scanExponent reads an exponent, the whole of s: the mark ('e' or 'p', in either case),
// an optional sign and digits. A larger exponent than any number can use is held at a
// billion, past every bound.
func scanExponent(s string, mark byte) (int, bool) {
	if s[0]|0x20 != mark {
		return 0, false
	}
	s = s[1:]
	negative := len(s) > 0 && s[0] == '-'
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	exp := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i], 10) {
			return 0, false
		}
		exp = min(exp*10+int(s[i]-'0'), 1e9)
	}
	if negative {
		exp = -exp
	}
	return exp, true
}

func isDigit(b byte, base int) bool {
	return ('0' <= b && b <= '9') || (base == 16 && 'a' <= b|0x20 && b|0x20 <= 'f')
}

// isCSpace is C's isspace.
func isCSpace(b byte) bool { return b == ' ' || ('\t' <= b && b <= '\r') }

// powerRat returns base^exp as a rational.
func powerRat(base int64, exp int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(base), big.NewInt(int64(max(exp, -exp))), nil)
	if exp < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// roundExtended rounds an exact nonzero value to the nearest extended one, ties to even,
// as strtold does; it reports false where strtold overflows or underflows to zero (Redis
// refuses both).
func roundExtended(exact *big.Rat) (*big.Float, bool) {
	truncated := new(big.Float).SetPrec(extendedPrec).SetMode(big.ToZero).SetRat(exact)
	if truncated.MantExp(nil) >= extendedExpMin {
		f := new(big.Float).SetPrec(extendedPrec).SetRat(exact)
		return f, f.MantExp(nil) <= extendedExpMax
	}
	// Below the normal range the value is a multiple of the smallest subnormal: round
	// exact / 2^-16445 to an integer, ties to even.
	scaled := new(big.Rat).Mul(exact, powerRat(2, -extendedSubnormalExp))
	quotient, remainder := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	twice := remainder.Abs(remainder).Lsh(remainder, 1)
	if c := twice.Cmp(scaled.Denom()); c > 0 || (c == 0 && quotient.Bit(0) == 1) {
		quotient.Add(quotient, big.NewInt(int64(scaled.Sign())))
	}
	if quotient.Sign() == 0 {
		return nil, false
	}
	f := new(big.Float).SetPrec(extendedPrec).SetInt(quotient)
	return f.SetMantExp(f, extendedSubnormalExp), true
}

// addLongDouble adds two extended values as the x87 unit does, rounding to nearest; it
// reports false for a sum that is infinite or not a number.
func addLongDouble(x, y *big.Float) (*big.Float, bool) {
	if x.IsInf() || y.IsInf() {
		return nil, false
	}
	sum := new(big.Float).SetPrec(extendedPrec).Add(x, y)
	return sum, sum.MantExp(nil) <= extendedExpMax
}

// formatLongDouble writes v as Redis writes INCRBYFLOAT's result (ld2string's
// human-friendly form): printf's %.17Lf, its fraction's trailing zeros and a bare point
// cut, and "-0" as "0".
func formatLongDouble(v *big.Float) []byte {
	s := v.Text('f', 17)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return []byte(s)
}
