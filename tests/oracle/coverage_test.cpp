// tests/oracle/coverage_test.cpp — the declared coverage matrix (issue 11,
// oracle/coverage.hpp): every declared cell has a canonical fixture, the
// committed set is inside its size budget, README.md shows the matrix as
// `gate coverage --markdown` prints it, and the check can fail (a set without
// its stress fixtures leaves cells empty, named).
// Run: ctest --test-dir build -R Coverage
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "oracle/coverage.hpp"

namespace deltaproof::oracle {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::filesystem::path kSource = DELTAPROOF_SOURCE_DIR;

TEST(Coverage, EveryDeclaredCellHasACanonicalFixture) {
  const Coverage c = coverage_of(canonical_fixtures());
  EXPECT_GT(c.rows.size(), 200u);
  for (const auto& name : c.empty()) ADD_FAILURE() << "no canonical fixture fills " << name;
}

TEST(Coverage, AnEmptiedCellIsNamed) {
  std::vector<CanonicalFixture> without_stress;
  for (const auto& f : canonical_fixtures())
    if (f.spec.regime != Regime::stress) without_stress.push_back(f);
  const auto empty = coverage_of(without_stress).empty();
  EXPECT_NE(std::find(empty.begin(), empty.end(), "regime=stress tail=long chunk=64"), empty.end());
  EXPECT_NE(std::find(empty.begin(), empty.end(), "op=gdn2 regime=stress"), empty.end());
}

TEST(Coverage, LevelsAreReadFromTheSpec) {
  FixtureSpec s;
  s.T = 112;
  s.chunk = 64;
  s.K = 16;
  s.V = 8;
  EXPECT_EQ(level_of(Dimension::tail, s), "long");  // 48 rows > 32
  EXPECT_EQ(level_of(Dimension::depth, s), "few");
  EXPECT_EQ(level_of(Dimension::width, s), "K!=V");
  EXPECT_EQ(level_of(Dimension::h0, s), "drawn");
  s.T = 1;
  EXPECT_EQ(level_of(Dimension::tail, s), "one-row");
  EXPECT_EQ(level_of(Dimension::depth, s), "one");
  s.T = 40;
  s.chunk = 16;
  EXPECT_EQ(level_of(Dimension::tail, s), "short");  // 8 rows: half, not more
  s.regime = Regime::edge;
  EXPECT_EQ(level_of(Dimension::h0, s), "zero");
}

TEST(Coverage, TheCommittedSetIsTheCanonicalOneAndInsideItsBudget) {
  const auto manifest = nlohmann::json::parse(read_text(kSource / "fixtures" / "manifest.json"));
  std::size_t bytes = 0;
  std::set<std::string> files;
  for (const auto& f : manifest.at("fixtures")) {
    bytes += f.at("bytes").get<std::size_t>();
    files.insert(f.at("file").get<std::string>());
  }
  for (const auto& f : canonical_fixtures()) EXPECT_TRUE(files.count(f.file)) << f.file;
  EXPECT_EQ(files.size(), canonical_fixtures().size());
  EXPECT_LE(bytes, kCommittedBytesBudget) << "the committed fixtures are " << bytes << " bytes";
  EXPECT_EQ(manifest.at("coverage").at("empty_cells").size(), 0u);
}

TEST(Coverage, ReadmeShowsTheMatrix) {
  const std::string readme = read_text(kSource / "README.md");
  const std::string begin = "<!-- coverage:begin (gate coverage --markdown) -->\n";
  const std::string end = "<!-- coverage:end -->";
  const auto from = readme.find(begin), to = readme.find(end);
  ASSERT_NE(from, std::string::npos) << "README.md has no coverage block";
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(readme.substr(from + begin.size(), to - from - begin.size()),
            coverage_of(canonical_fixtures()).markdown())
      << "README.md's coverage block is stale: paste `deltaproof gate coverage --markdown`";
}

}  // namespace
}  // namespace deltaproof::oracle
