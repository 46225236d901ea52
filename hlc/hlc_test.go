package hlc

import (
	"sync"
	"testing"
	"time"
)

// fakeTime is a settable physical clock for deterministic tests.
type fakeTime struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeTime) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeTime) set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = t
}

// base is an arbitrary wall time in whole milliseconds.
var base = time.UnixMilli(1700000000123)

// ts builds a Timestamp from wall milliseconds after base and a logical counter.
func ts(afterBaseMillis int64, logical uint16) Timestamp {
	return FromTime(base.Add(time.Duration(afterBaseMillis)*time.Millisecond)) | Timestamp(logical)
}

func TestTimestampParts(t *testing.T) {
	tests := []struct {
		name        string
		ts          Timestamp
		wantWall    time.Time
		wantLogical uint16
		wantString  string
	}{
		{"zero", 0, time.UnixMilli(0), 0, "0.0"},
		{"wall only", FromTime(base), base, 0, "1700000000123.0"},
		{"wall and logical", FromTime(base) + 5, base, 5, "1700000000123.5"},
		{"max logical", FromTime(base) + 0xFFFF, base, 0xFFFF, "1700000000123.65535"},
		{"sub-millisecond truncated", FromTime(base.Add(999 * time.Microsecond)), base, 0, "1700000000123.0"},
		{"before epoch clamps", FromTime(time.UnixMilli(-5)), time.UnixMilli(0), 0, "0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ts.WallTime(); !got.Equal(tt.wantWall) {
				t.Errorf("WallTime() = %v, want %v", got, tt.wantWall)
			}
			if got := tt.ts.Logical(); got != tt.wantLogical {
				t.Errorf("Logical() = %d, want %d", got, tt.wantLogical)
			}
			if got := tt.ts.String(); got != tt.wantString {
				t.Errorf("String() = %q, want %q", got, tt.wantString)
			}
		})
	}
}

func TestTimestampOrderFollowsWallThenLogical(t *testing.T) {
	ordered := []Timestamp{ts(0, 0), ts(0, 1), ts(0, 0xFFFF), ts(1, 0), ts(1, 7), ts(1000, 0)}
	for i := 1; i < len(ordered); i++ {
		if ordered[i-1] >= ordered[i] {
			t.Errorf("%s >= %s, want strictly less", ordered[i-1], ordered[i])
		}
	}
}

func TestClockNow(t *testing.T) {
	tests := []struct {
		name       string
		physical   []int64 // physical time before each Now call, ms after base
		wantStamps []Timestamp
	}{
		{"physical advances", []int64{0, 1, 5}, []Timestamp{ts(0, 0), ts(1, 0), ts(5, 0)}},
		{"physical stalls", []int64{0, 0, 0}, []Timestamp{ts(0, 0), ts(0, 1), ts(0, 2)}},
		{"physical goes backwards", []int64{10, 3, 4, 11}, []Timestamp{ts(10, 0), ts(10, 1), ts(10, 2), ts(11, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			physical := &fakeTime{}
			c := NewClock(physical.now)
			for i, ms := range tt.physical {
				physical.set(base.Add(time.Duration(ms) * time.Millisecond))
				if got := c.Now(); got != tt.wantStamps[i] {
					t.Errorf("call %d: Now() = %s, want %s", i, got, tt.wantStamps[i])
				}
			}
		})
	}
}

func TestClockNowLogicalOverflowCarries(t *testing.T) {
	physical := &fakeTime{t: base}
	c := NewClock(physical.now)
	c.Update(ts(0, 0xFFFE))
	if got, want := c.Now(), ts(1, 0); got != want {
		t.Fatalf("Now() after logical overflow = %s, want %s", got, want)
	}
}

func TestClockUpdate(t *testing.T) {
	tests := []struct {
		name     string
		last     Timestamp // set by a prior Update with physical time at base
		physical int64
		remote   Timestamp
		want     Timestamp
	}{
		{"physical ahead of all", ts(0, 3), 5, ts(2, 9), ts(5, 0)},
		{"remote ahead", ts(0, 3), 0, ts(4, 2), ts(4, 3)},
		{"local ahead", ts(6, 3), 0, ts(4, 2), ts(6, 4)},
		{"equal wall, remote larger logical", ts(3, 1), 0, ts(3, 8), ts(3, 9)},
		{"equal wall, local larger logical", ts(3, 8), 0, ts(3, 1), ts(3, 9)},
		{"zero remote acts as Now", ts(2, 0), 0, 0, ts(2, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			physical := &fakeTime{t: base}
			c := NewClock(physical.now)
			c.Update(tt.last - 1) // leaves the clock exactly at tt.last
			physical.set(base.Add(time.Duration(tt.physical) * time.Millisecond))
			if got := c.Update(tt.remote); got != tt.want {
				t.Errorf("Update(%s) = %s, want %s", tt.remote, got, tt.want)
			}
			if got := c.Now(); got <= tt.want {
				t.Errorf("Now() after Update = %s, want > %s", got, tt.want)
			}
		})
	}
}

func TestClockConcurrentNowIsUnique(t *testing.T) {
	const goroutines, callsEach = 4, 1000
	c := NewClock((&fakeTime{t: base}).now)
	results := make([][]Timestamp, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range callsEach {
				results[g] = append(results[g], c.Now())
			}
		})
	}
	wg.Wait()
	seen := make(map[Timestamp]bool, goroutines*callsEach)
	for _, stamps := range results {
		for i, s := range stamps {
			if seen[s] {
				t.Fatalf("timestamp %s issued twice", s)
			}
			seen[s] = true
			if i > 0 && stamps[i-1] >= s {
				t.Fatalf("timestamps not increasing within a goroutine: %s then %s", stamps[i-1], s)
			}
		}
	}
}

func TestNewClockDefaultsToSystemTime(t *testing.T) {
	before := time.Now()
	got := NewClock(nil).Now().WallTime()
	if got.Before(before.Truncate(time.Millisecond)) || got.After(time.Now()) {
		t.Errorf("Now() wall time %v outside [%v, now]", got, before)
	}
}
