// The findings' windows shaded on uPlot plots, by severity, each labelled with its finding's id.
// One file for both pages that draw them: gpudoc serve's dashboard loads it (assets/), and the HTML
// report of gpudoc diagnose embeds it before its own script. A classic script: it defines one
// global, gpudocShading.
//   plugins: [gpudocShading.plugin(function () { return windows; })]
// where windows is an array of {start, end, severity, id} in the plot's x units (seconds); the
// function is called at each redraw, so the windows may change between draws.
var gpudocShading = (function () {
  "use strict";
  var SHADE = { info: "rgba(47,111,208,0.10)", warning: "rgba(201,133,0,0.16)", critical: "rgba(198,40,40,0.18)" };
  var EDGE = { info: "#2f6fd0", warning: "#c98500", critical: "#c62828" };
  function plugin(windows) {
    return { hooks: { drawClear: [function (u) {
      var ctx = u.ctx, b = u.bbox, px = window.devicePixelRatio || 1;
      ctx.save();
      windows().forEach(function (w, i) {
        var l = Math.max(u.valToPos(w.start, "x", true), b.left);
        var r = Math.min(u.valToPos(w.end, "x", true), b.left + b.width);
        if (!(r > l)) return;
        ctx.fillStyle = SHADE[w.severity] || SHADE.info;
        ctx.fillRect(l, b.top, r - l, b.height);
        ctx.fillStyle = EDGE[w.severity] || EDGE.info;
        ctx.fillRect(l, b.top, r - l, 3 * px);
        ctx.font = Math.round(11 * px) + "px sans-serif";
        ctx.fillText(w.id, l + 4 * px, b.top + (15 + 13 * (i % 4)) * px);  // staggered: windows overlap
      });
      ctx.restore();
    }] } };
  }
  return { plugin: plugin };
})();
