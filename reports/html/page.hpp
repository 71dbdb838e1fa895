// reports/html/page.hpp — one self-contained HTML page: inline CSS and a
// little dependency-free JavaScript (sortable, filterable tables; rows that
// open to their details), no network, no external file. The sections that
// fill it (gate reports, campaigns, diffs) are in html_report.cpp.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace deltaproof::html {

// A table whose rows sort by clicking a column head and filter by the
// selects above it. Each row is a <tbody> (a main row and, optionally, a
// details row that opens from it), so sorting keeps the two together.
class Table {
 public:
  struct Column {
    std::string key;    // data-KEY on each row: what it sorts and filters by
    std::string label;  // the head's text
    bool numeric = false;
    bool filter = false;  // a select of the column's values above the table
  };
  Table(std::string id, std::string noun, std::vector<Column> columns);

  // One row: `cells` are HTML (escaped by the caller), one per column;
  // `values` the sort/filter value per column key (raw text; numbers as
  // printed by fmt "{}"); `details` HTML opened by the row's button, or "".
  // `open`: the details show from the start (a red gate's).
  void add_row(const std::vector<std::string>& cells,
               const std::map<std::string, std::string>& values, std::string_view details = {},
               bool open = false);
  // Filters, the count line and the table.
  std::string finish() const;

 private:
  std::string id_, noun_;
  std::vector<Column> columns_;
  std::map<std::string, std::set<std::string>> seen_;  // filter column -> values
  std::string rows_;
  int count_ = 0;
};

// A verdict or status as a badge: its word, and its colour (Okabe-Ito).
std::string badge(std::string_view word);

// <h2 id=...>, a header's key/value list.
std::string key_values(const std::vector<std::pair<std::string, std::string>>& rows);

// The whole page: <!doctype html>, the title, the CSS, `body`, the script.
std::string page(std::string_view title, std::string_view body);

}  // namespace deltaproof::html
