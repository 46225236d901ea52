package coord_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

func TestBadInputGetsClearErrorsAndNodeKeepsServing(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	tests := []struct {
		name string
		run  func() error
		want error
		text string
	}{
		{"empty key", func() error {
			_, err := co.Put(ctx, "spread", nil, []byte("v"), 0, consistency.One)
			return err
		}, coord.ErrInvalidArgument, "empty key"},
		{"key too large", func() error {
			_, err := co.Put(ctx, "spread", make([]byte, 1025), []byte("v"), 0, consistency.One)
			return err
		}, coord.ErrInvalidArgument, "key of 1025 bytes exceeds the limit of 1024 bytes"},
		{"value too large", func() error {
			_, err := co.Put(ctx, "spread", []byte("k"), make([]byte, 64<<10+1), 0, consistency.One)
			return err
		}, coord.ErrInvalidArgument, "value of 65537 bytes exceeds the limit of 65536 bytes"},
		{"read key too large", func() error {
			_, _, err := co.Get(ctx, "spread", make([]byte, 2000), consistency.One)
			return err
		}, coord.ErrInvalidArgument, "exceeds the limit"},
		{"unknown keyspace", func() error {
			_, err := co.Put(ctx, "nope", []byte("k"), []byte("v"), 0, consistency.One)
			return err
		}, schema.ErrNoKeyspace, `no such keyspace "nope"`},
		{"read at ANY", func() error {
			_, _, err := co.Get(ctx, "spread", []byte("k"), consistency.Any)
			return err
		}, coord.ErrInvalidArgument, "ANY is a write level"},
		{"scan limit too large", func() error {
			_, err := co.Scan(ctx, "spread", nil, nil, 1<<30, consistency.One)
			return err
		}, coord.ErrInvalidArgument, "scan limit"},
		{"unknown level", func() error {
			_, err := co.Put(ctx, "spread", []byte("k"), []byte("v"), 0, consistency.Level(99))
			return err
		}, coord.ErrUnavailable, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(tt.text)) {
				t.Fatalf("err = %q, want it to say %q", err, tt.text)
			}
		})
	}
	if _, err := co.Put(ctx, "spread", []byte("still"), []byte("serving"), 0, consistency.Quorum); err != nil {
		t.Fatalf("node stopped serving after bad input: %v", err)
	}
}
