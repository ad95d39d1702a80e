// gpudoc serve's live dashboard. Reads the JSON API of the same origin (docs/serve.md):
//   /api/v1/snapshot           the latest values, processes, findings, health, baselines
//   /api/v1/history?seconds=S  the waveforms of the last S seconds, one point per sample
//   /api/v1/events             server-sent events: "snapshot" about once a second
// Every snapshot is applied to the page; each one also fetches the history points that arrived
// since the last one, so the plots keep the sensors' full rate. Every string from the API goes in
// with textContent, never as markup. The page marks itself for the headless-browser test:
// <body data-rendered="ok"> after the first render, data-updates = snapshots applied, data-plots,
// data-connection (what the badge says), data-stream (the event stream's state), data-timezone.
// Times are 24-hour, in local time or UTC as the header's toggle says (kept in localStorage), each
// with its zone named; every time on the page is a <time datetime="ISO"> the toggle re-renders.
// A module (strict, its own scope, run after the deferred plot library), loaded by index.html.

var KEEP_S = 900;          // the longest span offered, and what the API serves at most
var STALE_AFTER_MS = 5000; // no snapshot for this long: shown as stale
var WIDE_EVERY = 10;       // every 10th history request spans WIDE_S seconds, not just the gap
var WIDE_S = 30;           // > the slowest group's read period (utilization: 10 s by default)
var SLOWDOWN = { sw_power_cap: 1, hw_slowdown: 1, sw_thermal_slowdown: 1, hw_thermal_slowdown: 1,
                 hw_power_brake_slowdown: 1 };
var SEVERITY_RANK = { critical: 0, warning: 1, info: 2 };
var GIB = 1024 * 1024 * 1024;
var ZONE_KEY = "gpudoc.timezone"; // localStorage: "utc" or "local"

// One plot per row: {key, title, unit, fixed, series: [metric, label, colour, scale factor, dashed]},
// from the "dashboard" layout of plot_catalog.json (the one catalog of curves, which the HTML report
// of gpudoc diagnose draws from too); start() loads it before the first snapshot.
var PLOTS = [];
function plotsOf(catalog) {
  return catalog.dashboard.map(function (p) {
    return { key: p.key, title: p.title, unit: catalog.series[p.series[0]].unit, fixed: p.range,
             series: p.series.map(function (m) {
               var c = catalog.series[m];
               return [m, c.label, c.color, c.scale, c.dashed];
             }) };
  });
}
// The current values shown above each GPU's plots: [metric, label, unit, scale, digits].
var VALUES = [
  ["gpu_utilization_percent", "util", "%", 1, 0],
  ["gpm_sm_activity_percent", "SM activity", "%", 1, 0],
  ["power_watts", "power", "W", 1, 0],
  ["power_limit_watts", "limit", "W", 1, 0],
  ["gpu_temperature_celsius", "temp", "°C", 1, 0],
  ["memory_temperature_celsius", "HBM", "°C", 1, 0],
  ["sm_clock_mhz", "SM clock", "MHz", 1, 0],
  ["memory_used_bytes", "memory", "GiB", 1 / GIB, 1]
];

var spanS = 600;
var gpus = {};             // gpu index -> view state
var lastSnapshot = null;
var lastSnapshotAt = 0;    // Date.now() when the last snapshot was applied
var updates = 0;
var historyBusy = false;
var historyCount = 0;
var rendered = false;
var zoneMode = storedZone(); // "local" or "utc"
var stream = "connecting";   // the event stream: connecting, open, reconnecting, disconnected

