// kura console: polls /api/console once a second and renders the report. Plain DOM, no
// framework, nothing loaded from elsewhere. Values from the node (keyspace names, ids)
// go into text nodes only, never into markup.
"use strict";

const POLL_MS = 1000;

// Node colours for the ring and its legend, assigned in id order so that they stay put
// between updates.
const PALETTE = ["#4cc9f0", "#f72585", "#b8e986", "#ffb703", "#9d8df1", "#2ec4b6",
  "#ff7b54", "#8ecae6", "#e9c46a", "#c77dff", "#80ed99", "#f4a261"];

const $ = (id) => document.getElementById(id);

// el builds an element: attrs are set as attributes (class, data-*), children appended
// as nodes or text.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

// Formats. Zero and unknown figures show "-", never a made-up 0.
const dash = "-";

function fmtInt(n) {
  return Math.round(n).toLocaleString("en-US");
}

function fmtBytes(n) {
  if (n === null || n === undefined) return dash;
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? fmtInt(n) : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)) + " " + units[i];
}

function fmtRate(n, unit) {
  if (n === null || n === undefined) return dash;
  if (n === 0) return "0 " + unit;
  if (n < 10) return n.toFixed(1) + " " + unit;
  return fmtInt(n) + " " + unit;
}

function fmtByteRate(n) {
  if (n === null || n === undefined) return dash;
  if (n === 0) return "0 B/s";
  return fmtBytes(n) + "/s";
}

function fmtSeconds(s) {
  if (s === null || s === undefined) return dash;
  if (s < 1e-3) return (s * 1e6).toFixed(0) + " µs";
  if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : s < 0.1 ? 1 : 0) + " ms";
  return s.toFixed(2) + " s";
}

function fmtUptime(s) {
  if (s === null || s === undefined) return dash;
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  if (d) return d + "d " + h + "h";
  if (h) return h + "h " + m + "m";
  if (m) return m + "m " + Math.floor(s % 60) + "s";
  return Math.floor(s) + "s";
}

function fmtShare(f) {
  return (f * 100).toFixed(1) + " %";
}

function stateBadge(state) {
  return el("span", { class: "badge state-" + state }, state);
}

function fill(tbody, rows, empty, columns) {
  tbody.replaceChildren(...(rows.length ? rows : [el("tr", { class: "empty" }, el("td", { colspan: columns }, empty))]));
}

function renderHeader(r) {
  const s = r.self;
  $("self-node").textContent = s.id;
  $("self-detail").textContent = "· " + s.dc + " · " + (s.http_addr || s.addr);
  $("self-version").textContent = s.id + " runs " + s.version + ".";
  document.title = "kura console · " + s.id;
}

function renderTiles(r) {
  const up = r.nodes.filter((n) => n.state === "up").length;
  $("tile-up").replaceChildren(el("span", { class: up === r.nodes.length ? "ok" : "warn" }, up), el("span", { class: "of" }, " / " + r.nodes.length));
  $("tile-dcs").textContent = new Set(r.nodes.map((n) => n.dc)).size;
  const windowed = r.rate_window_seconds > 0;
  $("tile-rps").textContent = windowed ? fmtRate(r.latency.reduce((a, l) => a + l.requests_per_second, 0), "") : dash;
  const wan = r.wan.filter((t) => t.from !== t.to).reduce((a, t) => a + t.bytes_per_second, 0);
  $("tile-wan").textContent = windowed ? fmtByteRate(wan) : dash;
  $("tile-hints").textContent = fmtInt(r.hints_pending);
  $("tile-hints").className = "value" + (r.hints_pending > 0 ? " warn" : "");
  const off = r.self.clock_offset_seconds;
  // The offset's number and unit stay together when the tile wraps.
  $("tile-power").textContent = r.self.power + " · " + (off >= 0 ? "+" : "−") + fmtSeconds(Math.abs(off)).replace(" ", "\u00a0");
}

