//go:build !unix

package resp

import "time"

// processCPU reports nothing where getrusage does not exist: INFO's CPU section is then
// empty.
func processCPU() (sys, user, childrenSys, childrenUser time.Duration, ok bool) {
	return 0, 0, 0, 0, false
}