function $(id) { return document.getElementById(id); }
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function str(v) { return v === undefined || v === null ? "" : String(v); }
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
function num(v, digits) { return typeof v === "number" && isFinite(v) ? v.toFixed(digits) : "—"; }
// ---- times: 24-hour, local or UTC, the zone named ----
function storedZone() {
  try { return window.localStorage.getItem(ZONE_KEY) === "utc" ? "utc" : "local"; } catch (e) { return "local"; }
}
function pad2(n) { return (n < 10 ? "0" : "") + n; }
// The zone of a time: "UTC", or the local offset on that date ("UTC+5:30", "UTC-4", "UTC+0").
function zoneName(ms) {
  if (zoneMode === "utc") return "UTC";
  var off = -new Date(ms).getTimezoneOffset();
  var a = Math.abs(off);
  return "UTC" + (off < 0 ? "-" : "+") + Math.floor(a / 60) + (a % 60 ? ":" + pad2(a % 60) : "");
}
function fields(ms) {
  var d = new Date(ms), u = zoneMode === "utc";
  return { y: u ? d.getUTCFullYear() : d.getFullYear(), mo: (u ? d.getUTCMonth() : d.getMonth()) + 1,
           d: u ? d.getUTCDate() : d.getDate(), h: u ? d.getUTCHours() : d.getHours(),
           mi: u ? d.getUTCMinutes() : d.getMinutes(), s: u ? d.getUTCSeconds() : d.getSeconds() };
}
function hms(ms) { var f = fields(ms); return pad2(f.h) + ":" + pad2(f.mi) + ":" + pad2(f.s); }
function ymdHms(ms) { var f = fields(ms); return f.y + "-" + pad2(f.mo) + "-" + pad2(f.d) + " " + hms(ms); }
function fillTime(t) {
  var ms = Date.parse(t.dateTime);
  t.textContent = (t.dataset.date ? ymdHms(ms) : hms(ms)) + " " + zoneName(ms);
}
// A <time> for a unix time in ns (the clock; withDate: the date too), or "—" for none.
function timeNode(unixNs, withDate) {
  if (typeof unixNs !== "number" || !isFinite(unixNs)) return document.createTextNode("—");
  var t = document.createElement("time");
  t.dateTime = new Date(Math.round(unixNs / 1e6)).toISOString();
  if (withDate) t.dataset.date = "1";
  fillTime(t);
  return t;
}
// A node of text and times: parts are strings or nodes.
function mixed(tag, cls, parts) {
  var e = el(tag, cls);
  parts.forEach(function (p) { e.appendChild(typeof p === "string" ? document.createTextNode(p) : p); });
  return e;
}
function setMixed(node, parts) {
  clear(node);
  parts.forEach(function (p) { node.appendChild(typeof p === "string" ? document.createTextNode(p) : p); });
}
function setZone(mode) {
  zoneMode = mode === "utc" ? "utc" : "local";
  try { window.localStorage.setItem(ZONE_KEY, zoneMode); } catch (e) { /* private mode: this page only */ }
  showZone();
  Array.prototype.forEach.call(document.querySelectorAll("time"), fillTime);
  Object.keys(gpus).forEach(function (k) { dropPlots(gpus[k]); });  // their axes are made with the zone
  redraw();
}
function showZone() {
  $("tz-local").setAttribute("aria-pressed", String(zoneMode === "local"));
  $("tz-utc").setAttribute("aria-pressed", String(zoneMode === "utc"));
  document.body.dataset.timezone = zoneMode;
}
function seconds(s) {
  if (typeof s !== "number" || !isFinite(s)) return "—";
  return s >= 100 ? s.toFixed(0) + " s" : s.toFixed(1) + " s";
}
function cssToken(s) { return String(s).replace(/[^a-z0-9_-]/gi, ""); }
function row(cells) {
  var tr = document.createElement("tr");
  cells.forEach(function (c) { tr.appendChild(c); });
  return tr;
}
function cell(text, cls) { return el("td", cls, text); }
function badgeCell(text, cls) {
  var td = document.createElement("td");
  td.appendChild(el("span", cls, text));
  return td;
}
function nowS() {
  return lastSnapshot && typeof lastSnapshot.time_unix_ns === "number" ? lastSnapshot.time_unix_ns / 1e9
                                                                        : Date.now() / 1000;
}

