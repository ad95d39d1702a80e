(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  // The plots and their curves: the "report" layout of web/dashboard/plot_catalog.json (serve's
  // dashboard draws its own layout from the same file), which gpudoc puts in the data as "catalog".
  // Each unit of a plot gets its scale from 0 (or the layout's fixed range) and an axis: the first
  // on the left with the grid, the second on the right.
  function fromZero(u, mn, mx) { return [0, Math.max(mx, 1)]; }
  var PLOTS = data.catalog.report.map(function (p) {
    var series = p.series.map(function (m) {
      var c = data.catalog.series[m];
      return [m, c.label, c.color, c.unit];
    });
    var units = [];
    series.forEach(function (s) { if (units.indexOf(s[3]) < 0) units.push(s[3]); });
    var scales = {};
    units.forEach(function (unit) { scales[unit] = { range: p.range || fromZero }; });
    return { title: p.title, scales: scales, series: series,
             axes: units.map(function (unit, i) { return [unit, i === 0 ? 3 : 1]; }) };
  });
  function windowsPlugin(wins) {  // web/dashboard/findings_shading.js, embedded before this script
    return gpudocShading.plugin(function () { return wins; });
  }
  var groups = [];
  var plotCount = 0;
  function fmtVal(unit) {
    return function (u, v) { return v == null ? "—" : (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1)) + " " + unit; };
  }
  function widthOf(el) { return Math.max(320, (el.clientWidth || 800) - 8); }
  data.traces.forEach(function (tr, ti) {
    var group = [];
    var syncing = false;
    groups.push(group);
    tr.gpus.forEach(function (g, gi) {
      var host = document.getElementById("plots-" + ti + "-" + gi);
      if (!host) return;
      PLOTS.forEach(function (spec) {
        var present = spec.series.filter(function (s) { return g.series[s[0]]; });
        if (present.length === 0) return;
        var tables = present.map(function (s) { return g.series[s[0]]; });
        var aligned = tables.length === 1 ? tables[0] : uPlot.join(tables);
        var series = [{ label: "t", value: function (u, v) { return v == null ? "—" : v.toFixed(2) + " s"; } }];
        present.forEach(function (s) {
          series.push({ label: s[1], stroke: s[2], width: 1.25, scale: s[3], spanGaps: false, value: fmtVal(s[3]) });
        });
        var axes = [{ label: "seconds since the start of the trace" }];
        spec.axes.forEach(function (a) {
          if (!present.some(function (s) { return s[3] === a[0]; })) return;
          axes.push({ scale: a[0], label: a[0], side: a[1], grid: { show: a[1] === 3 }, size: 55 });
        });
        var el = document.createElement("div");
        el.className = "plot";
        host.appendChild(el);
        var opts = {
          title: g.label + " — " + spec.title, width: widthOf(host), height: 200,
          scales: Object.assign({ x: { time: false, range: function (u, mn, mx) { return [mn, mx]; } } }, spec.scales),
          series: series, axes: axes,
          cursor: { sync: { key: "trace-" + ti }, drag: { x: true, y: false } },
          plugins: [windowsPlugin(g.windows)],
          hooks: { setScale: [function (u, key) {
            if (key !== "x" || syncing) return;
            syncing = true;
            group.forEach(function (o) { if (o !== u) o.setScale("x", { min: u.scales.x.min, max: u.scales.x.max }); });
            syncing = false;
          }] }
        };
        group.push(new uPlot(opts, aligned, el));
        plotCount++;
      });
    });
  });
  document.querySelectorAll("button.zoom").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var ti = +btn.dataset.trace, a = +btn.dataset.start, b = +btn.dataset.end;
      var pad = Math.max((b - a) * 0.05, 0.5);
      (groups[ti] || []).forEach(function (u) { u.setScale("x", { min: Math.max(0, a - pad), max: b + pad }); });
      var first = document.getElementById("trace-" + ti);
      if (first) first.scrollIntoView({ behavior: "smooth" });
    });
  });
  window.addEventListener("resize", function () {
    groups.forEach(function (group) {
      group.forEach(function (u) { u.setSize({ width: widthOf(u.root.parentNode), height: 200 }); });
    });
  });
  document.body.dataset.plots = String(plotCount);
  document.body.dataset.rendered = "ok";
})();
