package datapath

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/collection/list"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// The scenario command that races pops of one list inside and outside transactions:
//
//	poprace outside=ID,... inside=ID,... key=K each=N
//
// runs, at once, a client per node of outside popping K's head N times in a row as a pop
// outside a transaction does (takeHead: the list read at QUORUM, then a transaction at
// SERIAL on the head item's record), and a client per node of inside popping it N times
// in a row in a transaction over the list (MULTI, LPOP, EXEC: the list read by the
// round, the head item's tombstone proposed on the instance of the list's partition).
// It prints how many items each kind of pop took, how many pops found the list empty or
// failed, how many items two pops took, and the items left. Two pops take one item only
// when they run on different Paxos instances: an item's record and the list's partition
// are one instance when the keyspace runs element records on their collection's
// (schema.Keyspace.CollectionInstances), or when K has a hash tag.

// popInside is the transaction that pops list key's head: it reads the list as a
// collection and deletes its first item, as the Redis front end's LPOP inside EXEC
// does; its reply is the item's value, or nothing when the list is empty.
func popInside(key []byte) coord.BatchFunc {
	return func(_ hlc.Timestamp, cur []coord.KeyRecord) ([]lww.Record, bool, any, error) {
		items := list.Items(cur[0].Elements)
		if len(items) == 0 {
			return nil, false, nil, nil
		}
		itemKey := element.Key(key, element.ListItem, items[0].Pos)
		i := slices.IndexFunc(cur[0].Elements, func(r lww.Record) bool { return bytes.Equal(r.Key, itemKey) })
		next, write, err := list.Take(cur[0].Reset)(cur[0].Elements[i], true)
		if err != nil || !write {
			return nil, false, nil, err
		}
		next.Key = itemKey
		return []lww.Record{next}, true, string(items[0].Value), nil
	}
}

// popClient is one client of a poprace: inside a transaction or not, on node.
type popClient struct {
	node   string
	inside bool
}

func (s *scenario) popRace(keyspace string, key []byte, arg func(string) string) (string, error) {
	each, err := strconv.Atoi(arg("each"))
	if err != nil {
		return "", fmt.Errorf("each: %w", err)
	}
	var clients []popClient
	for _, role := range []string{"outside", "inside"} {
		for _, id := range strings.Split(arg(role), ",") {
			if id != "" {
				clients = append(clients, popClient{node: id, inside: role == "inside"})
			}
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	taken := map[string]int{}            // by item
	takenBy := map[string]int{}          // by kind of pop
	empty, failed := 0, map[string]int{} // by error kind
	for i, client := range clients {
		co, err := s.c.Coordinator(client.node)
		if err != nil {
			return "", err
		}
		wg.Go(func() {
			s.c.Run(time.Duration(i) * 37 * time.Microsecond) // no two ballots at one instant
			for range each {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				value, popped, err := popOnce(ctx, co, keyspace, key, client.inside)
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					failed[errorKind(err)]++
				case !popped:
					empty++
				case client.inside:
					taken[value]++
					takenBy["inside"]++
				default:
					taken[value]++
					takenBy["outside"]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	twice := 0
	for _, n := range taken {
		if n > 1 {
			twice++
		}
	}
	coll, err := s.readAtQuorum(clients[0].node, keyspace, key)
	if err != nil {
		return "", err
	}
	left := len(list.Items(coll.Elements))
	return fmt.Sprintf("taken outside %d, inside %d; empty %d, failed %v; items taken twice %d (of %d items taken), items left %d",
		takenBy["outside"], takenBy["inside"], empty, failed, twice, len(taken), left), nil
}

// popOnce pops list key's head once, inside a transaction over the list or not.
func popOnce(ctx context.Context, co *coord.Coordinator, keyspace string, key []byte, inside bool) (value string, popped bool, err error) {
	if inside {
		res, err := co.UpdateBatch(ctx, keyspace, [][]byte{key}, [][]byte{key}, consistency.Serial, popInside(key))
		if err != nil || !res.Applied {
			return "", false, err
		}
		return res.Reply.(string), true, nil
	}
	coll, err := co.ReadCollection(ctx, keyspace, key, consistency.Quorum)
	if err != nil {
		return "", false, err
	}
	return takeHead(ctx, co, keyspace, key, coll)
}
