(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  // Marker series: verdict -> label, colour, size. "missing" has no value: drawn at the baseline.
  var MARKS = [
    ["record", "recorded", "#1d2330", 9],
    ["ok", "check ok", "#2e7d32", 8],
    ["improved", "improved", "#2f6fd0", 8],
    ["regression", "REGRESSION", "#c62828", 11],
    ["missing", "MISSING (drawn at the baseline)", "#c62828", 11],
    ["other", "check, not judged", "#8a8f99", 7]
  ];
  function unitText(u) { return u === "percent" ? "%" : u; }
  function fmtVal(unit) {
    return function (u, v) {
      if (v == null) return "—";
      if (unit === "By") {
        var k = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, x = Math.abs(v);
        while (x >= 1024 && i < k.length - 1) { x /= 1024; i++; }
        return (v < 0 ? "-" : "") + x.toPrecision(4) + " " + k[i];
      }
      var s = Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : String(+v.toPrecision(5));
      return unit && unit !== "1" ? s + " " + unitText(unit) : s;
    };
  }
  function markOf(run, verdict) {
    if (run.role === "record") return "record";
    if (verdict === "ok" || verdict === "improved" || verdict === "regression" || verdict === "missing") return verdict;
    return "other";
  }
  function widthOf(el) { return Math.max(320, (el.clientWidth || 800) - 8); }
  var xs = data.runs.map(function (r) { return r.t; });
  var plots = [];
  data.figures.forEach(function (f, fi) {
    var host = document.getElementById("plot-" + fi);
    if (!host) return;
    var fv = fmtVal(f.unit);
    var cols = [xs, f.values,
                xs.map(function () { return f.baseline; }),
                xs.map(function () { return f.bound; })];
    var series = [
      { label: "time (UTC)" },
      { label: f.name, stroke: "#1f77b4", width: 1.5, spanGaps: true, value: fv, points: { show: false } },
      { label: "baseline", stroke: "#555555", width: 1, dash: [2, 3], value: fv, points: { show: false } },
      { label: "regression bound", stroke: "#c62828", width: 1, dash: [8, 4], value: fv, points: { show: false } }
    ];
    if (f.baseline == null) series[2].show = false;
    if (f.bound == null) series[3].show = false;
    MARKS.forEach(function (m) {
      var any = false;
      var col = data.runs.map(function (r, i) {
        if (markOf(r, f.verdicts[i]) !== m[0]) return null;
        var v = m[0] === "missing" ? f.baseline : f.values[i];
        if (v != null) any = true;
        return v;
      });
      if (!any) return;
      cols.push(col);
      series.push({ label: m[1], stroke: m[2], fill: m[2], width: 0, value: fv,
                    paths: function () { return null; }, points: { show: true, size: m[3], stroke: m[2], fill: m[2] } });
    });
    var el = document.createElement("div");
    el.className = "plot";
    host.appendChild(el);
    var opts = {
      title: f.name + (f.unit ? " (" + unitText(f.unit) + ")" : ""),
      width: widthOf(host), height: 260,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); },
      scales: { x: { time: true, range: function (u, mn, mx) {
        if (mn == null || mx == null) return [0, 1];
        return mn === mx ? [mn - 3600, mx + 3600] : [mn, mx];
      } } },
      series: series,
      axes: [{}, { size: 70, values: function (u, vals) { return vals.map(function (v) { return fv(u, v); }); } }],
      cursor: { drag: { x: true, y: false } }
    };
    plots.push(new uPlot(opts, cols, el));
  });
  window.addEventListener("resize", function () {
    plots.forEach(function (u) { u.setSize({ width: widthOf(u.root.parentNode), height: 260 }); });
  });
  document.body.dataset.plots = String(plots.length);
  document.body.dataset.rendered = "ok";
})();