function renderNodes(r, colours) {
  const byDC = new Map();
  for (const n of r.nodes) {
    if (!byDC.has(n.dc)) byDC.set(n.dc, []);
    byDC.get(n.dc).push(n);
  }
  // One table, one body per DC under a header row, so that the columns line up across DCs.
  const bodies = [...byDC.keys()].sort().map((dc) => {
    const nodes = byDC.get(dc);
    const up = nodes.filter((n) => n.state === "up").length;
    const head = el("tr", { class: "dc-row" }, el("td", { colspan: 9 },
      el("span", { class: "dc-name" }, dc),
      el("span", { class: "dc-count " + (up === nodes.length ? "ok" : "warn") }, up + " / " + nodes.length + " up")));
    const rows = nodes.map((n) =>
      el("tr", { "data-node": n.id, "data-state": n.state, class: n.self ? "self" : null },
        el("td", {}, el("span", { class: "swatch", style: "background:" + colours.get(n.id) }), n.id,
          n.self ? el("span", { class: "you" }, "this node") : null),
        el("td", {}, stateBadge(n.state)),
        el("td", { class: "muted" }, n.status),
        el("td", { class: "num" }, el("span", { class: "meter" }, el("span", { style: "width:" + (n.share * 100).toFixed(1) + "%" })), fmtShare(n.share)),
        el("td", { class: "num" }, fmtBytes(n.load_bytes)),
        el("td", { class: "num" }, n.load_keys === null ? dash : fmtInt(n.load_keys)),
        el("td", { class: "num" }, fmtUptime(n.uptime_seconds)),
        el("td", { class: "mono muted" }, n.addr),
        el("td", { class: "num muted" }, n.tier)));
    return el("tbody", { "data-dc": dc }, head, ...rows);
  });
  const table = $("dcs");
  table.replaceChildren(table.tHead, ...bodies);
}

// arcPath draws a donut segment between two fractions of the ring, clockwise from the top.
function arcPath(start, end, outer, inner) {
  let span = end - start;
  if (span <= 0) span += 1; // the arc that wraps past the top of the ring, or a lone token's whole ring
  if (span >= 0.9999) span = 0.9999; // a full circle has no distinct end point
  const a0 = start * 2 * Math.PI - Math.PI / 2, a1 = a0 + span * 2 * Math.PI;
  const large = span > 0.5 ? 1 : 0;
  const p = (r, a) => (r * Math.cos(a)).toFixed(3) + " " + (r * Math.sin(a)).toFixed(3);
  return "M" + p(outer, a0) + " A" + outer + " " + outer + " 0 " + large + " 1 " + p(outer, a1) +
    " L" + p(inner, a1) + " A" + inner + " " + inner + " 0 " + large + " 0 " + p(inner, a0) + " Z";
}

function renderRing(r, colours) {
  const states = new Map(r.nodes.map((n) => [n.id, n.state]));
  const ring = $("ring");
  const arcs = r.ring.map((a) => {
    const path = svg("path", { d: arcPath(a.start, a.end, 100, 66), fill: colours.get(a.node) || "#555",
      class: "arc" + (states.get(a.node) === "up" ? "" : " arc-off") });
    const title = svg("title", {});
    title.textContent = a.node + " (" + fmtShare(((a.end - a.start + 1) % 1) || 1) + ")";
    path.append(title);
    return path;
  });
  const centre = svg("text", { x: 0, y: -4, class: "ring-count" });
  centre.textContent = r.ring.length;
  const sub = svg("text", { x: 0, y: 14, class: "ring-sub" });
  sub.textContent = "vnodes";
  ring.replaceChildren(...arcs, centre, sub);

  const onRing = r.nodes.filter((n) => n.share > 0).sort((a, b) => b.share - a.share || a.id.localeCompare(b.id));
  $("ring-legend").replaceChildren(...onRing.map((n) =>
    el("li", { "data-node": n.id },
      el("span", { class: "swatch", style: "background:" + colours.get(n.id) }),
      el("span", { class: "legend-id" }, n.id, n.state === "up" ? null : el("span", { class: "legend-state state-text-" + n.state }, n.state)),
      el("span", { class: "muted" }, n.dc),
      el("span", { class: "legend-share" }, fmtShare(n.share)))));
}

