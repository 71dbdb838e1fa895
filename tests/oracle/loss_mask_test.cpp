// tests/oracle/loss_mask_test.cpp — `gen --do-mask` (FixtureSpec::masked_do):
// dO zero at every token t with t mod 3 = 2 of its sequence, every other
// value as drawn without the mask; written to and read back from the file.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "oracle/fixture.hpp"
#include "oracle/problem.hpp"
#include "oracle/selfcheck.hpp"

namespace deltaproof::oracle {
namespace {

FixtureSpec masked(FixtureSpec s) {
  s.masked_do = true;
  return s;
}

// Every tensor but dO as drawn without the mask; dO's rows zero exactly at
// a sequence's tokens t mod 3 = 2 (a packed sequence counting from its start).
void expect_masked_rows(const FixtureSpec& s, const Problem& with, const Problem& without) {
  for (const auto& [name, values] : without.values) {
    if (name == "do") continue;
    EXPECT_EQ(with.at(name), values) << name << " moved under the mask";
  }
  const auto& d = with.at("do");
  const auto& drawn = without.at("do");
  int zero_rows = 0;
  for (const auto& r : sequences(s))  // each sequence and value head
    for (int t = r.begin; t < r.end; ++t)
      for (int j = 0; j < s.V; ++j) {
        const std::size_t at = sequence_token_offset(s, s.V, r, t, j, false);
        const bool zero = FixtureSpec::do_masked_at(t - r.begin);
        EXPECT_EQ(d[at], zero ? 0.0 : drawn[at]) << "t " << t << " head " << r.value_head;
        zero_rows += zero && j == 0;
      }
  EXPECT_GT(zero_rows, 0);
}

TEST(LossMask, ZeroesDoAtEveryThirdTokenAndMovesNothingElse) {
  FixtureSpec s;
  s.op = Op::kda, s.B = 2, s.T = 20, s.H = 2, s.K = 4, s.V = 3, s.chunk = 16, s.seed = 3;
  expect_masked_rows(s, draw_problem(masked(s)), draw_problem(s));
}

TEST(LossMask, CountsTokensFromEachPackedSequencesStart) {
  FixtureSpec s;
  s.op = Op::gdn2, s.B = 1, s.H = 1, s.K = 4, s.V = 3, s.chunk = 16, s.seed = 5;
  s.cu_seqlens = {0, 1, 8, 25};
  s.T = 25;
  expect_masked_rows(s, draw_problem(masked(s)), draw_problem(s));
}

TEST(LossMask, GenWritesItAndReadsItBackAndItsSelfChecksPass) {
  FixtureSpec s;
  s.op = Op::gdn2, s.T = 21, s.K = 4, s.V = 3, s.chunk = 16, s.seed = 2;
  s.masked_do = true;
  GenerateOptions options;
  options.threads = 2;
  const GeneratedFixture g = generate_fixture(s, options);
  for (const auto& c : g.report.checks) EXPECT_TRUE(c.passed) << c.check << " " << c.figure;
  EXPECT_EQ(g.file.metadata.at("do_mask"), kDoMask);
  EXPECT_NE(g.file.metadata.at("command").find(" --do-mask"), std::string::npos);
  const SafetensorsFile back = parse_safetensors(serialize_safetensors(g.file), "x");
  const FixtureSpec read = spec_of_fixture(back, "x");
  EXPECT_TRUE(read.masked_do);
  EXPECT_EQ(read.describe(), s.describe());
  EXPECT_NE(s.describe().find("dO-masked"), std::string::npos);

  auto metadata = g.file.metadata;
  metadata["do_mask"] = "every other token";
  try {
    spec_from_metadata(metadata, "f.safetensors");
    FAIL() << "a mask it does not know was taken";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("f.safetensors: metadata 'do_mask' is 'every other token'"),
              std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace deltaproof::oracle
