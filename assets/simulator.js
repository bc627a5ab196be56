/* Simulator clientside helper: it only moves axes — every number comes from Python.
 *
 * syncZoom  a new x range (zoom, pan, double-click reset) on one of the page's time figures goes to
 *           the others whose layout.meta.sync is true, as a Patch of layout.xaxis (no server round
 *           trip). Figures already showing that range are left alone, so the update cannot loop.
 */
(function () {
  "use strict";

  function xRange(rel) {
    var lo = null, hi = null, range = null, auto = false;
    Object.keys(rel || {}).forEach(function (k) {
      var m = /^xaxis\d*\.(range\[0\]|range\[1\]|range|autorange)$/.exec(k);
      if (!m) { return; }
      if (m[1] === "range[0]") { lo = rel[k]; }
      else if (m[1] === "range[1]") { hi = rel[k]; }
      else if (m[1] === "range" && Array.isArray(rel[k])) { range = rel[k].slice(0, 2); }
      else if (m[1] === "autorange" && rel[k]) { auto = true; }
    });
    if (lo !== null && hi !== null) { range = [lo, hi]; }
    if (range) { return {range: range}; }
    return auto ? {auto: true} : null;
  }

  function same(a, b) {
    return Array.isArray(a) && Array.isArray(b) && Math.abs(Number(a[0]) - Number(b[0])) < 1e-6 &&
      Math.abs(Number(a[1]) - Number(b[1])) < 1e-6;
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    shedlabSim: {
      syncZoom: function () {
        var args = Array.prototype.slice.call(arguments);
        var n = args.length / 2;
        var rels = args.slice(0, n), figs = args.slice(n);
        var dc = window.dash_clientside;
        var out = figs.map(function () { return dc.no_update; });
        var cc = dc.callback_context;
        var trig = cc && cc.triggered && cc.triggered.length ? cc.triggered[0].prop_id : "";
        var src = -1;
        (cc.inputs_list || []).forEach(function (inp, i) {
          var id = typeof inp.id === "string" ? inp.id : JSON.stringify(inp.id);
          if (id + "." + inp.property === trig) { src = i; }
        });
        if (src < 0) { return out; }
        var want = xRange(rels[src]);
        if (!want) { return out; }
        figs.forEach(function (fig, i) {
          if (i === src || !fig || !fig.layout || !(fig.layout.meta || {}).sync) { return; }
          var ax = fig.layout.xaxis || {};
          var p = new dc.Patch();
          if (want.range) {
            if (same(ax.range, want.range) && ax.autorange === false) { return; }
            p.assign(["layout", "xaxis", "range"], want.range).assign(["layout", "xaxis", "autorange"], false);
          } else {
            if (ax.autorange === true || (ax.autorange === undefined && ax.range === undefined)) { return; }
            p.assign(["layout", "xaxis", "autorange"], true);
            if (ax.range !== undefined) { p.delete(["layout", "xaxis", "range"]); }
          }
          out[i] = p.build();
        });
        return out;
      }
    }
  });
})();
