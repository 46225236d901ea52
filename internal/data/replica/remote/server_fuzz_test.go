package remote

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
	"github.com/kuradb/kura/internal/io/transport"
)

// FuzzServerHandle hands arbitrary payloads of every replica kind to a Server over an
// in-memory replica holding keyspace "ks", as a node's handler does with whatever a peer
// sends. Handling must not panic; what it answers must decode as that kind's answer.
func FuzzServerHandle(f *testing.F) {
	_, _, _, net := newReplica(f, storage.Options{}, sched.Config{})
	server := net.server
	kinds := []transport.Kind{transport.KindMutate, transport.KindRead, transport.KindScan, transport.KindChunkRead, transport.KindStreamRange, transport.KindTreeDigest,
		transport.KindPaxosPrepare, transport.KindPaxosPropose, transport.KindPaxosCommit, transport.KindScanKeys, transport.KindReadMany}
	ballot := &kurav1.Ballot{Time: 1 << 20, Node: "n"}
	proposal := &kurav1.PaxosProposal{Ballot: ballot, Origin: ballot, Record: &kurav1.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1 << 20}}
	seeds := []proto.Message{
		&kurav1.MutateRequest{Keyspace: "ks", Records: []*kurav1.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1 << 20}}},
		&kurav1.ReadRequest{Keyspace: "ks", Key: []byte("k")},
		&kurav1.ReplicaScanRequest{Keyspace: "ks", Limit: -1, Ranges: []*kurav1.TokenRange{{Start: 5, End: 5}}},
		&kurav1.ReadRequest{Keyspace: "ks", Key: []byte("k")},
		&kurav1.ReplicaScanRequest{Keyspace: "ks", Start: []byte("z"), End: []byte("a"), KeysOnly: true},
		&kurav1.TreeDigestRequest{Keyspace: "ks", Range: &kurav1.TokenRange{Start: 1, End: 3}, Depth: 1 << 31},
		&kurav1.PaxosPrepareRequest{Keyspace: "ks", Key: []byte("k"), Ballot: ballot},
		&kurav1.PaxosProposeRequest{Keyspace: "ks", Proposal: proposal},
		&kurav1.PaxosCommitRequest{Keyspace: "ks", Proposal: proposal},
		&kurav1.ScanKeysRequest{Keyspace: "ks", Spans: []*kurav1.PositionSpan{{From: 9, To: 3}}, Limit: -1, Ranges: []*kurav1.TokenRange{{Start: 5, End: 5}}},
		&kurav1.ReadManyRequest{Keyspace: "ks", Keys: [][]byte{[]byte("k"), []byte("absent"), nil}, ValueBytesMax: 1},
	}
	for i, seed := range seeds {
		payload, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(i), payload)
	}
	f.Fuzz(func(t *testing.T, kindIndex byte, payload []byte) {
		kind := kinds[int(kindIndex)%len(kinds)]
		answer, err := server.Handle(context.Background(), transport.Peer{ID: "fuzzer"}, kind, payload)
		if err != nil {
			return
		}
		var decoded proto.Message
		switch kind {
		case transport.KindRead:
			decoded = &kurav1.ReadResponse{}
		case transport.KindReadMany:
			decoded = &kurav1.ReadManyResponse{}
		case transport.KindScan, transport.KindStreamRange:
			decoded = &kurav1.ReplicaScanResponse{}
		case transport.KindTreeDigest:
			decoded = &kurav1.TreeDigestResponse{}
		case transport.KindPaxosPrepare:
			decoded = &kurav1.PaxosPrepareResponse{}
		case transport.KindPaxosPropose:
			decoded = &kurav1.PaxosProposeResponse{}
		case transport.KindScanKeys:
			decoded = &kurav1.ScanKeysResponse{}
		case transport.KindChunkRead:
			if _, _, err := decodeChunkAnswer([]byte("k"), answer); err != nil {
				t.Fatalf("chunk_read answer %x does not decode: %v", answer, err)
			}
			return
		default:
			return
		}
		if err := proto.Unmarshal(answer, decoded); err != nil {
			t.Fatalf("%v answer %x does not decode: %v", kind, answer, err)
		}
	})
}
