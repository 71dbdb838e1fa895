// reports/html/page.cpp — see page.hpp.
#include "reports/html/page.hpp"

#include <fmt/format.h>

#include "reports/html/svg.hpp"

namespace deltaproof::html {

namespace {

// Sizes in rem so the page follows the reader's font size; figures in a
// monospace face with tabular digits so columns of numbers line up.
constexpr std::string_view kStyle = R"css(
:root { --pass: #0072B2; --fail: #D55E00; --skip: #E69F00; --ink: #1a1a1a; --muted: #555;
        --rule: #d0d0d0; --band: #f4f4f4; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       color: var(--ink); margin: 0 auto; padding: 1rem 1.5rem 4rem; max-width: 120rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.25rem; margin: 2.5rem 0 .5rem; border-bottom: 2px solid var(--ink); }
h3 { font-size: 1.05rem; margin: 1.5rem 0 .4rem; }
p.note { color: var(--muted); margin: .2rem 0 .6rem; max-width: 60rem; }
td.mono { white-space: nowrap; }
code, .num, .mono { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .85rem; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .5rem 0; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: .25rem; color: #fff;
         font-weight: 600; font-size: .8rem; letter-spacing: .02em; white-space: nowrap; }
.badge.pass { background: var(--pass); }
.badge.fail { background: var(--fail); }
.badge.skip { background: var(--skip); color: #1a1a1a; }
.badge.other { background: #666; }
.big .badge { font-size: 1.1rem; padding: .1rem .7rem; }
pre.diff { margin: .3rem 0; padding: .4rem; background: #f6f6f6; overflow-x: auto; }
pre.diff .del { color: #a4302a; }
pre.diff .ins { color: #1b6b3a; }
.filters { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: center; margin: .6rem 0; }
.filters label { font-size: .85rem; color: var(--muted); }
.filters select, .filters input { font: inherit; font-size: .85rem; }
.count { font-size: .85rem; color: var(--muted); }
table { border-collapse: collapse; margin: .3rem 0; }
th, td { padding: .2rem .5rem; border-bottom: 1px solid var(--rule); vertical-align: top;
         text-align: left; }
th { position: sticky; top: 0; background: #fff; z-index: 1; font-size: .85rem;
     border-bottom: 2px solid var(--ink); white-space: nowrap; }
th[data-key] { cursor: pointer; }
th[data-key]::after { content: " \2195"; color: #aaa; }
th.asc::after { content: " \2191"; color: var(--ink); }
th.desc::after { content: " \2193"; color: var(--ink); }
tbody.row:hover > tr:first-child { background: var(--band); }
tr.details > td { background: #fafafa; padding: .5rem 1rem 1rem; }
table.sortable > tbody > tr:first-child > td { white-space: nowrap; }
td.message { min-width: 20rem; max-width: 40rem; }
.detail-body { max-width: 100rem; white-space: normal; }
button.open { font: inherit; font-size: .8rem; border: 1px solid var(--rule); background: #fff;
              border-radius: .2rem; cursor: pointer; padding: 0 .35rem; margin-right: .35rem; }
.scroll { overflow-x: auto; max-width: 100%; }
.legend { font-size: .8rem; color: var(--muted); }
.reason { color: var(--fail); }
ul.tight { margin: .2rem 0; padding-left: 1.2rem; }
svg text { font-family: "DejaVu Sans", sans-serif; fill: var(--ink); }
nav.toc a { margin-right: 1rem; }
)css";

// Sort by a column head, filter by the selects and the search box, open a
// row's details. Every handler is attached here; the page holds no inline JS.
constexpr std::string_view kScript = R"js(
(function () {
  'use strict';
  function value(row, key, numeric) {
    var v = row.getAttribute('data-' + key);
    if (!numeric) return v === null ? '' : v;
    if (v === null || v === '' || v === '-' || v === 'nan') return NaN;
    if (v === 'inf') return Infinity;
    if (v === '-inf') return -Infinity;
    return parseFloat(v);
  }
  function sortBy(table, th) {
    var key = th.getAttribute('data-key'), numeric = th.hasAttribute('data-numeric');
    var ascending = !th.classList.contains('asc');
    table.querySelectorAll('th').forEach(function (h) { h.classList.remove('asc', 'desc'); });
    th.classList.add(ascending ? 'asc' : 'desc');
    var rows = Array.prototype.slice.call(table.querySelectorAll(':scope > tbody.row'));
    rows.sort(function (a, b) {
      var x = value(a, key, numeric), y = value(b, key, numeric);
      if (numeric) {
        if (isNaN(x)) return isNaN(y) ? 0 : 1;   // unmeasured last either way
        if (isNaN(y)) return -1;
        return ascending ? x - y : y - x;
      }
      return ascending ? x.localeCompare(y) : y.localeCompare(x);
    });
    rows.forEach(function (r) { table.appendChild(r); });
  }
  function applyFilters(box) {
    var table = document.getElementById(box.getAttribute('data-for'));
    var selects = box.querySelectorAll('select'), search = box.querySelector('input');
    var needle = search ? search.value.trim().toLowerCase() : '';
    var shown = 0, rows = table.querySelectorAll(':scope > tbody.row');
    rows.forEach(function (row) {
      var keep = true;
      selects.forEach(function (s) {
        if (s.value !== '' && row.getAttribute('data-' + s.getAttribute('data-key')) !== s.value)
          keep = false;
      });
      if (keep && needle && (row.getAttribute('data-name') || '').toLowerCase().indexOf(needle) < 0)
        keep = false;
      row.hidden = !keep;
      if (keep) shown += 1;
    });
    var count = box.querySelector('.count');
    if (count) count.textContent = shown + ' of ' + rows.length + ' ' + box.getAttribute('data-noun') + ' shown';
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('th[data-key]').forEach(function (th) {
      th.addEventListener('click', function () { sortBy(table, th); });
    });
  });
  document.querySelectorAll('.filters').forEach(function (box) {
    box.querySelectorAll('select, input').forEach(function (el) {
      el.addEventListener('input', function () { applyFilters(box); });
    });
    applyFilters(box);
  });
  document.querySelectorAll('button.open').forEach(function (button) {
    button.addEventListener('click', function () {
      var details = button.closest('tbody').querySelector('tr.details');
      details.hidden = !details.hidden;
      button.setAttribute('aria-expanded', String(!details.hidden));
      button.textContent = details.hidden ? '+' : '\u2212';
    });
  });
  document.body.setAttribute('data-ready', '1');
})();
)js";

std::string badge_class(std::string_view word) {
  if (word == "pass" || word == "PASS" || word == "Killed" || word == "better") return "pass";
  if (word == "fail" || word == "FAIL" || word == "Survived" || word == "KilledWrongTerm" ||
      word == "GreenBroken" || word == "worse" || word == "RuntimeError" ||
      word == "CompileError" || word == "Timeout")
    return "fail";
  if (word == "skipped" || word == "SKIP" || word == "Ignored" || word == "NoEffect" ||
      word == "NoCoverage")
    return "skip";
  return "other";
}

}  // namespace

std::string badge(std::string_view word) {
  return fmt::format("<span class=\"badge {}\">{}</span>", badge_class(word), escape(word));
}

std::string key_values(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<dl class=\"kv\">";
  for (const auto& [key, value] : rows)
    out += fmt::format("<dt>{}</dt><dd>{}</dd>", escape(key), value);
  return out + "</dl>";
}

Table::Table(std::string id, std::string noun, std::vector<Column> columns)
    : id_(std::move(id)), noun_(std::move(noun)), columns_(std::move(columns)) {}

void Table::add_row(const std::vector<std::string>& cells,
                    const std::map<std::string, std::string>& values, std::string_view details,
                    bool open) {
  std::string attrs;
  for (const auto& [key, value] : values)
    attrs += fmt::format(" data-{}=\"{}\"", key, escape(value));
  for (const auto& column : columns_)
    if (column.filter)
      if (const auto found = values.find(column.key); found != values.end())
        seen_[column.key].insert(found->second);
  rows_ += fmt::format("<tbody class=\"row\"{}><tr>", attrs);
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const bool numeric = c < columns_.size() && columns_[c].numeric;
    const bool first = c == 0;
    std::string cell = cells[c];
    if (first && !details.empty())
      cell =
          fmt::format("<button class=\"open\" aria-expanded=\"{}\" title=\"details\">{}</button>{}",
                      open ? "true" : "false", open ? "\u2212" : "+", cell);
    rows_ += fmt::format("<td{}>{}</td>",
                         numeric ? " class=\"num\"" : (first ? " class=\"name\"" : ""), cell);
  }
  rows_ += "</tr>";
  if (!details.empty())
    rows_ += fmt::format(
        "<tr class=\"details\"{}><td colspan=\"{}\"><div class=\"detail-body\">{}</div></td></tr>",
        open ? "" : " hidden", columns_.size(), details);
  rows_ += "</tbody>";
  ++count_;
}

std::string Table::finish() const {
  std::string out = fmt::format("<div class=\"filters\" data-for=\"{}\" data-noun=\"{}\">",
                                escape(id_), escape(noun_));
  for (const auto& column : columns_) {
    if (!column.filter) continue;
    out += fmt::format("<label>{} <select data-key=\"{}\"><option value=\"\">all</option>",
                       escape(column.label), escape(column.key));
    if (const auto found = seen_.find(column.key); found != seen_.end())
      for (const auto& value : found->second)
        out += fmt::format("<option>{}</option>", escape(value));
    out += "</select></label>";
  }
  out += fmt::format(
      "<label>name <input type=\"search\" placeholder=\"part of a name\"></label>"
      "<span class=\"count\">{} {}</span></div>",
      count_, escape(noun_));
  out += fmt::format("<div class=\"scroll\"><table class=\"sortable\" id=\"{}\"><thead><tr>",
                     escape(id_));
  for (const auto& column : columns_) {
    if (column.key.empty())
      out += fmt::format("<th>{}</th>", escape(column.label));
    else
      out += fmt::format("<th data-key=\"{}\"{}>{}</th>", escape(column.key),
                         column.numeric ? " data-numeric" : "", escape(column.label));
  }
  return out + "</tr></thead>" + rows_ + "</table></div>";
}

std::string page(std::string_view title, std::string_view body) {
  return fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>{}</title><style>{}</style></head>\n<body>\n{}\n<script>{}</script></body></html>\n",
      escape(title), kStyle, body, kScript);
}

}  // namespace deltaproof::html
