package geo

import "math"

// Redis computes distances with the C library's sin, cos and asin, which on glibc round
// to the nearest double in all but the rarest cases; Go's math package is an ulp off
// for a sixth to a third of arguments, which shows in STOREDIST's scores and in a point
// on a search's edge. So kura computes them in double-double arithmetic (about 106
// bits) and rounds once.

// dd is an unevaluated sum hi+lo, |lo| at most half an ulp of hi.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func (x dd) add(y dd) dd {
	s := twoSum(x.hi, y.hi)
	t := twoSum(x.lo, y.lo)
	s = twoSum(s.hi, s.lo+t.hi)
	return twoSum(s.hi, s.lo+t.lo)
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

func (x dd) mul(y dd) dd {
	p := twoProd(x.hi, y.hi)
	p.lo += x.hi*y.lo + x.lo*y.hi
	return twoSum(p.hi, p.lo)
}

// div divides by a double.
func (x dd) div(b float64) dd {
	q := x.hi / b
	p := twoProd(q, b)
	r := (x.hi - p.hi - p.lo + x.lo) / b
	return twoSum(q, r)
}

// halfPi is π/2 as three doubles, 159 bits, for the reduction of an angle.
var halfPi = [3]float64{1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33}

// invFactorial[n] is 1/n! to double-double precision, the Taylor coefficients.
var invFactorial = func() [32]dd {
	var f [32]dd
	f[0] = dd{1, 0}
	for n := 1; n < len(f); n++ {
		f[n] = f[n-1].div(float64(n))
	}
	return f
}()

// reducedAngleMax is the largest angle reduced exactly enough; past it (a search of a
// radius beyond the earth's) the math package's functions serve.
const reducedAngleMax = 1 << 20

// sinCos is the sine and cosine of x, each rounded once from double-double precision.
func sinCos(x float64) (sin, cos float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > reducedAngleMax {
		return math.Sin(x), math.Cos(x)
	}
	s, c := sinCosDD(x)
	return s.hi + s.lo, c.hi + c.lo
}

// sinCosDD is the sine and cosine of x, |x| at most reducedAngleMax, unrounded: x less
// the nearest multiple k of π/2, then the Taylor series, and k's quadrant.
func sinCosDD(x float64) (sin, cos dd) {
	k := math.RoundToEven(x / halfPi[0])
	r := dd{x, 0}
	for _, p := range halfPi {
		r = r.add(twoProd(k, p).neg())
	}
	s, c := sinCosReduced(r)
	switch int64(k) & 3 {
	case 1:
		s, c = c, s.neg()
	case 2:
		s, c = s.neg(), c.neg()
	case 3:
		s, c = c.neg(), s
	}
	return s, c
}

// sinCosReduced is the Taylor series of sine and cosine at |r| <= π/4, to x^31.
func sinCosReduced(r dd) (sin, cos dd) {
	r2 := r.mul(r)
	sin, cos = invFactorial[31], invFactorial[30]
	for n := 29; n >= 1; n -= 2 {
		sin = sin.mul(r2).neg().add(invFactorial[n])
		cos = cos.mul(r2).neg().add(invFactorial[n-1])
	}
	return sin.mul(r), cos
}

// sin and cos are sinCos's sine and cosine alone.
func sin(x float64) float64 { s, _ := sinCos(x); return s }
func cos(x float64) float64 { _, c := sinCos(x); return c }

// asin is the arc sine of y, 0 <= y <= 1: the math package's, refined by a Newton step
// on the sine in double-double precision.
func asin(y float64) float64 {
	a := math.Asin(y)
	if y >= 1 || y <= 0 || math.IsNaN(y) {
		return a
	}
	s, c := sinCosDD(a)
	// a - (sin a - y) / cos a
	corr := s.add(dd{-y, 0}).div(c.hi + c.lo)
	res := dd{a, 0}.add(corr.neg())
	return res.hi + res.lo
}
