//go:build race

package racedetector

// Enabled reports whether the binary was built with the race detector (-race).
const Enabled = true
