package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// statusView is the part of `kura status --json` the settle check reads: the members the
// answering node knows, left and removed ones included.
type statusView struct {
	Self  string `json:"self"`
	Nodes []struct {
		ID       string `json:"id"`
		Alive    bool   `json:"alive"`
		Status   string `json:"status"` // booting, joining, normal, leaving, rebuilding, left, removed
		State    string `json:"state"`  // up, down, joining, leaving
		Replaces string `json:"replaces"`
	} `json:"nodes"`
}

// parseStatus reads `kura status --json`.
func parseStatus(out string) (statusView, error) {
	var v statusView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return v, fmt.Errorf("kura status --json: %w", err)
	}
	return v, nil
}

// expectation is the cluster a step should settle into: the nodes that run and are on the
// ring, and the ones that left it (decommissioned, removed, replaced) for good.
type expectation struct {
	live []string
	gone []string
}

// unsettled says why the views (by node id, one from each live node) do not show the
// expected cluster yet, or "" when every one does: each live node normal, up and alive,
// replacing no member; each gone node left or removed, or forgotten; no other node. A
// replacement names the node it replaced for good, in --json too: as in kura status's
// table, the replacement is under way only while that node is still a member.
func unsettled(want expectation, views map[string]statusView) string {
	var reasons []string
	for _, self := range want.live {
		v, ok := views[self]
		if !ok {
			reasons = append(reasons, self+" did not answer kura status")
			continue
		}
		departed := map[string]bool{}
		for _, n := range v.Nodes {
			departed[n.ID] = n.Status == "left" || n.Status == "removed"
		}
		seen := map[string]bool{}
		for _, n := range v.Nodes {
			seen[n.ID] = true
			replacing := n.Replaces != "" && !departed[n.Replaces]
			switch {
			case slices.Contains(want.live, n.ID):
				if n.Status != "normal" || n.State != "up" || !n.Alive || replacing {
					reasons = append(reasons, fmt.Sprintf("%s sees %s %s", self, n.ID, describeMember(n.Status, n.State, n.Alive, n.Replaces)))
				}
			case slices.Contains(want.gone, n.ID):
				if n.Status != "left" && n.Status != "removed" {
					reasons = append(reasons, fmt.Sprintf("%s sees %s %s, not left or removed", self, n.ID, describeMember(n.Status, n.State, n.Alive, n.Replaces)))
				}
			default:
				reasons = append(reasons, fmt.Sprintf("%s sees a member the sequence did not start: %s %s", self, n.ID, n.Status))
			}
		}
		for _, id := range want.live {
			if !seen[id] {
				reasons = append(reasons, fmt.Sprintf("%s does not know %s", self, id))
			}
		}
	}
	sort.Strings(reasons)
	return strings.Join(reasons, "; ")
}

func describeMember(status, state string, alive bool, replaces string) string {
	s := status + "/" + state
	if !alive {
		s += " (not alive)"
	}
	if replaces != "" {
		s += " (replacing " + replaces + ")"
	}
	return s
}
