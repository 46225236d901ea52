package node

import (
	"fmt"
	"testing"
	"time"
)

// TestLoadPhaseSpreadsNodes checks that nodes started together count what they store at
// points spread over the interval, not at once: each phase lies within the interval, the
// same id always has the same one, and the 16 nodes of kura bench power's topology spread
// over more than half of it.
func TestLoadPhaseSpreadsNodes(t *testing.T) {
	lowest, highest := loadInterval, time.Duration(0)
	for i := 1; i <= 16; i++ {
		id := fmt.Sprintf("node-%02d", i)
		p := loadPhase(id)
		if p <= 0 || p > loadInterval {
			t.Fatalf("loadPhase(%s) = %v, outside (0, %v]", id, p, loadInterval)
		}
		if again := loadPhase(id); again != p {
			t.Fatalf("loadPhase(%s) = %v, then %v", id, p, again)
		}
		lowest, highest = min(lowest, p), max(highest, p)
	}
	if highest-lowest <= loadInterval/2 {
		t.Errorf("the 16 nodes' phases span %v to %v, within half of %v", lowest, highest, loadInterval)
	}
}
