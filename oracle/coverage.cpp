// oracle/coverage.cpp — see coverage.hpp.
#include "oracle/coverage.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/names.hpp"

namespace deltaproof::oracle {

namespace {
constexpr std::pair<Dimension, std::string_view> kDimensionNames[] = {
    {Dimension::op, "op"},       {Dimension::regime, "regime"}, {Dimension::tail, "tail"},
    {Dimension::chunk, "chunk"}, {Dimension::width, "width"},   {Dimension::h0, "h0"},
    {Dimension::depth, "depth"},
};
}  // namespace

std::string_view dimension_name(Dimension d) { return name_of(kDimensionNames, d); }

const std::vector<Dimension>& dimensions() {
  static const std::vector<Dimension> all = {Dimension::op,    Dimension::regime, Dimension::tail,
                                             Dimension::chunk, Dimension::width,  Dimension::h0,
                                             Dimension::depth};
  return all;
}

const std::vector<std::string>& levels(Dimension d) {
  static const std::map<Dimension, std::vector<std::string>> table = {
      {Dimension::op, {"gdn2", "kda", "gdn"}},
      {Dimension::regime, {"default", "mild", "stress", "edge"}},
      {Dimension::tail, {"whole", "one-row", "long"}},
      {Dimension::chunk, {"16", "32", "64"}},
      {Dimension::width, {"K=V=8", "K!=V", "K=V=64"}},
      {Dimension::h0, {"zero", "drawn"}},
      {Dimension::depth, {"one", "few", "deep"}},
  };
  return table.at(d);
}

std::string level_of(Dimension d, const FixtureSpec& s) {
  switch (d) {
    case Dimension::op:
      return std::string(op_name(s.op));
    case Dimension::regime:
      return std::string(regime_name(s.regime));
    case Dimension::tail: {
      const int rows = s.T % s.chunk;
      if (rows == 0) return "whole";
      if (rows == 1) return "one-row";
      return rows > s.chunk / 2 ? "long" : "short";
    }
    case Dimension::chunk:
      return std::to_string(s.chunk);
    case Dimension::width:
      if (s.K != s.V) return "K!=V";
      return fmt::format("K=V={}", s.K);
    case Dimension::h0:
      return s.h0_is_zero() ? "zero" : "drawn";
    case Dimension::depth: {
      const int chunks = s.num_chunks();
      return chunks == 1 ? "one" : chunks <= 3 ? "few" : "deep";
    }
  }
  return "?";
}

std::string CoverageCell::name() const {
  std::vector<std::string> parts;
  for (const auto& [d, level] : levels)
    parts.push_back(fmt::format("{}={}", dimension_name(d), level));
  return fmt::format("{}", fmt::join(parts, " "));
}

bool CoverageCell::holds(const FixtureSpec& spec) const {
  return std::all_of(levels.begin(), levels.end(),
                     [&](const auto& l) { return level_of(l.first, spec) == l.second; });
}

namespace {
// Pairs no fixture can have.
bool impossible(Dimension a, const std::string& la, Dimension b, const std::string& lb) {
  auto is = [&](Dimension d, const char* level) {
    return (a == d && la == level) || (b == d && lb == level);
  };
  return is(Dimension::regime, "edge") && is(Dimension::h0, "drawn");  // edge: h0 = 0
}
}  // namespace

std::vector<CoverageCell> declared_cells() {
  std::vector<CoverageCell> cells;
  const auto& dims = dimensions();
  for (std::size_t i = 0; i < dims.size(); ++i)
    for (std::size_t j = i + 1; j < dims.size(); ++j)
      for (const auto& li : levels(dims[i]))
        for (const auto& lj : levels(dims[j]))
          if (!impossible(dims[i], li, dims[j], lj))
            cells.push_back({{{dims[i], li}, {dims[j], lj}}});
  for (const auto& regime : levels(Dimension::regime))
    for (const auto& tail : levels(Dimension::tail))
      for (const auto& chunk : levels(Dimension::chunk))
        cells.push_back(
            {{{Dimension::regime, regime}, {Dimension::tail, tail}, {Dimension::chunk, chunk}}});
  return cells;
}

Coverage coverage_of(const std::vector<CanonicalFixture>& fixtures) {
  Coverage c;
  for (const auto& cell : declared_cells()) {
    Coverage::Row row{cell, {}};
    for (const auto& f : fixtures)
      // the matrix is over dense batches: a packed file's tail and depth are
      // its sequences' (docs/VARLEN.md lists those fixtures and their cases)
      if (!f.spec.packed() && f.spec.group() == 1 && cell.holds(f.spec))
        row.fixtures.push_back(f.file);
    c.rows.push_back(std::move(row));
  }
  return c;
}

std::vector<std::string> Coverage::empty() const {
  std::vector<std::string> names;
  for (const auto& row : rows)
    if (row.fixtures.empty()) names.push_back(row.cell.name());
  return names;
}

nlohmann::json Coverage::to_json() const {
  nlohmann::json dims = nlohmann::json::object();
  for (Dimension d : dimensions()) dims[std::string(dimension_name(d))] = levels(d);
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& row : rows)
    cells.push_back({{"cell", row.cell.name()}, {"fixtures", row.fixtures}});
  return {{"design",
           "every pair of levels of two dimensions (but regime=edge h0=drawn: edge's h0 is "
           "zero), and every triple regime x tail x chunk (oracle/coverage.hpp)"},
          {"dimensions", dims},
          {"declared_cells", rows.size()},
          {"empty_cells", empty()},
          {"cells", cells}};
}

std::string Coverage::markdown() const {
  std::map<std::string, std::size_t> count;  // triple cell name -> fixtures
  std::size_t pairs = 0, pairs_filled = 0, fewest = SIZE_MAX;
  for (const auto& row : rows) {
    if (row.cell.levels.size() == 3) {
      count[row.cell.name()] = row.fixtures.size();
    } else {
      ++pairs;
      pairs_filled += row.fixtures.empty() ? 0 : 1;
      fewest = std::min(fewest, row.fixtures.size());
    }
  }
  std::string out =
      "Fixtures per cell regime x tail x chunk (every triple declared; tail: whole, one row, "
      "longer than half a chunk):\n\n| regime | ";
  std::vector<std::string> header, rule = {"---"};
  for (const auto& chunk : levels(Dimension::chunk))
    for (const auto& tail : levels(Dimension::tail)) {
      header.push_back(fmt::format("c{} {}", chunk, tail));
      rule.push_back("---");
    }
  out += fmt::format("{} |\n|{}|\n", fmt::join(header, " | "), fmt::join(rule, "|"));
  for (const auto& regime : levels(Dimension::regime)) {
    std::vector<std::string> cells;
    for (const auto& chunk : levels(Dimension::chunk))
      for (const auto& tail : levels(Dimension::tail))
        cells.push_back(
            std::to_string(count[fmt::format("regime={} tail={} chunk={}", regime, tail, chunk)]));
    out += fmt::format("| {} | {} |\n", regime, fmt::join(cells, " | "));
  }
  out += fmt::format(
      "\nPairs of levels of any two of op, regime, tail, chunk, width, h0, depth: {} declared, "
      "{} filled, the thinnest by {} fixture(s).\n",
      pairs, pairs_filled, fewest == SIZE_MAX ? 0 : fewest);
  return out;
}

}  // namespace deltaproof::oracle
