//go:build !race

package node

// raceDetector reports whether the tests run under the race detector, which makes
// Pebble about twenty times slower on values of tens of MiB.
const raceDetector = false