function renderWAN(r) {
  const windowed = r.rate_window_seconds > 0;
  $("wan-hint").textContent = windowed ? "sent by this node, over " + r.rate_window_seconds.toFixed(1) + " s" : "sent by this node";
  const rows = [...r.wan].sort((a, b) => (a.from === a.to) - (b.from === b.to) || a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
  const top = Math.max(1, ...rows.map((t) => t.bytes_per_second));
  fill($("wan").tBodies[0], rows.map((t) =>
    el("tr", { "data-pair": t.from + ">" + t.to, class: t.from === t.to ? "lan" : null },
      el("td", {}, t.from), el("td", {}, t.to),
      el("td", {}, el("span", { class: "tag" + (t.from === t.to ? "" : " tag-wan") }, t.from === t.to ? "LAN" : "WAN")),
      el("td", { class: "num" }, el("span", { class: "meter" }, el("span", { style: "width:" + (100 * t.bytes_per_second / top).toFixed(1) + "%" })),
        windowed ? fmtByteRate(t.bytes_per_second) : dash),
      el("td", { class: "num" }, windowed ? fmtRate(t.messages_per_second, "") : dash),
      el("td", { class: "num" }, fmtBytes(t.bytes)))), "no traffic yet", 6);
}

function renderRequests(r) {
  $("latency-hint").textContent = r.latency_window_seconds > 0 ? "percentiles over " + r.latency_window_seconds.toFixed(0) + " s" : "";
  const windowed = r.rate_window_seconds > 0;
  fill($("requests").tBodies[0], r.latency.map((l) =>
    el("tr", { "data-level": l.level, "data-op": l.op },
      el("td", {}, el("span", { class: "level" }, l.level)), el("td", {}, l.op),
      el("td", { class: "num" }, windowed ? fmtRate(l.requests_per_second, "") : dash),
      el("td", { class: "num" }, fmtSeconds(l.p50_seconds)),
      el("td", { class: "num" }, fmtSeconds(l.p95_seconds)),
      el("td", { class: "num" }, fmtSeconds(l.p99_seconds)),
      el("td", { class: "num" }, fmtSeconds(l.mean_seconds)),
      el("td", { class: "num" }, fmtInt(l.count)))), "no client request served by this node yet", 8);
}

function renderKeyspaces(r) {
  fill($("keyspaces").tBodies[0], r.keyspaces.map((k) =>
    el("tr", { "data-keyspace": k.name },
      el("td", {}, k.name), el("td", { class: "mono" }, k.replication || dash),
      el("td", {}, k.partitioner || "hash"), el("td", { class: "mono" }, k.erasure || dash))), "no keyspace", 4);
}

function render(r) {
  const colours = new Map(r.nodes.map((n, i) => [n.id, PALETTE[i % PALETTE.length]]));
  renderHeader(r);
  renderTiles(r);
  renderNodes(r, colours);
  renderRing(r, colours);
  renderWAN(r);
  renderRequests(r);
  renderKeyspaces(r);
}

// setLive shows whether the last poll answered; a page that lost its node keeps the last
// figures, dimmed, and says since when.
function setLive(ok, text) {
  $("live-dot").className = "dot " + (ok ? "dot-ok" : "dot-bad");
  $("live-text").textContent = text;
  $("main").classList.toggle("stale", !ok);
  document.body.dataset.live = ok ? "yes" : "no";
}

let lastAnswer = null;

async function poll() {
  try {
    const resp = await fetch("/api/console", { cache: "no-store" });
    if (!resp.ok) throw new Error(resp.status + " " + (await resp.text()).trim());
    const report = await resp.json();
    render(report);
    lastAnswer = new Date(report.at);
    setLive(true, "live · " + lastAnswer.toLocaleTimeString("en-GB"));
  } catch (err) {
    setLive(false, lastAnswer ? "no answer since " + lastAnswer.toLocaleTimeString("en-GB") + " (" + err.message + ")" : "no answer (" + err.message + ")");
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

poll();
