//! The page's stylesheet, inlined in a `<style>` block (no external file).

pub(super) const CSS: &str = "
:root { --fail: #c62828; --pass: #2e7d32; --muted: #5a5a5a; --border: #c9ccd1; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f7f9; color: #1b1b1b;
  font: 15px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 1.7em; margin: 0 0 6px; }
h2 { font-size: 1.4em; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid #30343a; }
h3 { font-size: 1.15em; margin: 26px 0 8px; }
h4 { font-size: 1em; margin: 18px 0 6px; }
a { color: #1557a0; }
table { border-collapse: collapse; margin: 6px 0 14px; background: #fff; font-size: 14px; }
th, td { border: 1px solid var(--border); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eceff3; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
table.steps th { vertical-align: bottom; }
/* The steps table fits the page (1280-pixel window, no scroll bar): fixed
   layout over the page's width, headers and cells wrap, a smaller font.
   Long heading words carry soft hyphens; a word still wider than its
   column breaks anywhere rather than widen the table. */
table.steps { width: 100%; table-layout: fixed; font-size: 12.5px; }
table.steps th, table.steps td { padding: 3px 4px; overflow-wrap: break-word; }
table.steps th { overflow-wrap: anywhere; }
table.steps td.num { white-space: normal; }
table.steps .badge { white-space: normal; }
table.steps tr:first-child th:nth-child(-n+3) { width: 5.4em; }
table.steps tr:first-child th:nth-child(4) { width: 9em; }
td.failures { font-size: 13px; }
tr.fail td { background: #fdecea; }
.scroll { overflow-x: auto; }
.verdict { background: #fff; border: 1px solid var(--border); border-left: 6px solid #1f77b4;
  padding: 10px 18px; margin: 12px 0 8px; }
.verdict p { margin: 6px 0; }
.verdict .headline { font-size: 1.3em; }
.verdict ul.machines { margin: 2px 0 4px; font-size: 1.1em; }
.verdict .assumptions { font-size: .9em; }
.interrupted { background: #fff3e0; border: 1px solid #f0a020; border-left: 6px solid #e65100;
  padding: 10px 16px; margin: 12px 0; }
.badge { display: inline-block; white-space: nowrap; margin: 1px 0; padding: 0 6px; border-radius: 3px; font-size: .85em; font-weight: 600; }
.badge.pass { background: #e3f1e4; color: var(--pass); }
.badge.fail { background: var(--fail); color: #fff; }
.badge.tag { background: #e6eef8; color: #1557a0; }
.na { color: var(--muted); font-style: italic; }
.muted { color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 18px; margin: 6px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
dl.facts ul { margin: 0; padding-left: 18px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(520px, 100%), 1fr)); gap: 14px; }
figure { margin: 0; background: #fff; border: 1px solid var(--border); padding: 8px 10px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; }
.tablenote { font-size: 13px; color: var(--muted); margin-top: 4px; }
footer { margin-top: 40px; font-size: 13px; color: var(--muted); }
";
