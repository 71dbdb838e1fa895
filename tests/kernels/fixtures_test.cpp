// tests/kernels/fixtures_test.cpp — both CPU backends on every committed
// fixture, every term, forward first: o and ht must pass before any gradient
// is compared. Each failure names the fixture, backend, term, figure and bar;
// each pass prints the measured error (the evidence behind bars.hpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tests/kernels/bars.hpp"
#include "tests/kernels/fixture_compare.hpp"

namespace deltaproof::testing {
namespace {

using Param = std::tuple<std::string, std::string>;  // fixture, backend

class EveryFixture : public ::testing::TestWithParam<Param> {};

TEST_P(EveryFixture, EveryTermUnderTheBarForwardFirst) {
  const auto& [fixture, backend] = GetParam();
  const double fwd = fwd_bar(backend), bwd = bwd_bar(backend);
  const BackendRun run = run_on_fixture(backend, fixture, kernels::Phase::bwd);
  std::string measured;
  for (const auto& t : run.terms) measured += fmt::format(" {}={:.2e}", t.term, t.rel);
  std::cout << "[measured] " << fixture << " " << backend << ":" << measured << "\n";
  for (const char* term : {"o", "ht"}) {
    const TermError& e = run.term(term);
    ASSERT_LE(e.rel, fwd) << fixture << " " << backend << " forward term " << term << ": rel "
                          << e.rel << " (abs " << e.abs_max << ", ref amax " << e.ref_amax
                          << ", non-finite " << e.non_finite << ") above bar " << fwd
                          << "; gradients not compared";
  }
  for (const auto& e : run.terms) {
    if (e.term == "o" || e.term == "ht") continue;
    EXPECT_LE(e.rel, bwd) << fixture << " " << backend << " term " << e.term << ": rel " << e.rel
                          << " (abs " << e.abs_max << ", ref amax " << e.ref_amax << ", non-finite "
                          << e.non_finite << ") above bar " << bwd;
    EXPECT_GT(e.ref_amax, 0.0) << e.term << ": the reference is all zero, nothing was compared";
  }
}

std::vector<Param> all_params() {
  std::vector<Param> params;
  for (const auto& f : committed_fixtures())
    for (const char* b : {"cpu-chunk", "cpu-recurrent"}) params.emplace_back(f, b);
  return params;
}

INSTANTIATE_TEST_SUITE_P(Committed, EveryFixture, ::testing::ValuesIn(all_params()),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// The execution record says which stages ran, and how often.
TEST(ExecutionRecord, ChunkBackendRunsEveryStagePerChunk) {
  const BackendRun run =
      run_on_fixture("cpu-chunk", "gdn2/t40-c16.safetensors", kernels::Phase::bwd);
  // 3 chunks (16 + 16 + 8) x 2 heads
  EXPECT_EQ(run.record.stages.at("fwd.intra"), 6);
  EXPECT_EQ(run.record.stages.at("fwd.inter"), 6);
  EXPECT_EQ(run.record.stages.at("bwd.bk2"), 6);
  EXPECT_EQ(run.record.stages.at("bwd.bk1"), 6);
  EXPECT_EQ(run.record.stages.at("bwd.glue"), 6);  // 2 hand-backs + dh0, per head
  const BackendRun fwd =
      run_on_fixture("cpu-chunk", "gdn2/t40-c16.safetensors", kernels::Phase::fwd);
  EXPECT_FALSE(fwd.record.ran("bwd.bk1"));
  EXPECT_EQ(fwd.terms.size(), 2u);
}

TEST(ExecutionRecord, RecurrentBackendRecordsItsSweeps) {
  const BackendRun run =
      run_on_fixture("cpu-recurrent", "kda/t32-c16.safetensors", kernels::Phase::bwd);
  EXPECT_EQ(run.record.stages.at("recurrent.fwd"), 2);
  EXPECT_EQ(run.record.stages.at("recurrent.bwd"), 2);
}

// The same fixture at every chunk size the kernel supports.
TEST(ChunkSizes, EveryChunkSizeOnTheSameFixture) {
  for (int chunk : {16, 32, 64}) {
    const BackendRun run =
        run_on_fixture("cpu-chunk", "gdn2/t200-c64.safetensors", kernels::Phase::bwd, chunk);
    for (const auto& e : run.terms)
      EXPECT_LE(e.rel, bwd_bar("cpu-chunk")) << "chunk " << chunk << " term " << e.term;
  }
}

}  // namespace
}  // namespace deltaproof::testing
