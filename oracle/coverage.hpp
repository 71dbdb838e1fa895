// oracle/coverage.hpp — the declared coverage matrix of the canonical fixture
// set (issue 11): the dimensions a kernel's behaviour depends on, each
// fixture's level in each (read from its spec), and the cells the set must
// fill. Not the full product (3 x 4 x 3 x 3 x 3 x 2 x 3 = 1944 cells) but a
// covering design:
//   - every pair of levels of any two dimensions (a bug that needs two
//     conditions at once is seen by some fixture), except the pairs no fixture
//     can have (the edge regime's h0 is zero by definition);
//   - every triple regime x tail x chunk: where the log-decay span inside a
//     chunk, and so exp's range, is decided (a long strongly decaying tail at
//     chunk 64 spans up to 48 x 20 in log-decay, far past exp's f32 range).
// A declared cell without a fixture fails tests/oracle/coverage_test.cpp;
// `deltaproof gate coverage` prints the matrix (README.md holds its output).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/fixture.hpp"

namespace deltaproof::oracle {

enum class Dimension { op, regime, tail, chunk, width, h0, depth };
std::string_view dimension_name(Dimension d);
const std::vector<Dimension>& dimensions();

// The declared levels of a dimension:
//   op      gdn2 kda gdn
//   regime  default mild stress edge
//   tail    whole (T a multiple of the chunk), one-row (T % C == 1, T = 1
//           included), long (T % C > C/2); a short tail (2 .. C/2) is
//           nobody's level
//   chunk   16 32 64
//   width   K=V=8, K!=V, K=V=64 (K=V=128 fixtures are generated in CI by
//           scripts/test.sh, too large to commit)
//   h0      zero, drawn
//   depth   one (one chunk), few (2 or 3), deep (4 or more)
const std::vector<std::string>& levels(Dimension d);
// A fixture's level in a dimension (maybe one no cell declares: "short").
std::string level_of(Dimension d, const FixtureSpec& spec);

struct CoverageCell {
  std::vector<std::pair<Dimension, std::string>> levels;  // two, or three
  std::string name() const;                               // "regime=stress tail=long chunk=32"
  bool holds(const FixtureSpec& spec) const;
};

// Every declared cell: the pairs, then the triples regime x tail x chunk.
std::vector<CoverageCell> declared_cells();

// The canonical set's committed size may not exceed this (tested): 32 MiB.
inline constexpr std::size_t kCommittedBytesBudget = std::size_t{32} << 20;

struct Coverage {
  struct Row {
    CoverageCell cell;
    std::vector<std::string> fixtures;  // files of the set that fill it
  };
  std::vector<Row> rows;
  std::vector<std::string> empty() const;  // names of the cells nobody fills
  nlohmann::json to_json() const;
  // The matrix as Markdown: the triples as a table per chunk (fixtures per
  // cell), then the pairwise counts, for README.md.
  std::string markdown() const;
};

Coverage coverage_of(const std::vector<CanonicalFixture>& fixtures);

}  // namespace deltaproof::oracle
