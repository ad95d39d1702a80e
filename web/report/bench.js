(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  function fmt(unit) {
    return function (u, v) {
      if (v == null) return "—";
      var s = Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : String(+v.toPrecision(4));
      return unit ? s + " " + unit : s;
    };
  }
  var plain = fmt("");
  function bytes(v) {
    if (v == null) return "";
    var k = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, x = v;
    while (x >= 1024 && i < k.length - 1) { x /= 1024; i++; }
    return String(+x.toPrecision(4)) + " " + k[i];
  }
  function widthOf(el) { return Math.max(320, (el.clientWidth || 560) - 8); }
  var plots = [];
  function add(host, opts, cols) {
    var el = document.createElement("div");
    host.appendChild(el);
    opts.width = widthOf(host);
    opts.height = 220;
    opts.cursor = { drag: { x: true, y: false } };
    plots.push(new uPlot(opts, cols, el));
  }
  data.samples.forEach(function (s) {
    var host = document.getElementById("samples-" + s.i);
    if (!host) return;
    var xs = s.values.map(function (_, i) { return i + 1; });
    var f = fmt(s.unit);
    var series = [{ label: "sample" },
      { label: s.key, stroke: "#1f77b4", width: 1.2, value: f, points: { show: true, size: 4 } },
      { label: "median", stroke: "#555555", width: 1, dash: [4, 4], value: f, points: { show: false } }];
    var cols = [xs, s.values, xs.map(function () { return s.median; })];
    if (s.host_cpu) {
      series.push({ label: "host thread CPU per launch", stroke: "#d95f02", width: 1, value: f, points: { show: false } });
      cols.push(s.host_cpu);
    }
    add(host, { title: s.key + " (" + s.unit + "), CV " + (100 * s.cv).toFixed(2) + " %",
                scales: { x: { time: false } }, series: series,
                axes: [{ label: "sample, in the order measured" },
                       { size: 60, values: function (u, vals) { return vals.map(function (v) { return plain(u, v); }); } }] }, cols);
  });
  data.curves.forEach(function (c) {
    var host = document.getElementById("curve-" + c.i);
    if (!host) return;
    var f = fmt("GB/s");
    add(host, { title: c.key + ": bandwidth by message size",
                scales: { x: { time: false, distr: 3, log: 2 } },
                series: [{ label: "size", value: function (u, v) { return v == null ? "—" : bytes(v); } },
                  { label: "bus bandwidth", stroke: "#1f77b4", width: 1.5, value: f },
                  { label: "algorithm bandwidth", stroke: "#2ca02c", width: 1, dash: [6, 3], value: f }],
                axes: [{ values: function (u, vals) { return vals.map(bytes); } },
                       { size: 60, label: "GB/s", values: function (u, vals) { return vals.map(function (v) { return plain(u, v); }); } }] },
        [c.bytes, c.busbw, c.algbw]);
  });
  window.addEventListener("resize", function () {
    plots.forEach(function (u) { u.setSize({ width: widthOf(u.root.parentNode), height: 220 }); });
  });
  document.body.dataset.plots = String(plots.length);
  document.body.dataset.rendered = "ok";
})();