// ---- the waveform store: per GPU, t[] and one array per metric, aligned ----
function newStore() { return { t: [], series: {} }; }
function appendPoint(store, t, values) {
  var n = store.t.length;
  store.t.push(t);
  Object.keys(values).forEach(function (m) {
    if (!store.series[m]) {
      store.series[m] = new Array(n);
      for (var i = 0; i < n; i++) store.series[m][i] = null;
    }
  });
  Object.keys(store.series).forEach(function (m) {
    var v = values[m];
    store.series[m].push(typeof v === "number" && isFinite(v) ? v : null);
  });
}
function trim(store, fromT) {
  var k = 0;
  while (k < store.t.length && store.t[k] < fromT) k++;
  if (k === 0) return;
  store.t.splice(0, k);
  Object.keys(store.series).forEach(function (m) { store.series[m].splice(0, k); });
}
function lastT(store) { return store.t.length ? store.t[store.t.length - 1] : -Infinity; }
function present(store, metric) {
  var s = store.series[metric];
  if (!s) return false;
  for (var i = s.length - 1; i >= 0; i--) if (s[i] !== null) return true;
  return false;
}
function truncateFrom(store, fromT) {
  var k = store.t.length;
  while (k > 0 && store.t[k - 1] >= fromT) k--;
  store.t.length = k;
  Object.keys(store.series).forEach(function (m) { store.series[m].length = k; });
}
// Merges one GPU of a history answer: from its first point on, the answer replaces what the store
// holds. Not just the points newer than the newest held: a sample may reach the server late (the
// utilization group drains the driver's buffer, up to a read period in the past), and the next
// answer that spans its time brings it.
function mergeHistory(g, h) {
  var t = Array.isArray(h.t) ? h.t : [];
  var series = h.series && typeof h.series === "object" ? h.series : {};
  var names = Object.keys(series);
  var order = [];
  for (var i = 0; i < t.length; i++) if (typeof t[i] === "number" && isFinite(t[i])) order.push(i);
  if (!order.length) return;
  order.sort(function (a, b) { return t[a] - t[b]; });
  truncateFrom(g.store, t[order[0]]);
  order.forEach(function (j) {
    var values = {};
    names.forEach(function (m) { if (Array.isArray(series[m])) values[m] = series[m][j]; });
    appendPoint(g.store, t[j], values);
  });
}
// ---- plots ----
function windowsPlugin(g) {  // findings_shading.js, loaded before this module
  return gpudocShading.plugin(function () { return g.windows; });
}
function plotData(g, spec, shown) {
  var data = [g.store.t.slice()];
  shown.forEach(function (s) {
    var src = g.store.series[s[0]] || [];
    var f = s[3] || 1;
    data.push(f === 1 ? src.slice() : src.map(function (v) { return v === null ? null : v * f; }));
  });
  return data;
}
function plotWidth(host) { return Math.max(300, (host.clientWidth || 600) - 4); }
function makePlot(g, spec, shown, host) {
  var digits = spec.unit === "GiB" ? 2 : 0;
  var zone = zoneName(nowS() * 1000);
  var series = [{ label: "time (" + zone + ")",
                  value: function (u, v) { return v == null ? "—" : ymdHms(v * 1000) + " " + zoneName(v * 1000); } }];
  shown.forEach(function (s) {
    series.push({ label: s[1], stroke: s[2], width: 1.25, spanGaps: true, dash: s[4] ? [6, 4] : undefined,
                  value: function (u, v) { return v == null ? "—" : v.toFixed(digits) + " " + spec.unit; } });
  });
  var opts = {
    title: spec.title, width: plotWidth(host), height: 180,
    scales: {
      x: { time: true, range: function () { var now = nowS(); return [now - spanS, now]; } },
      y: { range: function (u, mn, mx) {
        if (spec.fixed) return spec.fixed;
        var hi = mx === null || !isFinite(mx) ? 1 : mx;
        return [0, hi <= 0 ? 1 : hi * 1.08];
      } }
    },
    series: series,
    axes: [{ values: function (u, splits) {  // the zone is named in the legend below: "time (UTC)"
               var labels = splits.map(function (v) { return v == null ? "" : hms(v * 1000); });
               u.gpudocTicks = { zone: zone, splits: splits.slice(), labels: labels };  // for the browser test
               return labels;
             } },
           { size: 55 }],
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    plugins: [windowsPlugin(g)]
  };
  return new uPlot(opts, plotData(g, spec, shown), host);
}
function dropPlots(g) {
  Object.keys(g.plots).forEach(function (key) {
    var p = g.plots[key];
    p.u.destroy();
    p.host.parentNode.removeChild(p.host);
    delete g.plots[key];
  });
}
function refreshPlots(g) {
  PLOTS.forEach(function (spec) {
    var shown = spec.series.filter(function (s) { return present(g.store, s[0]); });
    var key = shown.map(function (s) { return s[0]; }).join(",");
    var p = g.plots[spec.key];
    if (p && p.key !== key) {
      p.u.destroy();
      p.host.parentNode.removeChild(p.host);
      delete g.plots[spec.key];
      p = null;
    }
    if (!shown.length) return;
    if (!p) {
      var host = el("div", "plot");
      host.dataset.plot = spec.key;
      insertPlotHost(g, spec.key, host);
      p = g.plots[spec.key] = { key: key, host: host, u: makePlot(g, spec, shown, host) };
    } else {
      p.u.setData(plotData(g, spec, shown));
    }
  });
  g.section.dataset.plots = String(Object.keys(g.plots).length);
}
// Keeps the plots in PLOTS order whatever order they appear in.
function insertPlotHost(g, key, host) {
  var order = PLOTS.map(function (s) { return s.key; });
  var mine = order.indexOf(key);
  var before = null;
  Array.prototype.forEach.call(g.plotsBox.children, function (c) {
    if (before === null && order.indexOf(c.dataset.plot) > mine) before = c;
  });
  g.plotsBox.insertBefore(host, before);
}
function countPlots() {
  var n = 0;
  Object.keys(gpus).forEach(function (k) { n += Object.keys(gpus[k].plots).length; });
  document.body.dataset.plots = String(n);
}

