//go:build !race

// Package racedetector says whether the binary runs under the race detector, for tests
// that must size their work by it: the detector makes Pebble about twenty times slower,
// and its sync.Pool drops pooled objects at random, so allocation counts mean nothing
// there.
package racedetector

// Enabled reports whether the binary was built with the race detector (-race).
const Enabled = false
