package bench

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The one number format of every bench's text output, so that a column never mixes
// 2.202e+06 with 165952:
//   - a count (an integer) is written whole, with thousands separators: 165,952;
//   - a field whose JSON name carries the unit bps or bytes is written with an SI prefix
//     and three significant digits: 2.20 M, 594 k (the unit itself is in the name);
//   - any other number is written in fixed point, with fewer decimals the larger it is
//     (1,152 · 39.1 · 4.12 · 0.491), and thousands separators.
//
// No number is ever written in e-notation: a value too small for three decimals is 0.000.

// siUnits are the name tokens (between underscores) of the fields written with SI
// prefixes: rates and sizes, whose values span many orders of magnitude.
var siUnits = []string{"bps", "bytes"}

// siPrefixes are the prefixes of powers of 1000, from 1000^1 up.
var siPrefixes = []string{"k", "M", "G", "T", "P", "E"}

// usesSI reports whether the field named name (its JSON name) is written with SI
// prefixes: its unit is bps or bytes, and not a ratio of bytes to bytes
// (transport_bytes_per_data_byte).
func usesSI(name string) bool {
	tokens := strings.Split(name, "_")
	unit := slices.IndexFunc(tokens, func(t string) bool { return slices.Contains(siUnits, t) })
	if unit < 0 {
		return false
	}
	for i := unit + 1; i+1 < len(tokens); i++ {
		if tokens[i] == "per" && slices.ContainsFunc(tokens[i+1:], func(t string) bool { return t == "byte" || slices.Contains(siUnits, t) }) {
			return false
		}
	}
	return true
}

// formatValue writes a value of the field named name (its JSON name, which picks the
// format) for the text output: numbers as the package's comment says, nil as "-", a
// slice as its elements separated by commas.
func formatValue(name string, v reflect.Value) string {
	switch v.Kind() {
	case reflect.Invalid:
		return "-"
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "-"
		}
		return formatValue(name, v.Elem())
	case reflect.Float32, reflect.Float64:
		return formatNumber(name, v.Float(), false)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return formatNumber(name, float64(v.Int()), true)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return formatNumber(name, float64(v.Uint()), true)
	case reflect.Bool:
		if v.Bool() {
			return "yes"
		}
		return "no"
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return "none"
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(name, v.Index(i))
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v.Interface())
}

// formatNumber writes x, a count when whole is set, in the format of the field named name.
func formatNumber(name string, x float64, whole bool) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	case usesSI(name):
		return formatSI(x)
	case whole:
		return groupThousands(strconv.FormatFloat(x, 'f', 0, 64))
	}
	return formatFixed(x)
}

// formatFixed writes x in fixed point with three significant digits below 100 and none
// after the point above it: 0.491, 4.12, 39.1, 1,152.
func formatFixed(x float64) string {
	decimals := 0
	switch a := math.Abs(x); {
	case a < 1:
		decimals = 3
	case a < 10:
		decimals = 2
	case a < 100:
		decimals = 1
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if strings.Trim(s, "-0.") == "" {
		return "0" // rather than -0.000
	}
	return groupThousands(s)
}

// formatSI writes x with an SI prefix and three significant digits: 594 k, 2.20 M; below
// 1000 it is written in fixed point without a prefix.
func formatSI(x float64) string {
	a := math.Abs(x)
	if a < 999.5 {
		return formatFixed(x)
	}
	prefix := -1
	for a >= 999.5 && prefix < len(siPrefixes)-1 {
		a /= 1000
		prefix++
	}
	decimals := 0
	switch {
	case a < 9.995:
		decimals = 2
	case a < 99.95:
		decimals = 1
	}
	if x < 0 {
		a = -a
	}
	return strconv.FormatFloat(a, 'f', decimals, 64) + " " + siPrefixes[prefix]
}

// groupThousands puts a comma between every three digits of a number's integer part.
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	integer, fraction, hasPoint := strings.Cut(s, ".")
	var b strings.Builder
	for i, digit := range integer {
		if i > 0 && (len(integer)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(digit)
	}
	if hasPoint {
		b.WriteString("." + fraction)
	}
	return sign + b.String()
}
