package datapath

import (
	"context"
	"hash/fnv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/collection/list"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// list runs the commands of Redis lists through the coordinator's collections with the
// rule the Redis front end runs (package internal/core/collection/list): lpush and rpush node=ID key=K
// items=a,b read the list at cl and write the items beyond the end they read, with the
// header (and a reset point first when the key did not exist); lpop takes the head by a
// transaction on its record at SERIAL, the next item when another pop took it first;
// lrange prints the items in list order, or absent.
func (s *scenario) list(d *datadriven.TestData, keyspace string, arg func(string) string, cl consistency.Level,
	timed func(func(ctx context.Context) (string, error)) (string, error)) (string, error) {
	co, err := s.c.Coordinator(arg("node"))
	if err != nil {
		return "", err
	}
	if s.listClock == nil {
		s.listClock = hlc.NewClock(time.Now)
	}
	writer := fnv.New64a()
	writer.Write([]byte(arg("node")))
	key := []byte(arg("key"))
	return timed(func(ctx context.Context) (string, error) {
		coll, err := co.ReadCollection(ctx, keyspace, key, cl)
		if err != nil {
			return "", err
		}
		items := list.Items(coll.Elements)
		switch d.Cmd {
		case "lpush", "rpush":
			end := list.Head
			if d.Cmd == "rpush" {
				end = list.Tail
			}
			values := strings.Split(arg("items"), ",")
			positions, err := list.Push(end, list.Edge(items, end), len(values), list.Stamp{Time: s.listClock.Now(), Writer: writer.Sum64()})
			if err != nil {
				return "", err
			}
			w := coord.CollectionWrite{Header: &lww.Record{Type: lww.List}}
			if !coll.Found {
				w.Reset = coord.ResetCreate
			}
			for i, pos := range positions {
				w.Elements = append(w.Elements, lww.Record{Key: element.Key(key, element.ListItem, pos), Value: []byte(values[i])})
			}
			_, err = co.WriteCollection(ctx, keyspace, key, w, cl)
			return "ok", err
		case "lpop":
			value, popped, err := takeHead(ctx, co, keyspace, key, coll)
			switch {
			case err != nil:
				return "", err
			case !popped:
				return "empty", nil
			}
			return "popped " + value, nil
		}
		if !coll.Found {
			return "absent", nil
		}
		values := make([]string, len(items))
		for i, it := range items {
			values[i] = string(it.Value)
		}
		return coll.Header.Type.String() + " " + strings.Join(values, " "), nil
	})
}

// takeHead pops the head of list key, read as coll, as a pop outside a transaction does:
// a transaction at SERIAL on the head item's record, the next item's when another pop
// took it first. popped is false when every item read was taken.
func takeHead(ctx context.Context, co *coord.Coordinator, keyspace string, key []byte, coll coord.Collection) (value string, popped bool, err error) {
	for _, it := range list.Items(coll.Elements) {
		res, err := co.Update(ctx, keyspace, element.Key(key, element.ListItem, it.Pos), consistency.Serial, list.Take(coll.Reset))
		if err != nil {
			return "", false, err
		}
		if res.Applied {
			return string(res.Previous.Value), true, nil
		}
	}
	return "", false, nil
}
