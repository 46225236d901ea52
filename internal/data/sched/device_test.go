package sched

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDevice(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Device
		wantErr string
	}{
		{in: "", want: Device{}},
		{in: "0", want: Device{}},
		{in: "2ms+20us", want: Device{Access: 2 * time.Millisecond, PerKiB: 20 * time.Microsecond}},
		{in: " 2ms + 20µs ", want: Device{Access: 2 * time.Millisecond, PerKiB: 20 * time.Microsecond}},
		{in: "100us", want: Device{Access: 100 * time.Microsecond}},
		{in: "0+1us", want: Device{PerKiB: time.Microsecond}},
		{in: "2ms+20us+1s", wantErr: "want ACCESS+PERKIB"},
		{in: "fast", wantErr: "want ACCESS+PERKIB"},
		{in: "2+20us", wantErr: "missing unit"},
		{in: "-2ms", wantErr: "negative duration"},
		{in: "2ms+-1us", wantErr: "negative duration"},
		{in: "2ms+20us/64KiB", want: Device{Access: 2 * time.Millisecond, PerKiB: 20 * time.Microsecond, IOKiB: 64}},
		{in: " 2ms + 20us / 4KiB ", want: Device{Access: 2 * time.Millisecond, PerKiB: 20 * time.Microsecond, IOKiB: 4}},
		{in: "2ms/4KiB", want: Device{Access: 2 * time.Millisecond, IOKiB: 4}},
		{in: "2ms+20us/0KiB", wantErr: "IO size in KiB"},
		{in: "2ms+20us/4", wantErr: "IO size in KiB"},
		{in: "2ms+20us/4MiB", wantErr: "IO size in KiB"},
		{in: "2ms+20us/4KiB/8KiB", wantErr: "IO size in KiB"},
		{in: "0/4KiB", wantErr: "no device time"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDevice(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseDevice(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDevice(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if back, err := ParseDevice(got.String()); err != nil || back != got {
				t.Fatalf("ParseDevice(%q) = %+v, %v; want %+v back", got.String(), back, err, got)
			}
		})
	}
}

func TestDeviceTime(t *testing.T) {
	d := Device{Access: 2 * time.Millisecond, PerKiB: 20 * time.Microsecond}
	for _, tc := range []struct {
		dev   Device
		bytes int
		want  time.Duration
	}{
		{Device{}, 1 << 20, 0},
		{d, 0, 2 * time.Millisecond},
		{d, -5, 2 * time.Millisecond},
		{d, 1024, 2*time.Millisecond + 20*time.Microsecond},
		{d, 512, 2*time.Millisecond + 10*time.Microsecond},
		{d, PageBytes, 2*time.Millisecond + 256*20*time.Microsecond},
	} {
		if got := tc.dev.Time(tc.bytes); got != tc.want {
			t.Errorf("%v.Time(%d) = %v, want %v", tc.dev, tc.bytes, got, tc.want)
		}
	}
	if got := (Device{}).String(); got != "0" {
		t.Errorf("Device{}.String() = %q, want 0", got)
	}
}

// Work is Time summed over reads: Access per read and PerKiB pro rata of all the bytes.
func TestDeviceWork(t *testing.T) {
	d := Device{Access: 2 * time.Millisecond, PerKiB: 20 * time.Microsecond}
	for _, tc := range []struct {
		reads, bytes uint64
		want         time.Duration
	}{
		{0, 0, 0},
		{1, 1024, d.Time(1024)},
		{3, 3 * 512, d.Time(512) * 3},
		{4, 50000, 8*time.Millisecond + 20*time.Microsecond*50000/1024},
	} {
		if got := d.Work(tc.reads, tc.bytes); got != tc.want {
			t.Errorf("Work(%d, %d) = %v, want %v", tc.reads, tc.bytes, got, tc.want)
		}
	}
	if got := (Device{}).Work(10, 1<<20); got != 0 {
		t.Errorf("no device: Work = %v, want 0", got)
	}
}

// IOs splits a read into IOs of at most IOKiB, the first carrying the access, and they
// add up to Time.
func TestDeviceIOs(t *testing.T) {
	ms := time.Millisecond
	d := Device{Access: 10 * ms, PerKiB: ms, IOKiB: 2}
	for _, tc := range []struct {
		dev   Device
		bytes int
		want  []time.Duration
	}{
		{d, 0, []time.Duration{10 * ms}},
		{d, -3, []time.Duration{10 * ms}},
		{d, 2048, []time.Duration{12 * ms}},
		{d, 4096, []time.Duration{12 * ms, 2 * ms}},
		{d, 5 * 1024, []time.Duration{12 * ms, 2 * ms, ms}},
		{d, 2049, []time.Duration{12 * ms, ms / 1024}},
		{Device{Access: 10 * ms, PerKiB: ms}, 1 << 20, []time.Duration{10*ms + 1024*ms}},
	} {
		got := tc.dev.IOs(tc.bytes)
		var sum time.Duration
		for _, io := range got {
			sum += io
		}
		if !slices.Equal(got, tc.want) || sum != tc.dev.Time(tc.bytes) {
			t.Errorf("%v.IOs(%d) = %v (sum %v), want %v (sum %v)", tc.dev, tc.bytes, got, sum, tc.want, tc.dev.Time(tc.bytes))
		}
	}
}
