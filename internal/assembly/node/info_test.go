package node

import (
	"strings"
	"testing"

	"github.com/kuradb/kura/api/kurav1"
)

// A node whose seeds are other ports of a running node (its client, Redis and HTTP
// ports) never joins, and says why for each seed: a client port speaks HTTP/2, the others
// answer nothing. A wrong --seeds must not look like a healthy cluster of one.
func TestInfoReportsSeedsThatAreNotKuraNodes(t *testing.T) {
	t.Parallel()
	good := startAllPortsNode(t, "good", "dc1", "")
	wrong := map[string]string{
		good.ClientAddr(): "--client port",
		good.RESPAddr():   "answered nothing",
		good.HTTPAddr():   "answered nothing",
	}
	var seeds []string
	for addr := range wrong {
		seeds = append(seeds, addr)
	}
	lost := startAllPortsNode(t, "lost", "dc1", "", seeds...)
	api := apiBackend{lost}
	var info *kurav1.NodeInfo
	waitFor(t, "every seed's error says why", func() bool {
		var err error
		if info, err = api.Info(); err != nil {
			t.Fatal(err)
		}
		for _, s := range info.GetMembership().GetSeeds() {
			if !strings.Contains(s.GetError(), wrong[s.GetAddr()]) {
				return false
			}
		}
		return len(info.GetMembership().GetSeeds()) == len(wrong)
	})
	if info.GetMembership().GetJoined() {
		t.Errorf("Info says lost joined a cluster through %v", seeds)
	}
	// The node that is a kura node answers its own Info as joined.
	if own, err := (apiBackend{good}).Info(); err != nil || !own.GetMembership().GetJoined() {
		t.Errorf("good's Info = %v, %v; want joined", own.GetMembership(), err)
	}
}
