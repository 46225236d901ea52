package driver

import (
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/io/transport"
)

// FuzzDecodePeer decodes arbitrary bytes as a whois answer, which tells a node the id and
// DC of a seed it only knows by address. Decoding must not panic, must fail with
// membership.ErrMalformed, and a peer that decodes must have an id and a DC and survive
// encoding and decoding again.
func FuzzDecodePeer(f *testing.F) {
	f.Add(encodePeer(transport.Peer{ID: "tokyo-1", DC: "tokyo", Addr: "127.0.0.1:7101"}))
	f.Add(encodePeer(transport.Peer{ID: "tokyo-1"}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodePeer(data)
		if err != nil {
			if !errors.Is(err, membership.ErrMalformed) {
				t.Fatalf("decodePeer(%x): %v, want ErrMalformed", data, err)
			}
			return
		}
		if p.ID == "" || p.DC == "" {
			t.Fatalf("decodePeer(%x) = %+v, without an id or a DC", data, p)
		}
		if again, err := decodePeer(encodePeer(p)); err != nil || again != p {
			t.Fatalf("peer %+v re-encoded decodes as %+v, %v", p, again, err)
		}
	})
}