// ---- one GPU's section ----
function gpuView(index) {
  if (gpus[index]) return gpus[index];
  var section = el("article", "gpu");
  section.id = "gpu-" + cssToken(index);
  section.dataset.gpu = String(index);
  var head = el("div", "gpu-head");
  var title = el("h3", null, "GPU " + index);
  var ident = el("span", "muted");
  head.appendChild(title);
  head.appendChild(ident);
  var values = el("div", "values");
  var reasons = el("div", "reasons");
  var plotsBox = el("div", "plots");
  var procs = el("div", "procs");
  section.appendChild(head);
  section.appendChild(values);
  section.appendChild(reasons);
  section.appendChild(plotsBox);
  section.appendChild(procs);
  // GPUs in index order.
  var container = $("gpus"), before = null;
  Array.prototype.forEach.call(container.querySelectorAll("article.gpu"), function (a) {
    if (before === null && Number(a.dataset.gpu) > Number(index)) before = a;
  });
  container.insertBefore(section, before);
  $("gpus-none").hidden = true;
  gpus[index] = { index: index, section: section, title: title, ident: ident, values: values, reasons: reasons,
                  plotsBox: plotsBox, procs: procs, plots: {}, store: newStore(), windows: [] };
  return gpus[index];
}
function renderGpuHead(g, s) {
  g.title.textContent = "GPU " + g.index + (s.name ? " — " + s.name : "");
  g.ident.textContent = [s.uuid, s.pci_bus_id].filter(function (x) { return x; }).map(str).join(" · ");
  clear(g.values);
  var values = s.values && typeof s.values === "object" ? s.values : {};
  VALUES.forEach(function (v) {
    var has = typeof values[v[0]] === "number";
    var span = el("span", "value" + (has ? "" : " stale"));
    span.appendChild(document.createTextNode(v[1] + " "));
    span.appendChild(el("b", null, has ? num(values[v[0]] * v[3], v[4]) + " " + v[2] : "—"));
    if (!has) span.title = "no fresh reading";
    g.values.appendChild(span);
  });
  clear(g.reasons);
  var reasons = Array.isArray(s.clock_event_reasons) ? s.clock_event_reasons : [];
  reasons.forEach(function (r) {
    g.reasons.appendChild(el("span", "reason" + (SLOWDOWN[r] ? " slowdown" : ""), r));
  });
}
function renderProcesses(g, s) {
  clear(g.procs);
  var procs = Array.isArray(s.processes) ? s.processes : [];
  if (!procs.length) {
    g.procs.appendChild(el("p", "muted", "No processes on this GPU."));
    return;
  }
  var table = el("table", "grid");
  var head = row(["pid", "process", "memory used", "container", "pod"].map(function (h) { return el("th", null, h); }));
  head.children[0].className = "num";  // pid and memory: numbers, right-aligned like their cells
  head.children[2].className = "num";
  table.appendChild(el("thead")).appendChild(head);
  var body = table.appendChild(el("tbody"));
  procs.forEach(function (p) {
    body.appendChild(row([cell(str(p.pid), "num"), cell(str(p.name)),
                          cell(typeof p.used_memory_bytes === "number" ? num(p.used_memory_bytes / GIB, 2) + " GiB" : "—", "num"),
                          cell(str(p.container)), cell(str(p.pod))]));
  });
  g.procs.appendChild(table);
}

