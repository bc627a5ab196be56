/* Give the page back the browser's own String.prototype.trim, parseFloat and parseInt.
 *
 * Dash ships @babel/polyfill 7 (core-js 2), which replaces these built-ins with regular-expression
 * versions because its whitespace list still has U+180E (Unicode dropped it from White_Space in 6.3,
 * so a modern engine, rightly, does not trim it). The replacements are 25-50x slower, and Plotly calls
 * them for every bar and marker it styles (each colour string is trimmed and parsed): on the Tuner
 * that is ~20 ms of every slider release. The native functions come from a hidden same-origin frame,
 * created before Dash's renderer and Plotly load (Dash loads assets right after its polyfills).
 * The only behaviour that changes is the spec's: U+180E is no longer trimmed.
 */
(function () {
  'use strict';
  try {
    var frame = document.createElement('iframe');
    frame.setAttribute('aria-hidden', 'true');
    frame.setAttribute('tabindex', '-1');
    frame.title = 'native built-ins';
    frame.style.display = 'none';
    (document.body || document.documentElement).appendChild(frame);
    var w = frame.contentWindow;
    if (!w || typeof w.parseFloat !== 'function') { return; }
    ['trim', 'trimStart', 'trimEnd', 'trimLeft', 'trimRight'].forEach(function (k) {
      if (typeof w.String.prototype[k] === 'function') {
        Object.defineProperty(String.prototype, k, {value: w.String.prototype[k], writable: true, configurable: true});
      }
    });
    window.parseFloat = Number.parseFloat = w.parseFloat;
    window.parseInt = Number.parseInt = w.parseInt;
    window.__shedlabNativeBuiltins = true;
  } catch (e) { /* keep the polyfilled versions: slower, same results */ }
}());
