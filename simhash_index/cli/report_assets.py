"""The HTML report's style and its one script, and the Content-Security-Policy that allows
that script by its hash and nothing else: no other script, no load from anywhere.

The script filters (host, rule, similarity range) and sorts the near-duplicates; its state
lives in the URL fragment (`#host=example.com&rule=near&min=0.9&max=0.95&sort=distance&order=desc`),
so a filtered view is a link, and the controls, the host table's links and the column
buttons all only change the fragment. It writes text with textContent, never HTML.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em 2em;color:#222}p{max-width:60em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.8em}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;text-align:left;vertical-align:top}
th{border-bottom:1px solid #999;white-space:nowrap}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:.9em;background:#4a7bb7}.totals td{font-size:1.1em}
td.url,.kept{overflow-wrap:anywhere}td.when{white-space:nowrap}.muted,.origin,.label{color:#777}
#near-duplicates,details.cluster table{width:100%}#near-duplicates td.url,details.cluster td.url{width:100%}
.kept .label{font-size:.85em;margin-right:.3em}
.note{background:#fff8e1;border-left:3px solid #e0b000;padding:.4em .8em}
tbody.near{border-top:1px solid #e4e4e4}tr.diff td{font-size:.9em;color:#444;padding:0 8px 6px 2em}
del{background:#fdd}ins{background:#dfd;text-decoration:none}
form#filters{display:flex;flex-wrap:wrap;gap:.4em 1.2em;align-items:center;background:#f4f6f9;
padding:.6em .8em;border-radius:4px;position:sticky;top:0;z-index:1}
form#filters input{width:5em}#shown{color:#555;margin-left:auto}
th button{font:inherit;font-weight:600;border:0;background:none;padding:0;cursor:pointer;color:#1a4d8f}
th[aria-sort=ascending] button::after{content:" \\25B2"}th[aria-sort=descending] button::after{content:" \\25BC"}
details.cluster{border-top:1px solid #ddd;padding:.3em 0}details.cluster summary{cursor:pointer}
.rule{font-size:.85em;padding:0 .4em;border-radius:3px;background:#eee}.rule.near{background:#fff1c2}
"""

SCRIPT = """
(() => {
  const form = document.getElementById("filters");
  const table = document.getElementById("near-duplicates");
  const shown = document.getElementById("shown");
  const state = () => new URLSearchParams(location.hash.slice(1));
  const number = (text) => (text === "" || text === null || text === undefined ? NaN : Number(text));
  const passes = (row, host, rule, low, high) => {
    const similarity = number(row.dataset.similarity);
    if (host && row.dataset.host !== host) return false;
    if (rule && row.dataset.rule !== rule) return false;
    if (!Number.isNaN(low) && !(similarity >= low)) return false;
    if (!Number.isNaN(high) && !(similarity <= high)) return false;
    return true;
  };
  const compare = (key) => (a, b) => {
    const x = a.dataset[key], y = b.dataset[key];
    if (x === "" || y === "") return (x === "") - (y === "");
    const nx = Number(x), ny = Number(y);
    return Number.isNaN(nx) || Number.isNaN(ny) ? x.localeCompare(y) : nx - ny;
  };
  const apply = () => {
    const p = state();
    const host = p.get("host") || "", rule = p.get("rule") || "";
    const low = number(p.get("min")), high = number(p.get("max"));
    const key = p.get("sort") || "similarity", order = p.get("order") === "desc" ? "desc" : "asc";
    form.elements.host.value = host;
    form.elements.rule.value = rule;
    form.elements.min.value = Number.isNaN(low) ? "" : String(low);
    form.elements.max.value = Number.isNaN(high) ? "" : String(high);
    let near = 0, clusters = 0;
    for (const row of document.querySelectorAll("tbody.near")) {
      row.hidden = !passes(row, host, rule, low, high);
      near += !row.hidden;
    }
    for (const cluster of document.querySelectorAll("details.cluster")) {
      let any = false;
      for (const row of cluster.querySelectorAll("tr.drop")) {
        row.hidden = !passes(row, host, rule, low, high);
        any = any || !row.hidden;
      }
      cluster.hidden = !any;
      clusters += any;
    }
    if (table) {
      const rows = [...table.querySelectorAll("tbody.near")].sort(compare(key));
      if (order === "desc") rows.reverse();
      for (const row of rows) table.appendChild(row);
      for (const th of table.querySelectorAll("th[data-sort]")) {
        th.setAttribute("aria-sort", th.dataset.sort === key ? (order === "asc" ? "ascending" : "descending") : "none");
      }
    }
    const all = (selector) => document.querySelectorAll(selector).length;
    const nears = all("tbody.near"), clustered = all("details.cluster");
    shown.textContent = `shown: ${near} of ${nears} near-duplicates, ${clusters} of ${clustered} clusters`;
    document.body.dataset.near = String(near);
    document.body.dataset.clusters = String(clusters);
  };
  const go = (change) => {
    const p = state();
    for (const [name, value] of Object.entries(change)) {
      if (value === "") p.delete(name); else p.set(name, value);
    }
    location.hash = p.toString();
  };
  form.addEventListener("input", () => go({
    host: form.elements.host.value, rule: form.elements.rule.value,
    min: form.elements.min.value, max: form.elements.max.value,
  }));
  form.addEventListener("submit", (event) => event.preventDefault());
  for (const th of document.querySelectorAll("th[data-sort]")) {
    th.querySelector("button").addEventListener("click", () => {
      const p = state();
      const same = (p.get("sort") || "similarity") === th.dataset.sort;
      go({sort: th.dataset.sort, order: same && p.get("order") !== "desc" ? "desc" : "asc"});
    });
  }
  window.addEventListener("hashchange", apply);
  apply();
})();
"""


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; "
    f"base-uri 'none'; script-src {script_hash(SCRIPT)}"
)
