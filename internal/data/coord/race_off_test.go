//go:build !race

package coord

// raceDetector reports whether the tests run under the race detector, whose sync.Pool
// drops pooled objects at random, so allocation counts mean nothing there.
const raceDetector = false
