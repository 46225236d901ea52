package datapath

import (
	"context"
	"fmt"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/collection/set"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// set runs the commands of Redis sets through the coordinator's collections with the
// rule of package internal/core/collection/set, as the Redis front end does: sadd node=ID key=K
// members=m,... reads the named members' adds and writes a tagged add for each it did not
// find (with the header, and when the key does not exist the reset point of the life that
// ended before, as the front end's SADD writes them); srem reads
// them and tombstones the adds it found; smembers prints the members, or absent (an
// emptied set too, whose header stays).
func (s *scenario) set(d *datadriven.TestData, keyspace string, arg func(string) string, cl consistency.Level,
	timed func(func(ctx context.Context) (string, error)) (string, error)) (string, error) {
	co, err := s.c.Coordinator(arg("node"))
	if err != nil {
		return "", err
	}
	key := []byte(arg("key"))
	var names [][]byte
	for _, m := range strings.Split(arg("members"), ",") {
		if m != "" {
			names = append(names, []byte(m))
		}
	}
	return timed(func(ctx context.Context) (string, error) {
		if d.Cmd == "smembers" {
			coll, err := co.ReadCollection(ctx, keyspace, key, cl)
			if err != nil || !coll.Found {
				return "absent", err
			}
			var members []string
			for _, name := range set.Fold(coll.Elements).Names() {
				members = append(members, string(name))
			}
			return coll.Header.Type.String() + " " + strings.Join(members, " "), nil
		}
		prefixes := make([][]byte, len(names))
		for i, name := range names {
			prefixes[i] = set.AddPrefix(key, name)
		}
		coll, err := co.ReadPrefixes(ctx, keyspace, key, prefixes, cl)
		if err != nil {
			return "", err
		}
		read := set.Fold(coll.Elements)
		if d.Cmd == "srem" {
			tombstones, removed := read.Remove(names)
			if len(tombstones) > 0 {
				if _, err := co.WriteCollection(ctx, keyspace, key, coord.CollectionWrite{Elements: tombstones}, cl); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("removed %d", removed), nil
		}
		w := coord.CollectionWrite{Header: &lww.Record{Type: lww.Set}, Tagged: read.Add(key, names), Reset: coord.ResetEnded, Ended: coll.Ended}
		if len(w.Tagged) > 0 {
			if _, err := co.WriteCollection(ctx, keyspace, key, w, cl); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("added %d", len(w.Tagged)), nil
	})
}
