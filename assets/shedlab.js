/* Shedlab clientside helpers: they only move, label or recolour — every decision is made in Python.
 *
 * keyLabel   the value label beside a Tuner slider follows the handle while dragging
 * dragLines  threshold lines follow the handle (each figure's layout.meta.drag says which shape and
 *            annotation a key moves: y = a + b * value; see dashboard/figures/__init__.py)
 * writeUrl   the permalink goes to the address bar (history.replaceState, no reload) and the copy box
 * navActive  highlights the nav link of the current page
 * closeDrawer closes the "+ Add data" panel once data was added (the <details> element was opened by
 *            the user, which Dash never hears of: its "open" prop stays false, so setting it false again
 *            would change nothing on the page)
 */
(function () {
  "use strict";

  function num(x, digits) {
    return Number(x).toLocaleString("en-US", {minimumFractionDigits: digits, maximumFractionDigits: digits});
  }

  // same rule as dashboard.keys.format_value
  function formatValue(v, f) {
    var x = Number(v) * (f.scale === undefined ? 1 : f.scale);
    var s = num(x, f.digits || 0);
    if (!f.unit) { return s; }
    return f.unit === "×" ? s + f.unit : s + " " + f.unit;
  }

  function triggeredKeys() {
    var keys = {};
    var any = false;
    var cc = window.dash_clientside.callback_context;
    (cc && cc.triggered ? cc.triggered : []).forEach(function (t) {
      var pid = t.prop_id || "";
      try {
        var id = JSON.parse(pid.slice(0, pid.lastIndexOf(".")));
        keys[id.key] = true;
        any = true;
      } catch (e) { /* not a pattern id */ }
    });
    return any ? keys : null;
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    shedlab: {
      keyLabel: function (v, id, fmts) {
        var nu = window.dash_clientside.no_update;
        if (v === undefined || v === null || !id) { return [nu, nu]; }
        var f = (fmts || {})[id.key] || {unit: "", scale: 1, digits: 0};
        var changed = f["default"] !== undefined && Math.abs(Number(v) - Number(f["default"])) > 1e-9;
        return [formatValue(v, f), "tk-value" + (changed ? " tk-value-changed" : "")];
      },

      dragLines: function (values, idlist, fig) {
        var nu = window.dash_clientside.no_update;
        var meta = fig && fig.layout && fig.layout.meta;
        if (!meta || !meta.drag) { return nu; }
        var only = triggeredKeys();
        var patch = null;
        (idlist || []).forEach(function (id, i) {
          var v = values[i];
          if (v === undefined || v === null || !id) { return; }
          if (only && !only[id.key]) { return; }
          var specs = meta.drag[id.key];
          if (!specs) { return; }
          if (!patch) { patch = new window.dash_clientside.Patch(); }
          specs.forEach(function (s) {
            var y = s.a + s.b * Number(v);
            patch.assign(["layout", "shapes", s.shape, "y0"], y).assign(["layout", "shapes", s.shape, "y1"], y);
            if (s.ann !== undefined && s.ann !== null) {
              patch.assign(["layout", "annotations", s.ann, "y"], y)
                   .assign(["layout", "annotations", s.ann, "text"], s.label + " " + num(y, s.digits) + (s.unit || ""));
            }
          });
        });
        return patch ? patch.build() : nu;
      },

      closeDrawer: function (closed, id) {
        if (!closed) { return window.dash_clientside.no_update; }
        var el = document.getElementById(id);
        if (el) { el.open = false; }
        return false;
      },

      writeUrl: function (qs) {
        if (!qs) { return window.dash_clientside.no_update; }
        var url = window.location.pathname + "?" + qs;
        try { window.history.replaceState(window.history.state, "", url); } catch (e) { /* sandboxed */ }
        return window.location.origin + url;
      },

      navActive: function (pathname, idlist) {
        var p = pathname || "/";
        return (idlist || []).map(function (id) {
          var on = id.path === "/" ? p === "/" : (p === id.path || p.indexOf(id.path + "/") === 0);
          return on ? "shell-nav-link active" : "shell-nav-link";
        });
      }
    }
  });

  // dismiss an alert (hidden, not removed: React owns the node)
  document.addEventListener("click", function (e) {
    var b = e.target && e.target.closest ? e.target.closest(".alert-close") : null;
    if (!b) { return; }
    var a = b.closest(".alert");
    if (a) { a.style.display = "none"; }
  });
})();