// ---- the node-wide parts ----
function renderFindings(findings) {
  var body = $("findings-table").tBodies[0];
  clear(body);
  var list = findings.slice().sort(function (a, b) {
    var d = (SEVERITY_RANK[a.severity] === undefined ? 3 : SEVERITY_RANK[a.severity]) -
            (SEVERITY_RANK[b.severity] === undefined ? 3 : SEVERITY_RANK[b.severity]);
    return d !== 0 ? d : (b.gpu_time_lost_seconds || 0) - (a.gpu_time_lost_seconds || 0);
  });
  list.forEach(function (f) {
    var tr = row([badgeCell(str(f.severity), "sev sev-" + cssToken(f.severity)),
                  (function () { var td = document.createElement("td"); td.appendChild(el("code", null, str(f.id))); return td; })(),
                  cell(Array.isArray(f.gpus) ? f.gpus.map(str).join(", ") : ""),
                  cell(seconds(f.gpu_time_lost_seconds), "num"),
                  mixed("td", "when", [timeNode(f.window_start_unix_ns), " – ", timeNode(f.window_end_unix_ns)]),
                  cell(str(f.summary)), cell(str(f.next_step))]);
    tr.className = "finding sev-" + cssToken(f.severity);
    tr.dataset.id = str(f.id);
    body.appendChild(tr);
  });
  $("findings-table").hidden = list.length === 0;
  $("findings-none").hidden = list.length !== 0;
  // The windows each GPU's plots shade.
  Object.keys(gpus).forEach(function (k) { gpus[k].windows = []; });
  list.forEach(function (f) {
    if (typeof f.window_start_unix_ns !== "number" || typeof f.window_end_unix_ns !== "number") return;
    (Array.isArray(f.gpus) ? f.gpus : []).forEach(function (gi) {
      if (!gpus[gi]) return;
      gpus[gi].windows.push({ id: str(f.id), severity: str(f.severity), start: f.window_start_unix_ns / 1e9,
                              end: f.window_end_unix_ns / 1e9 });
    });
  });
}
function statusClass(s) { return "st st-" + ({ pass: "pass", warn: "warn", fail: "fail", skip: "skip" }[s] || "other"); }
function renderHealth(h) {
  var status = $("health-status"), body = $("health-table").tBodies[0];
  clear(body);
  if (!h || typeof h !== "object") {
    status.textContent = "";
    status.className = "pill";
    $("health-when").textContent = "No health check has run yet.";
    $("health-table").hidden = true;
    return;
  }
  status.textContent = str(h.status);
  status.className = "pill " + statusClass(h.status);
  var checks = Array.isArray(h.checks) ? h.checks : [];
  var bad = checks.filter(function (c) { return c.status === "fail" || c.status === "warn"; });
  setMixed($("health-when"), ["Checked ", timeNode(h.time_unix_ns, true), ": " + checks.length + " checks, " +
                              (bad.length ? bad.length + " not passing (below)" : "all passing or skipped") + "."]);
  bad.forEach(function (c) {
    body.appendChild(row([cell(str(c.check)), badgeCell(str(c.status), statusClass(c.status)), cell(str(c.detail))]));
  });
  $("health-table").hidden = bad.length === 0;
}
function renderBaselines(list) {
  var body = $("baselines-table").tBodies[0];
  clear(body);
  list.forEach(function (b) {
    body.appendChild(row([cell(str(b.name)), (function () { var td = document.createElement("td"); td.appendChild(el("code", null, str(b.key))); return td; })(),
                          cell(str(b.verdict), "verdict-" + cssToken(b.verdict)),
                          mixed("td", "when", [timeNode(b.time_unix_ns, true)])]));
  });
  $("baselines-table").hidden = list.length === 0;
  $("baselines-none").hidden = list.length !== 0;
}
function renderHeader(s) {
  $("host").textContent = str(s.host);
  var backend = str(s.backend);
  $("backend").textContent = backend;
  var replay = backend.indexOf("replay:") === 0, fake = backend.indexOf("fake") === 0;
  $("banner-replay").hidden = !(replay || fake);
  $("banner-replay").textContent = replay ? "REPLAY, not live: " + backend.slice(7)
                                          : fake ? "FAKE GPUs, not this machine" : "";
  $("banner-sampler").hidden = s.sampler_up !== false;
  setMixed($("updated"), ["updated ", timeNode(s.time_unix_ns)]);
}

