(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  var host = document.getElementById("trials");
  var trials = data.trials.slice().sort(function (a, b) { return a.n - b.n; });
  if (host && trials.length > 0) {
    var arms = [];
    trials.forEach(function (t) { if (arms.indexOf(t.arm) < 0) arms.push(t.arm); });
    var colors = ["#5d6678", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
    var xs = trials.map(function (t) { return t.n; });
    var cols = [xs], series = [{ label: "trial" }];
    arms.forEach(function (arm, k) {
      cols.push(trials.map(function (t) { return t.arm === arm ? t.median : null; }));
      series.push({ label: arm, stroke: colors[k % colors.length], width: 0, paths: function () { return null; },
                    points: { show: true, size: 8, fill: colors[k % colors.length] } });
    });
    new uPlot({ title: "Median of each trial (" + data.unit + ")", width: Math.max(320, host.clientWidth - 8),
                height: 300, scales: { x: { time: false } }, series: series }, cols, host);
  }
  document.body.setAttribute("data-rendered", "ok");
})();
