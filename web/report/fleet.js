(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gpudoc-data").textContent);
  var plots = 0;
  function hours(s) { return s / 3600; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;  // text from the data never becomes markup
    return e;
  }
  function legend(host, items) {
    var p = el("p", "legend hint");
    items.forEach(function (it) {
      var s = el("span"), i = el("i");
      i.style.background = it[1];
      s.appendChild(i);
      s.appendChild(document.createTextNode(it[0]));
      p.appendChild(s);
    });
    host.appendChild(p);
  }
  // One row of horizontal bars: `bars` are [class, left, width] in fractions of the track.
  function row(host, label, bars, value) {
    var r = el("div", "bar-row"), l = el("div", "bar-label", label), track = el("div", "bar-track");
    l.title = label;
    bars.forEach(function (b) {
      var bar = el("div", "bar " + b[0]);
      bar.style.left = (100 * b[1]) + "%";
      bar.style.width = Math.max(0, 100 * b[2]) + "%";
      track.appendChild(bar);
    });
    r.appendChild(l);
    r.appendChild(track);
    r.appendChild(el("div", "bar-value", value));
    host.appendChild(r);
  }

  // GPU time per step of the period, stacked: useful, then lost, then unexplained on top.
  var tl = data.timeline, host = document.getElementById("timeline");
  if (host && tl && tl.end_unix_s.length > 0) {
    var u = tl.useful_s.map(hours), l = tl.lost_s.map(hours), x = tl.unexplained_s.map(hours);
    var ul = u.map(function (v, i) { return v + l[i]; });
    var all = ul.map(function (v, i) { return v + x[i]; });
    var bars = uPlot.paths.bars({ size: [0.9, 64] });
    function own(values) { return function (_, v, si, i) { return i == null ? "—" : values[i].toFixed(2) + " GPU-h"; }; }
    new uPlot({
      title: "GPU-hours per " + Math.round(tl.step_s / 60) + " min", width: Math.max(320, host.clientWidth - 8),
      height: 260, scales: { x: { time: true } },
      series: [{},
        { label: "unexplained", fill: "#9aa3b5", stroke: "#9aa3b5", paths: bars, points: { show: false }, value: own(x) },
        { label: "lost to named causes", fill: "#d62728", stroke: "#d62728", paths: bars, points: { show: false }, value: own(l) },
        { label: "useful", fill: "#2ca02c", stroke: "#2ca02c", paths: bars, points: { show: false }, value: own(u) }],
      axes: [{}, { label: "GPU-h", size: 60 }]
    }, [tl.end_unix_s, all, ul, u], host);
    plots++;
  }

  // The causes: this period's GPU-hours (thick) over the period before's (thin), on one scale.
  host = document.getElementById("causes");
  if (host && data.causes.length > 0) {
    var top = 0;
    data.causes.forEach(function (c) { top = Math.max(top, c.gpu_s, c.previous_gpu_s); });
    legend(host, [["this period", "#d62728"], ["the period before", "#c7cbd4"]]);
    data.causes.forEach(function (c) {
      row(host, c.id, [["before", 0, c.previous_gpu_s / top], ["now", 0, c.gpu_s / top]],
          hours(c.gpu_s).toFixed(2) + " GPU-h (" + (100 * c.share).toFixed(1) + " %)");
    });
    plots++;
  }

  // The groups: each one's GPU time, useful then lost, on one scale.
  host = document.getElementById("groups-plot");
  if (host && data.groups.length > 0) {
    var most = 0;
    data.groups.forEach(function (g) { most = Math.max(most, g.observed_s); });
    legend(host, [["useful", "#2ca02c"], ["lost to named causes", "#d62728"], ["unexplained", "#9aa3b5"]]);
    data.groups.forEach(function (g) {
      var f = most > 0 ? 1 / most : 0;
      var rest = Math.max(0, g.observed_s - g.useful_s - g.lost_s);
      row(host, g.key || "(none)", [["useful", 0, g.useful_s * f], ["lost", g.useful_s * f, g.lost_s * f],
                                    ["unexplained", (g.useful_s + g.lost_s) * f, rest * f]],
          hours(g.observed_s).toFixed(2) + " GPU-h");
    });
    plots++;
  }
  document.body.dataset.plots = String(plots);
  document.body.dataset.rendered = "ok";
})();