// ---- applying a snapshot ----
function applySnapshot(s) {
  if (!s || typeof s !== "object") throw new Error("snapshot is not a JSON object");
  lastSnapshot = s;
  lastSnapshotAt = Date.now();
  renderHeader(s);
  var list = Array.isArray(s.gpus) ? s.gpus : [];
  var seen = {};
  list.forEach(function (gs) {
    if (typeof gs.gpu !== "number") return;
    var g = gpuView(gs.gpu);
    seen[gs.gpu] = true;
    renderGpuHead(g, gs);
    renderProcesses(g, gs);
  });
  Object.keys(gpus).forEach(function (k) { gpus[k].section.classList.toggle("absent", !seen[k]); });
  renderFindings(Array.isArray(s.findings) ? s.findings : []);
  renderHealth(s.health);
  renderBaselines(Array.isArray(s.baselines) ? s.baselines : []);
  checkStale();
  updates++;
  document.body.dataset.updates = String(updates);
}
function redraw() {
  var from = nowS() - KEEP_S;
  Object.keys(gpus).forEach(function (k) {
    trim(gpus[k].store, from);
    refreshPlots(gpus[k]);
  });
  countPlots();
}
// The history points since the newest one held (all of the span the first time).
// Every WIDE_EVERY-th time a wider span, to bring the samples that reached the server late.
function historySeconds() {
  var newest = -Infinity;
  Object.keys(gpus).forEach(function (k) { newest = Math.max(newest, lastT(gpus[k].store)); });
  if (!isFinite(newest)) return KEEP_S;
  var s = Math.max(2, Math.ceil(nowS() - newest) + 2);
  if (++historyCount % WIDE_EVERY === 0) s = Math.max(s, WIDE_S);
  return Math.min(KEEP_S, s);
}
function getJson(url) {
  return fetch(url, { cache: "no-store", headers: { Accept: "application/json" } }).then(function (r) {
    if (!r.ok) throw new Error(url + ": HTTP " + r.status);
    return r.json();
  });
}
function fetchHistory() {
  if (historyBusy) return Promise.resolve();
  historyBusy = true;
  return getJson("api/v1/history?seconds=" + historySeconds()).then(function (h) {
    (h && Array.isArray(h.gpus) ? h.gpus : []).forEach(function (gh) {
      if (typeof gh.gpu === "number") mergeHistory(gpuView(gh.gpu), gh);
    });
  }, function () {
    // Without the history the snapshot's own values still draw the waveform, once a second.
    if (!lastSnapshot || !Array.isArray(lastSnapshot.gpus)) return;
    var t = lastSnapshot.time_unix_ns / 1e9;
    lastSnapshot.gpus.forEach(function (gs) {
      var g = gpus[gs.gpu];
      if (g && t > lastT(g.store)) appendPoint(g.store, t, gs.values || {});
    });
  }).then(function () {
    historyBusy = false;
    redraw();
  });
}
function markRendered() {
  if (rendered) return;
  rendered = true;
  document.body.dataset.rendered = "ok";
}

