package storage

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestPaxosStateSurvivesACrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	e, err := Open(Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.UpdatePaxos("ks", []byte("k"), false, func(state []byte) ([]byte, error) {
		if state != nil {
			t.Errorf("a key never updated has state %q", state)
		}
		return []byte("promised 5"), nil
	}); err != nil {
		t.Fatal(err)
	}
	e, _ = crashAndReopen(t, e, fs)
	defer e.Close()
	if state, err := e.PaxosState("ks", []byte("k"), false); err != nil || string(state) != "promised 5" {
		t.Errorf("after a crash: state %q, %v; want the promise", state, err)
	}
	// The state lives apart from the keyspace's records, and GC walks past it.
	if _, found := mustGet(t, e, "ks", "k"); found {
		t.Errorf("the acceptor state reads as a record of the keyspace")
	}
	if _, err := e.CollectGarbage(time.Now().Add(365*24*time.Hour), nil); err != nil {
		t.Errorf("CollectGarbage over an acceptor state: %v", err)
	}
}

func TestUpdatePaxos(t *testing.T) {
	e := openMem(t, Options{})
	failed := errors.New("refused")
	tests := []struct {
		name    string
		next    []byte
		err     error
		want    string
		wantErr error
	}{
		{"a new state is stored", []byte("one"), nil, "one", nil},
		{"nil stores nothing", nil, nil, "one", nil},
		{"an error stores nothing", []byte("two"), failed, "one", failed},
		{"a changed state replaces the old one", []byte("three"), nil, "three", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.UpdatePaxos("ks", []byte("k"), false, func([]byte) ([]byte, error) { return tt.next, tt.err })
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("UpdatePaxos: %v, want %v", err, tt.wantErr)
			}
			if state, err := e.PaxosState("ks", []byte("k"), false); err != nil || string(state) != tt.want {
				t.Errorf("state %q, %v; want %q", state, err, tt.want)
			}
		})
	}
	if state, err := e.PaxosState("other", []byte("k"), false); err != nil || state != nil {
		t.Errorf("another keyspace's key has state %q, %v", state, err)
	}
	if err := e.UpdatePaxos("", []byte("k"), false, func([]byte) ([]byte, error) { return nil, nil }); !errors.Is(err, ErrInvalidKeyspace) {
		t.Errorf("empty keyspace: %v", err)
	}
}

// TestUpdatePaxosSerializesAKey has many goroutines each read-modify-write one key's
// state: with the key locked throughout, none may read a state another is replacing.
func TestUpdatePaxosSerializesAKey(t *testing.T) {
	e := openMem(t, Options{})
	const writers = 32
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.UpdatePaxos("ks", []byte("k"), false, func(state []byte) ([]byte, error) {
				n := 0
				if state != nil {
					var err error
					if n, err = strconv.Atoi(string(state)); err != nil {
						return nil, err
					}
				}
				return []byte(strconv.Itoa(n + 1)), nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if state, err := e.PaxosState("ks", []byte("k"), false); err != nil || string(state) != strconv.Itoa(writers) {
		t.Errorf("after %d increments the state is %q, %v", writers, state, err)
	}
}
