// The findings' windows shaded on uPlot plots, by severity, each labelled with its finding's id.
// One file for both pages that draw them: gpudoc serve's dashboard loads it (assets/), and the HTML
// report of gpudoc diagnose embeds it before its own script. A classic script: it defines one
// global, gpudocShading.
//   plugins: [gpudocShading.plugin(function () { return windows; })]
// where windows is an array of {start, end, severity, id} in the plot's x units (seconds), most
// important first; the function is called at each redraw, so the windows may change between draws.
// The shading is drawn on the canvas under the curves. The labels are elements over the plot
// (uPlot's `over` layer), laid out so that they never overlap however many windows coincide: each
// starts at its window's left edge and is at most as wide as its window (at least MIN_W), its id
// cut with an ellipsis and whole in its title (shown on hover); a label that would touch one
// already placed goes one lane down. A label that finds no free lane within the plot's height is
// not shown (its window still is); the labels' box counts them in data-hidden.
var gpudocShading = (function () {
  "use strict";
  var SHADE = { info: "rgba(47,111,208,0.10)", warning: "rgba(201,133,0,0.16)", critical: "rgba(198,40,40,0.18)" };
  var EDGE = { info: "#2f6fd0", warning: "#c98500", critical: "#c62828" };
  var FONT = "11px sans-serif";
  var LANE_H = 15;  // CSS px from one lane to the next; a label is 2 px less tall
  var TOP = 4;      // below the window's coloured top edge
  var MIN_W = 40;   // a label over a narrow window still shows a few characters
  var GAP = 3;      // between two labels of one lane
  var PAD = 3;      // inside a label, each side (and its 2 px left border)

  function shade(u, windows) {
    var ctx = u.ctx, b = u.bbox, px = window.devicePixelRatio || 1;
    ctx.save();
    windows.forEach(function (w) {
      var l = Math.max(u.valToPos(w.start, "x", true), b.left);
      var r = Math.min(u.valToPos(w.end, "x", true), b.left + b.width);
      if (!(r > l)) return;
      ctx.fillStyle = SHADE[w.severity] || SHADE.info;
      ctx.fillRect(l, b.top, r - l, b.height);
      ctx.fillStyle = EDGE[w.severity] || EDGE.info;
      ctx.fillRect(l, b.top, r - l, 3 * px);
    });
    ctx.restore();
  }

  // Each item {x, w} gets a lane: the first where it keeps GAP from every label placed there
  // (-1: none of `lanes`). In the order given, so the most important windows get the top lanes.
  function assignLanes(items, lanes) {
    var placed = [];
    items.forEach(function (it) {
      it.lane = -1;
      for (var k = 0; k < lanes && it.lane < 0; k++) {
        var lane = placed[k] || (placed[k] = []);
        var free = lane.every(function (b) { return it.x + it.w + GAP <= b[0] || b[1] + GAP <= it.x; });
        if (free) {
          lane.push([it.x, it.x + it.w]);
          it.lane = k;
        }
      }
    });
  }

  function labelBox(u) {
    var box = u.gpudocLabels;
    if (!box) {
      box = u.gpudocLabels = document.createElement("div");
      box.className = "gpudoc-finding-labels";
      var s = box.style;
      s.position = "absolute";
      s.left = s.top = "0";
      s.width = s.height = "100%";
      s.overflow = "hidden";
      s.pointerEvents = "none";
      u.over.appendChild(box);
    }
    return box;
  }

  function label(it) {
    var e = document.createElement("span");
    var w = it.window, edge = EDGE[w.severity] || EDGE.info, s = e.style;
    e.className = "gpudoc-finding-label";
    e.textContent = w.id;
    e.title = w.id + (w.severity ? " (" + w.severity + ")" : "");
    e.dataset.finding = w.id;
    s.position = "absolute";
    s.left = it.x + "px";
    s.top = TOP + it.lane * LANE_H + "px";
    s.width = it.w + "px";
    s.height = LANE_H - 2 + "px";
    s.boxSizing = "border-box";
    s.padding = "0 " + PAD + "px";
    s.font = FONT;
    s.lineHeight = LANE_H - 2 + "px";
    s.whiteSpace = "nowrap";
    s.overflow = "hidden";
    s.textOverflow = "ellipsis";
    s.color = edge;
    s.background = "rgba(255,255,255,0.85)";
    s.borderLeft = "2px solid " + edge;
    s.pointerEvents = "auto";  // for the title on hover
    return e;
  }

  function drawLabels(u, windows) {
    var box = labelBox(u);
    while (box.firstChild) box.removeChild(box.firstChild);
    var px = window.devicePixelRatio || 1;
    var plotW = u.bbox.width / px, plotH = u.bbox.height / px;
    var ctx = u.ctx;
    ctx.save();
    ctx.font = FONT;
    var items = [];
    windows.forEach(function (w) {
      var l = Math.max(u.valToPos(w.start, "x"), 0), r = Math.min(u.valToPos(w.end, "x"), plotW);
      if (!(r > l)) return;
      var natural = Math.ceil(ctx.measureText(String(w.id)).width) + 2 * PAD + 3;
      var width = Math.min(natural, Math.max(r - l, MIN_W), plotW);
      items.push({ window: w, x: Math.max(0, Math.min(l, plotW - width)), w: width });
    });
    ctx.restore();
    assignLanes(items, Math.max(1, Math.floor((plotH - TOP) / LANE_H)));
    var hidden = 0;
    items.forEach(function (it) {
      if (it.lane < 0) hidden++;
      else box.appendChild(label(it));
    });
    box.dataset.hidden = String(hidden);
  }

  function plugin(windows) {
    return { hooks: {
      drawClear: [function (u) { shade(u, windows()); }],
      draw: [function (u) { drawLabels(u, windows()); }]
    } };
  }
  return { plugin: plugin };
})();
