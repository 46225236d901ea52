package power

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProfileByName(t *testing.T) {
	tests := []struct {
		name string
		want Profile
	}{
		{"s4", S4}, {"S4", S4}, {"s1", S1}, {"S1", S1},
	}
	for _, tt := range tests {
		if got, err := ProfileByName(tt.name); err != nil || got != tt.want {
			t.Errorf("ProfileByName(%q) = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	if _, err := ProfileByName("s3"); err == nil || !strings.Contains(err.Error(), "s4, s1") {
		t.Errorf("ProfileByName(s3) error = %v, want one listing s4, s1", err)
	}
}

// TestPaperProfiles pins the paper's figures, and a wake time equal to the enter time.
func TestPaperProfiles(t *testing.T) {
	tests := []struct {
		p                  Profile
		active, sleep      float64
		enterSeconds, wake float64
	}{
		{S4, 137, 1.65, 18, 18},
		{S1, 137, 122, 2, 2},
	}
	for _, tt := range tests {
		if tt.p.ActiveWatts != tt.active || tt.p.SleepWatts != tt.sleep ||
			tt.p.Enter.Seconds() != tt.enterSeconds || tt.p.Wake.Seconds() != tt.wake {
			t.Errorf("%s = %+v, want %v W, %v W, enter %v s, wake %v s", tt.p.Name, tt.p, tt.active, tt.sleep, tt.enterSeconds, tt.wake)
		}
	}
}

// transition is one Set call, seconds after the start.
type transition struct {
	atSeconds float64
	state     State
}

func TestMeterJoules(t *testing.T) {
	tests := []struct {
		name        string
		profile     Profile
		transitions []transition
		atSeconds   float64
		joules      float64
		watts       float64
		state       State
	}{
		{"awake all along", S4, nil, 60, 137 * 60, 137, Active},
		{"before the start", S4, nil, -5, 0, 137, Active},
		{"draining draws full power", S4, []transition{{10, Draining}}, 60, 137 * 60, 137, Draining},
		{"asleep, still entering", S4, []transition{{10, Asleep}}, 20, 137 * 20, 137, Asleep},
		{"asleep past the enter time", S4, []transition{{10, Asleep}}, 100, 137*10 + 137*18 + 1.65*72, 1.65, Asleep},
		{"asleep exactly at the end of entering", S4, []transition{{0, Asleep}}, 18, 137 * 18, 1.65, Asleep},
		{"woken before the enter time elapsed saves nothing", S4,
			[]transition{{0, Asleep}, {10, Waking}, {28, Active}}, 40, 137 * 40, 137, Active},
		{"a full cycle", S4,
			[]transition{{0, Draining}, {5, Asleep}, {65, Waking}, {83, Active}}, 100,
			137*5 + 137*18 + 1.65*42 + 137*18 + 137*17, 137, Active},
		{"a repeated sleep does not restart entering", S4,
			[]transition{{0, Asleep}, {10, Asleep}}, 30, 137*18 + 1.65*12, 1.65, Asleep},
		{"a transition in the past counts at the last one", S4,
			[]transition{{20, Asleep}, {10, Waking}}, 30, 137 * 30, 137, Waking},
		{"S1 sleeps lightly", S1, []transition{{0, Asleep}}, 10, 137*2 + 122*8, 122, Asleep},
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(seconds float64) time.Time { return start.Add(time.Duration(seconds * float64(time.Second))) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMeter(tt.profile, start)
			for _, tr := range tt.transitions {
				m.Set(at(tr.atSeconds), tr.state)
			}
			if got := m.Joules(at(tt.atSeconds)); math.Abs(got-tt.joules) > 1e-9*max(1, tt.joules) {
				t.Errorf("Joules(%v s) = %v, want %v", tt.atSeconds, got, tt.joules)
			}
			if got := m.Watts(at(tt.atSeconds)); got != tt.watts {
				t.Errorf("Watts(%v s) = %v, want %v", tt.atSeconds, got, tt.watts)
			}
			if got := m.State(); got != tt.state {
				t.Errorf("State() = %v, want %v", got, tt.state)
			}
		})
	}
}

// TestMeterConcurrentUse: transitions and readings from several goroutines leave the
// meter consistent (run with -race).
func TestMeterConcurrentUse(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMeter(S1, start)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				at := start.Add(time.Duration(g*100+i) * time.Millisecond)
				m.Set(at, State(i%4))
				m.Joules(at)
				m.Watts(at)
			}
		}()
	}
	wg.Wait()
	end := start.Add(time.Hour)
	if got := m.Joules(end); got <= 0 || got > 137*3600 {
		t.Errorf("Joules after an hour = %v, want in (0, %v]", got, 137*3600)
	}
}

// TestMeterUtilization checks the linear model: an awake node draws ActiveWatts +
// (PeakWatts - ActiveWatts) × utilization, from each utilization's moment on, also while
// it enters sleep; asleep, utilization changes nothing.
func TestMeterUtilization(t *testing.T) {
	p := Profile{Name: "test", ActiveWatts: 100, PeakWatts: 200, SleepWatts: 10, Enter: 10 * time.Second, Wake: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		at     float64
		util   float64 // set unless asleep
		asleep bool    // the node falls asleep at at
	}
	tests := []struct {
		name   string
		steps  []step
		end    float64
		joules float64
		watts  float64
	}{
		{"idle", nil, 10, 1000, 100},
		{"half busy from 4 s", []step{{at: 4, util: 0.5}}, 10, 400 + 900, 150},
		{"clamped above 1 and below 0", []step{{at: 0, util: 3}, {at: 5, util: -1}}, 10, 1000 + 500, 100},
		{"NaN counts as idle", []step{{at: 0, util: math.NaN()}}, 10, 1000, 100},
		{"busy while entering sleep, then the sleep draw", []step{{at: 0, util: 1}, {at: 5, asleep: true}}, 30,
			5*200 + 10*200 + 15*10, 10},
		{"a utilization change mid-entry", []step{{at: 0, asleep: true}, {at: 4, util: 1}, {at: 20, util: 0}}, 30,
			4*100 + 6*200 + 20*10, 10},
		{"an earlier moment counts as the last change", []step{{at: 5, util: 1}, {at: 2, util: 0}}, 10, 500 + 500, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMeter(p, t0)
			for _, s := range tt.steps {
				if s.asleep {
					m.Set(at(s.at), Asleep)
				} else {
					m.SetUtilization(at(s.at), s.util)
				}
			}
			if got := m.Joules(at(tt.end)); math.Abs(got-tt.joules) > 1e-6 {
				t.Errorf("Joules = %v, want %v", got, tt.joules)
			}
			if got := m.Watts(at(tt.end)); got != tt.watts {
				t.Errorf("Watts = %v, want %v", got, tt.watts)
			}
		})
	}
}

func TestUtilization(t *testing.T) {
	tests := []struct {
		cpu, wall time.Duration
		cores     float64
		want      float64
	}{
		{time.Second, 4 * time.Second, 1, 0.25},
		{time.Second, 4 * time.Second, 2, 0.125},
		{10 * time.Second, time.Second, 2, 1},
		{-time.Second, time.Second, 1, 0},
		{time.Second, 0, 1, 0},
		{time.Second, time.Second, 0, 0},
		{time.Second, time.Second, math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := Utilization(tt.cpu, tt.wall, tt.cores); got != tt.want {
			t.Errorf("Utilization(%v, %v, %v) = %v, want %v", tt.cpu, tt.wall, tt.cores, got, tt.want)
		}
	}
}
