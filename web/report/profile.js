(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  var host = document.getElementById("steps");
  if (data.steps.length > 0 && host) {
    var xs = data.steps.map(function (_, i) { return i + 1; });
    var colors = ["#1f77b4", "#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#2ca02c"];
    var series = [{ label: "step" }], cols = [xs];
    data.parts.forEach(function (name, k) {
      series.push({ label: name + " (ms)", stroke: colors[k % colors.length], width: 1.2 });
      cols.push(data.steps.map(function (s) { return s[k] / 1e6; }));
    });
    new uPlot({ title: "Each step: GPU busy and idle by cause (ms)", width: Math.max(320, host.clientWidth - 8),
                height: 260, scales: { x: { time: false } }, series: series }, cols, host);
  }
  var hist = document.getElementById("hist");
  if (hist) {
    var hx = data.histogram.map(function (_, i) { return i; });
    new uPlot({ title: "Kernel durations: count per bucket [2^i, 2^(i+1)) us", width: Math.max(320, hist.clientWidth - 8),
                height: 220, scales: { x: { time: false } },
                series: [{ label: "log2 us" }, { label: "kernels", stroke: "#1f77b4", width: 1.5 }] },
              [hx, data.histogram], hist);
  }
  document.body.setAttribute("data-rendered", "ok");
})();
