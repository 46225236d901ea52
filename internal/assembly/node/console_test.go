package node

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/base/version"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/faults"
	"github.com/kuradb/kura/internal/service/console"
)

// browserDeadline bounds each wait for the page to show something: generous, since a
// loaded CI machine runs the cluster, the browser and the race detector on two cores.
const browserDeadline = 60 * time.Second

// findBrowser returns a Chromium or Chrome to drive, or skips the test when there is
// none, unless KURA_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("KURA_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium or Chrome on PATH and KURA_REQUIRE_BROWSER=1: install one (apt-get install chromium)")
	}
	t.Skip("no Chromium or Chrome on PATH: skipping the web console's browser test (apt-get install chromium to run it)")
	return ""
}

// artifactDir is where the test leaves its screenshots: $KURA_ARTIFACTS for CI to keep,
// or else the test's temporary directory.
func artifactDir(t *testing.T) string {
	if dir := os.Getenv("KURA_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// startConsoleNode starts an in-memory node with the admin HTTP port (the console), the
// Redis front end to send it requests, and fault injection to cut it off as a crash does.
func startConsoleNode(t *testing.T, id, dc, defaultReplication string, seeds ...string) *Node {
	t.Helper()
	n, err := Start(Config{
		ID: id, DC: dc, Listen: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Seeds: seeds, InMemory: true, DefaultReplication: defaultReplication,
		GossipInterval: 50 * time.Millisecond, EnableFaults: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// TestConsoleInBrowserShowsTheClusterAndAKilledNode opens n1's console in headless
// Chromium, checks that it names n1 and shows the three nodes, their keyspaces and the
// requests served, then kills n3 and waits until the page marks it down.
func TestConsoleInBrowserShowsTheClusterAndAKilledNode(t *testing.T) {
	browser := findBrowser(t)
	nodes := startCluster(t, startConsoleNode, "dc1=2,dc2=1", "dc1", "dc1", "dc2")
	n1, n3 := nodes[0], nodes[2]
	ctx := context.Background()
	if err := n1.CreateKeyspace(ctx, schema.Keyspace{Name: "blobs", Erasure: schema.Erasure{M: 3, K: 2}}); err != nil {
		t.Fatal(err)
	}
	// A light load of QUORUM writes and ONE reads for the whole test, so that the page
	// has levels, rates, percentiles and WAN traffic to show.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var load sync.WaitGroup
	for _, level := range []string{"QUORUM", "ONE"} {
		rdb := redis.NewClient(&redis.Options{Addr: n1.RESPAddr(), OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "KURA.CONSISTENCY", level).Err()
		}})
		defer rdb.Close()
		load.Go(func() { keepBusy(loadCtx, rdb, level == "QUORUM") })
	}
	defer load.Wait()
	defer stopLoad()

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1440, 1000))...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	dir := artifactDir(t)

	// waitFor polls the page until the JavaScript expression holds; on a timeout it fails
	// with the page's text and a screenshot, to show what the page showed instead.
	waitFor := func(what, expression string) {
		t.Helper()
		if _, err := chromedp.Run(browserCtx, chromedp.Poll[bool](expression,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserDeadline))); err != nil {
			text, _ := chromedp.Run(browserCtx, chromedp.Evaluate[string](`document.body.innerText`))
			shot := screenshot(t, browserCtx, dir, "console-failed.png")
			t.Fatalf("console never showed %s: %v\nscreenshot %s; the page read:\n%s", what, err, shot, text)
		}
	}

	if err := chromedp.Do(browserCtx, chromedp.Navigate("http://"+n1.HTTPAddr()+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor("the answering node n1", `document.getElementById("self-node").textContent === "n1"`)
	waitFor("n1, n2 and n3 up", `["n1", "n2", "n3"].every(id =>
		document.querySelector('#dcs tr[data-node="' + id + '"]')?.dataset.state === "up")`)
	waitFor("n3 in dc2", `document.querySelector('[data-dc="dc2"] tr[data-node="n3"]') !== null`)
	waitFor("the keyspaces", `document.querySelector('#keyspaces tr[data-keyspace="default"]')?.innerText.includes("dc1=2,dc2=1") &&
		document.querySelector('#keyspaces tr[data-keyspace="blobs"]')?.innerText.includes("3,2")`)
	waitFor("QUORUM puts and ONE gets with their latencies", `["QUORUM put", "ONE get"].every(series => {
		const [level, op] = series.split(" ");
		const p50 = document.querySelector('#requests tr[data-level="' + level + '"][data-op="' + op + '"] td:nth-child(4)');
		return p50 !== null && /^[0-9.]+ (µs|ms|s)$/.test(p50.textContent);
	})`)
	waitFor("dc1 to dc2 traffic", `document.querySelector('#wan tr[data-pair="dc1>dc2"]') !== null`)
	waitFor("a ring of three owners", `document.querySelectorAll("#ring-legend li").length === 3`)

	// Killed, as a crash would: cut off first, so its shutdown notice reaches nobody, and
	// the others find it dead by their failure detector.
	if err := n3.faults.Set(faults.Spec{Partitioned: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if err := n3.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor("n3 down", `document.querySelector('#dcs tr[data-node="n3"]')?.dataset.state === "down"`)
	waitFor("n1 and n2 still up", `["n1", "n2"].every(id => document.querySelector('#dcs tr[data-node="' + id + '"]')?.dataset.state === "up")`)
	t.Logf("screenshot of n1's console with n3 down: %s", screenshot(t, browserCtx, dir, "console.png"))

	// The widths of common screens: the page fits each without a sideways scroll, and
	// nothing on it is cut.
	for _, width := range []int64{1280, 1400, 1920} {
		if _, err := chromedp.Run(browserCtx, chromedp.EmulateViewport(width, 1000)); err != nil {
			t.Fatal(err)
		}
		problems, err := chromedp.Run(browserCtx, chromedp.Evaluate[string](layoutProblems))
		if err != nil {
			t.Fatal(err)
		}
		if problems != "" {
			shot := screenshot(t, browserCtx, dir, fmt.Sprintf("console-%dpx.png", width))
			t.Errorf("at %d px the console does not fit: %s (screenshot %s)", width, problems, shot)
		}
	}
}

// layoutProblems is a JavaScript expression naming what does not fit the window: a page
// wider than the window, an element that ends past its right edge, or one whose content is
// cut (hidden, clipped or ellipsed overflow); empty when everything fits.
const layoutProblems = `(() => {
	const width = document.documentElement.clientWidth;
	const problems = [];
	if (document.documentElement.scrollWidth > width) {
		problems.push("the page is " + document.documentElement.scrollWidth + " px wide");
	}
	const name = el => el.id ? "#" + el.id : el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className.split(" ")[0] : "");
	for (const el of document.body.querySelectorAll("*")) {
		const box = el.getBoundingClientRect();
		if (box.width === 0 || box.height === 0) continue;
		if (box.right > width + 1) problems.push(name(el) + " ends at " + Math.round(box.right) + " px");
		const style = getComputedStyle(el);
		const clips = ["hidden", "clip", "auto", "scroll"].includes(style.overflowX) || style.textOverflow === "ellipsis";
		if (clips && el.scrollWidth > el.clientWidth + 1) problems.push(name(el) + " is cut (" + el.scrollWidth + " px in " + el.clientWidth + ")");
	}
	return problems.slice(0, 10).join("; ");
})()`

// consoleReport fetches n's /api/console.
func consoleReport(t *testing.T, n *Node) console.Report {
	t.Helper()
	var report console.Report
	if err := json.Unmarshal([]byte(httpGet(t, n, "/api/console")), &report); err != nil {
		t.Fatalf("/api/console of %s: %v", n.ID(), err)
	}
	return report
}

// TestConsoleReportShowsEachNodesView puts n4 to sleep and reads the console's JSON from
// n1 and from n4 itself (whose admin port stays up while it sleeps): each names itself,
// both see n4 asleep and the others up, with the ring and the keyspaces.
func TestConsoleReportShowsEachNodesView(t *testing.T) {
	t.Parallel()
	nodes := startPowerCluster(t, true)
	n1, n4 := nodes[0], nodes[3]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if state, err := n1.SetPower(ctx, "n4", "sleep"); err != nil || state != power.Asleep {
		t.Fatalf("sleep n4: %v, %v", state, err)
	}
	waitUntil(t, "n1 sees n4 asleep", func() bool { return n1.View().State("n4") == cluster.StateAsleep })

	for _, n := range []*Node{n1, n4} {
		report := consoleReport(t, n)
		if report.Self.ID != n.ID() || report.Self.HTTPAddr != n.HTTPAddr() {
			t.Errorf("%s's console names %+v", n.ID(), report.Self)
		}
		states, share := map[string]string{}, 0.0
		for _, node := range report.Nodes {
			states[node.ID] = node.State
			share += node.Share
			if node.Self != (node.ID == n.ID()) {
				t.Errorf("%s's console marks %s self=%v", n.ID(), node.ID, node.Self)
			}
		}
		for _, node := range report.Nodes {
			// Every node gossips its start time from its first round; asleep is not down.
			if node.UptimeSeconds == nil || *node.UptimeSeconds <= 0 {
				t.Errorf("%s's console: %s's uptime %v", n.ID(), node.ID, node.UptimeSeconds)
			}
		}
		want := map[string]string{"n1": "up", "n2": "up", "n3": "up", "n4": "asleep"}
		if !maps.Equal(states, want) {
			t.Errorf("%s's console: states %v, want %v", n.ID(), states, want)
		}
		if math.Abs(share-1) > 1e-9 {
			t.Errorf("%s's console: shares sum to %v", n.ID(), share)
		}
		if owners := ringOwners(report.Ring); len(report.Ring) != 4*ring.DefaultVnodes || len(owners) != 4 {
			t.Errorf("%s's console: %d arcs of %d owners, want %d of 4", n.ID(), len(report.Ring), len(owners), 4*ring.DefaultVnodes)
		}
		var keyspaces []string
		for _, ks := range report.Keyspaces {
			keyspaces = append(keyspaces, ks.Name+" "+ks.Replication+" "+ks.Partitioner)
		}
		if want := []string{"app simple=3 grouped", "default " + DefaultReplication + " grouped"}; !slices.Equal(keyspaces, want) {
			t.Errorf("%s's console: keyspaces %q, want %q", n.ID(), keyspaces, want)
		}
	}
	if self := consoleReport(t, n4).Self; self.Power != "asleep" || self.Version != version.Get().String() {
		t.Errorf("n4's console says it is %s and runs %q, want asleep and %q", self.Power, self.Version, version.Get())
	}
	// A node counts its own load when it starts, and again every ten seconds.
	waitUntil(t, "n1's console shows its own load", func() bool {
		for _, node := range consoleReport(t, n1).Nodes {
			if node.ID == "n1" {
				return node.LoadBytes != nil && node.LoadKeys != nil
			}
		}
		return false
	})
	// The other admin endpoints are still served beside the console.
	for _, path := range []string{"/healthz", "/status", "/metrics", "/"} {
		httpGet(t, n1, path)
	}
}

// ringOwners counts the arcs of each owner.
func ringOwners(arcs []console.Arc) map[string]int {
	owners := map[string]int{}
	for _, a := range arcs {
		owners[a.Node]++
	}
	return owners
}

// keepBusy sends requests through rdb, writes or reads, at most one every 10 ms until ctx
// ends. Failures are the page's business, not the load's: a request around the kill may
// fail.
func keepBusy(ctx context.Context, rdb *redis.Client, write bool) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		key := fmt.Sprintf("k%d", i%100)
		if write {
			rdb.Set(ctx, key, "value", 0)
		} else {
			rdb.Get(ctx, key)
		}
	}
}

// screenshot saves the whole page as a PNG in dir and returns its path.
func screenshot(t *testing.T, ctx context.Context, dir, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return ""
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
		return ""
	}
	return path
}
