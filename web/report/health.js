(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  var host = document.getElementById("plots");
  var plots = [];
  data.plots.forEach(function (p) {
    var d = document.createElement("div");
    host.appendChild(d);
    plots.push(new uPlot({
      title: p.title, width: Math.max(320, Math.min(900, (host.clientWidth || 900) - 8)), height: 220,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); },
      scales: { x: { time: true, range: function (u, mn, mx) {
        if (mn == null || mx == null) return [0, 1];
        return mn === mx ? [mn - 3600, mx + 3600] : [mn, mx];
      } } },
      series: [{ label: "time (UTC)" }, { label: p.title, stroke: "#2a6", spanGaps: true, points: { show: true } }],
      cursor: { drag: { x: true, y: false } }
    }, [data.t, p.y], d));
  });
  document.body.dataset.plots = String(plots.length);
  document.body.dataset.rendered = "ok";
})();
