//! What every HTML page carries inline: its style sheet and its one small script
//! (sorting tables by a column, collapsing every section at once). Both are
//! constants so that a page needs nothing beside itself: no network, no font, no
//! file; the page reads the same with the script off (sections still open and close,
//! as `<details>`).

/// The style sheet. Colours mark status and significance, and never carry them
/// alone: the cell's own words say it, and `::before` adds a symbol.
pub const STYLE: &str = r#"
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --head: #f6f8fa;
  --bad: #ffebe9; --bad-ink: #a40e26; --good: #dafbe1; --good-ink: #116329;
  --warn: #fff8c5; --warn-ink: #7d4e00; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
  color: var(--fg); margin: 0 auto; padding: 1rem 1.5rem 4rem; max-width: 1180px; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; word-break: break-all; }
h2 { font-size: 1.3rem; display: inline; margin: 0; }
h3 { font-size: 1.1rem; margin: 1.2rem 0 .5rem; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .9em;
  background: var(--head); padding: 0 .25em; border-radius: 4px; }
blockquote { margin: 1rem 0; padding: .6rem 1rem; border-left: 4px solid var(--warn-ink);
  background: var(--warn); }
blockquote p { margin: 0; }
nav.toc { border: 1px solid var(--line); border-radius: 6px; padding: .4rem 1rem; margin: 1rem 0;
  background: var(--head); font-size: .92rem; }
nav.toc ul { margin: .2rem 0; padding-left: 1.2rem; }
nav.toc > ul { columns: 2; }
details.section { border-top: 1px solid var(--line); padding: .6rem 0; }
details.section > summary { cursor: pointer; padding: .2rem 0; }
details.section > div { padding: .3rem 0 0; }
.tools { float: right; }
.tools button { font: inherit; font-size: .85rem; cursor: pointer; }
.scroll { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; font-size: .9rem; }
th, td { border: 1px solid var(--line); padding: .25rem .55rem; text-align: left; vertical-align: top; }
thead th { background: var(--head); white-space: nowrap; }
th.sort { cursor: pointer; user-select: none; }
th.sort::after { content: " \2195"; color: var(--muted); font-size: .8em; }
th[aria-sort="ascending"]::after { content: " \25B2"; color: var(--fg); }
th[aria-sort="descending"]::after { content: " \25BC"; color: var(--fg); }
tbody tr:nth-child(even) { background: #fbfcfd; }
td.bad { background: var(--bad); color: var(--bad-ink); font-weight: 600; }
td.bad::before { content: "\2716  "; }
td.good { background: var(--good); color: var(--good-ink); }
td.good::before { content: "\2714  "; }
td.warn { background: var(--warn); color: var(--warn-ink); }
td.warn::before { content: "? "; }
.plot { display: block; margin: .8rem 0 1.2rem; }
.plot svg { display: block; max-width: 100%; height: auto; border: 1px solid var(--line); }
.plot .caption { display: block; color: var(--muted); font-size: .85rem; }
svg .tips circle:hover { fill-opacity: .25; }
.missing { color: var(--muted); font-style: italic; }
footer { color: var(--muted); font-size: .85rem; margin-top: 2rem; }
"#;

/// The script: click (or Enter on) a column header to sort its table by that column,
/// numbers by value with their units (sizes, times, percentages; a change in words,
/// `2.7x slower`, by its signed percentage), other text
/// alphabetically, cells without a number last; a second click reverses. And one button that collapses or opens
/// every section.
pub const SCRIPT: &str = r#"
(function () {
  "use strict";
  var units = { b: 1, kib: 1024, mib: 1048576, gib: 1073741824, tib: 1099511627776,
    ns: 0.001, us: 1, "\u00b5s": 1, ms: 1000, s: 1000000 };
  function key(text) {
    // A change in words sorts by its signed percentage: "2.7x slower" +170,
    // "3.1 % faster" -3.1, "2.0x faster" -50.
    var c = /^\s*(\d+(?:\.\d+)?)\s*(x|%)\s+(slower|faster)/i.exec(text);
    if (c) {
      var v = parseFloat(c[1]), slower = c[3].toLowerCase() === "slower";
      if (c[2].toLowerCase() === "x") { return slower ? (v - 1) * 100 : (1 / v - 1) * 100; }
      return slower ? v : -v;
    }
    var m = /^\s*([+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(%|[a-z\u00b5]+)?/i.exec(text);
    if (!m) { return null; }
    var unit = m[2] ? units[m[2].toLowerCase()] : undefined;
    return parseFloat(m[1]) * (unit || 1);
  }
  function cellText(row, col) {
    var cell = row.cells[col];
    return cell ? cell.textContent : "";
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellText(a, col), y = cellText(b, col);
      var kx = key(x), ky = key(y);
      // Cells without a number ("-", empty) stay below the numbers either way.
      if (kx !== null && ky === null) { return -1; }
      if (kx === null && ky !== null) { return 1; }
      var c = kx !== null ? kx - ky : x.localeCompare(y);
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.classList.add("sort");
      th.tabIndex = 0;
      th.title = "sort by this column";
      th.addEventListener("click", function () { sortBy(table, col, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, col, th); }
      });
    });
  });
  var toggle = document.getElementById("toggle-all");
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      var sections = document.querySelectorAll("details.section");
      var open = Array.prototype.some.call(sections, function (d) { return !d.open; });
      Array.prototype.forEach.call(sections, function (d) { d.open = open; });
      toggle.textContent = open ? "collapse all sections" : "open all sections";
    });
  }
})();
"#;
