package sim

import "testing"

func TestWireBytes(t *testing.T) {
	tests := []struct {
		name    string
		wire    Wire
		payload int
		want    int
	}{
		{"zero wire counts payload", Wire{}, 5000, 5000},
		{"one segment", TCPIPv4, 100, 152},
		{"exactly one MSS", TCPIPv4, 1448, 1500},
		{"two segments", TCPIPv4, 1449, 1449 + 104},
		{"empty message still has a header", TCPIPv4, 0, 52},
		{"no segmenting", Wire{HeaderBytes: 28}, 5000, 5028},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.wire.Bytes(tt.payload); got != tt.want {
				t.Fatalf("Bytes(%d) = %d, want %d", tt.payload, got, tt.want)
			}
		})
	}
}