// ---- connection ----
// The badge says what is true of the values on the page, not only that the stream is open:
//   live          snapshots arrive from this machine's GPUs (the only green state)
//   replay, fake  snapshots arrive, from a replayed trace or made-up GPUs: not this machine now
//   stale         the stream is open but no snapshot came for STALE_AFTER_MS, or the sampler is down
//   connecting, reconnecting, disconnected: the event stream's own state
var BADGE_TITLE = {
  live: "Updating from this machine's GPUs.",
  replay: "Updating from a replayed trace, not from this machine's GPUs now.",
  fake: "Updating from made-up GPUs, not from this machine.",
  stale: "Not updating: no new snapshot, or the sampler is down.",
  connecting: "Connecting to the server.",
  reconnecting: "The connection to the server was lost; reconnecting.",
  disconnected: "The server refused the connection; trying again."
};
function badgeState() {
  if (stream !== "open") return stream;
  if (!lastSnapshotAt) return "connecting";
  if (Date.now() - lastSnapshotAt >= STALE_AFTER_MS || lastSnapshot.sampler_up === false) return "stale";
  var backend = str(lastSnapshot.backend);
  if (backend.indexOf("replay:") === 0) return "replay";
  if (backend.indexOf("fake") === 0) return "fake";
  return "live";
}
function showConn() {
  var state = badgeState(), c = $("conn");
  c.textContent = state;
  c.className = "pill conn-" + state;
  c.title = BADGE_TITLE[state] || "";
  document.body.dataset.connection = state;
  document.body.dataset.stream = stream;
}
function setStream(state) {
  stream = state;
  showConn();
}
function checkStale() {
  showConn();
  var b = $("banner-stale");
  if (!lastSnapshotAt) return;
  var age = (Date.now() - lastSnapshotAt) / 1000;
  b.hidden = age * 1000 < STALE_AFTER_MS;
  setMixed(b, ["Stale: no update for " + age.toFixed(0) + " s; the values and plots below are from ",
               timeNode(lastSnapshot && lastSnapshot.time_unix_ns), "."]);
}
var source = null;
function connect() {
  setStream(source ? "reconnecting" : "connecting");
  source = new EventSource("api/v1/events");
  source.onopen = function () { setStream("open"); };
  source.addEventListener("snapshot", function (e) {
    var s;
    try { s = JSON.parse(e.data); } catch (err) { window.gpudocRecordError("bad snapshot event: " + err.message); return; }
    stream = "open";
    applySnapshot(s);
    fetchHistory().then(markRendered);
  });
  source.onerror = function () {
    // EventSource reconnects by itself while readyState is CONNECTING; CLOSED means it gave up
    // (an HTTP error or a wrong content type): start again after a pause.
    if (source.readyState === EventSource.CLOSED) {
      setStream("disconnected");
      setTimeout(connect, 5000);
    } else {
      setStream("reconnecting");
    }
  };
}

// Read-only, for a person at the console and for the browser test: one GPU's plotted data, a copy
// ({t: [unix s], series: {metric: [value or null]}}), or null for a GPU not shown.
window.gpudocDashboard = Object.freeze({
  data: function (gpu) { return gpus[gpu] ? JSON.parse(JSON.stringify(gpus[gpu].store)) : null; },
  // The time axis of each of a GPU's plots as last drawn: {plot: {zone, splits: [unix s], labels}}.
  axes: function (gpu) {
    var out = {};
    if (gpus[gpu]) Object.keys(gpus[gpu].plots).forEach(function (k) {
      var t = gpus[gpu].plots[k].u.gpudocTicks;
      if (t) out[k] = JSON.parse(JSON.stringify(t));
    });
    return out;
  }
});

function start() {
  if (typeof uPlot === "undefined") {
    var msg = "The plot library (assets/uPlot.iife.min.js) did not load: this gpudoc was built without it " +
              "(run `npm ci --prefix web`, reconfigure and rebuild).";
    $("banner-error").textContent = msg;
    $("banner-error").hidden = false;
    window.gpudocRecordError(msg);
    return;
  }
  showZone();
  $("tz-local").addEventListener("click", function () { setZone("local"); });
  $("tz-utc").addEventListener("click", function () { setZone("utc"); });
  $("span").addEventListener("change", function () {
    spanS = Number($("span").value) || 600;
    redraw();
  });
  window.addEventListener("resize", function () {
    Object.keys(gpus).forEach(function (k) {
      var g = gpus[k];
      Object.keys(g.plots).forEach(function (p) {
        var plot = g.plots[p];
        plot.u.setSize({ width: plotWidth(plot.host), height: 180 });
      });
    });
  });
  setInterval(checkStale, 1000);
  getJson("assets/plot_catalog.json").then(function (catalog) {
    PLOTS = plotsOf(catalog);
    return getJson("api/v1/snapshot");
  }).then(function (s) {
    applySnapshot(s);
    return fetchHistory();
  }).then(markRendered, function (err) {
    window.gpudocRecordError("first snapshot: " + err.message);
  }).then(connect);
}
start();
