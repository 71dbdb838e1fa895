// tests/oracle/external_test.cpp — a fixture whose reference is computed
// elsewhere (oracle/external.hpp), with the CPU's f64 oracle standing in for
// the GPU: the quad oracle split over V columns is the whole one (bit for bit
// in the columns, to ~1e-15 in the sums); a right evaluator passes every
// self-check; a wrong gradient in a sequence the quad sample skips, a wrong
// output in one it reads, and an evaluator that is not deterministic are each
// refused by the check built for them.
#include "oracle/external.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "core/metric.hpp"
#include "oracle/sampled.hpp"

namespace deltaproof::oracle {
namespace {

FixtureSpec small_spec(Op op) {
  FixtureSpec spec;
  spec.op = op;
  spec.B = 2, spec.T = 24, spec.H = 2, spec.K = 8, spec.V = 6;
  spec.chunk = 16;
  spec.seed = 5;
  return spec;
}

ExternalEvaluator f64_oracle() {
  return {
      "f64 oracle (test)",
      [](const Problem& p, bool gradients) { return evaluate<double>(p, gradients, 1).tensors; },
      {}};
}

const CheckFigure& check(const GeneratedFixture& f, const std::string& name) {
  for (const auto& c : f.report.checks)
    if (c.check == name) return c;
  throw std::runtime_error("no check " + name);
}

TEST(QuadByColumns, IsTheWholeQuadOracleColumnsBitForBitSumsTo1e14) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const Problem p = head_problem(draw_problem(small_spec(op)), 1, 0);
    const TensorMap whole = evaluate_quad(p, true, 1).tensors;
    for (int groups : {1, 4, 6}) {
      const TensorMap split = evaluate_quad_by_columns(p, true, groups, 2);
      ASSERT_EQ(split.size(), whole.size());
      for (const auto& [name, want] : whole) {
        const std::vector<double>& got = split.at(name);
        ASSERT_EQ(got.size(), want.size()) << name;
        const bool columns = name == "o" || name == "ht" || name == "dv" || name == "dw" ||
                             name == "dh0" || groups == 1;
        if (columns)
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(double)), 0)
              << op_name(op) << " " << name << " groups " << groups;
        else
          EXPECT_LE(rel_max_error(got, want), 1e-14) << op_name(op) << " " << name;
      }
    }
  }
}

TEST(QuadByColumns, RefusesAProblemOfMoreThanOneSequence) {
  EXPECT_THROW(evaluate_quad_by_columns(draw_problem(small_spec(Op::kda)), true, 2, 1), InputError);
}

TEST(ExternalFixture, TheF64OraclePassesEveryCheck) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const GeneratedFixture f = generate_external_fixture(small_spec(op), f64_oracle(), {});
    for (const auto& c : f.report.checks)
      std::printf("[measured] %s %s %.3e (bar %.3g)\n", std::string(op_name(op)).c_str(),
                  c.check.c_str(), c.figure, c.bar);
    EXPECT_TRUE(f.report.passed()) << op_name(op) << " " << f.report.first_failure()->check;
    EXPECT_LE(check(f, "sampled_vs_quad").figure, 1e-12);
    EXPECT_EQ(f.file.metadata.at("reference_precision"), "f64 oracle (test)");
    EXPECT_EQ(f.file.metadata.at("status"), "checked");
    EXPECT_TRUE(f.file.has("dh0"));
  }
}

// dk of sequence (0, 1) off by 1%: the quad sample (the first and the last
// sequence) never reads it; the finite differences of the evaluator's own
// function do.
TEST(ExternalFixture, AWrongGradientOutsideTheSampleIsCaughtByTheFiniteDifferences) {
  const FixtureSpec spec = small_spec(Op::kda);
  ExternalEvaluator wrong = f64_oracle();
  wrong.evaluate = [&](const Problem& p, bool gradients) {
    TensorMap t = evaluate<double>(p, gradients, 1).tensors;
    if (gradients)
      for (int tok = 0; tok < spec.T; ++tok)
        for (int i = 0; i < spec.K; ++i)
          t.at("dk")[token_offset(spec, spec.K, 0, tok, 1, i)] *= 1.01;
    return t;
  };
  const GeneratedFixture f = generate_external_fixture(spec, wrong, {});
  EXPECT_TRUE(check(f, "sampled_vs_quad").passed);
  EXPECT_FALSE(check(f, "fd_vs_reverse_sweep").passed) << check(f, "fd_vs_reverse_sweep").figure;
  EXPECT_FALSE(f.report.passed());
}

// o of the last sequence off by one part in 1e9: consistent with its own
// gradient (the directional checks differentiate the evaluator's function), so
// only the quad sample sees it.
TEST(ExternalFixture, AWrongOutputInASampledSequenceIsCaughtByQuad) {
  const FixtureSpec spec = small_spec(Op::gdn2);
  ExternalEvaluator wrong = f64_oracle();
  wrong.evaluate = [&](const Problem& p, bool gradients) {
    TensorMap t = evaluate<double>(p, gradients, 1).tensors;
    t.at("o")[token_offset(spec, spec.V, spec.B - 1, 9, spec.H - 1, 2)] *= 1 + 1e-9;
    return t;
  };
  const GeneratedFixture f = generate_external_fixture(spec, wrong, {});
  EXPECT_FALSE(check(f, "sampled_vs_quad").passed) << check(f, "sampled_vs_quad").figure;
}

TEST(ExternalFixture, AnEvaluatorThatIsNotDeterministicIsRefused) {
  int calls = 0;
  ExternalEvaluator drifting = f64_oracle();
  drifting.evaluate = [&](const Problem& p, bool gradients) {
    TensorMap t = evaluate<double>(p, gradients, 1).tensors;
    if (gradients && calls++ > 0) t.at("ht")[0] = std::nextafter(t.at("ht")[0], 1e300);
    return t;
  };
  const GeneratedFixture f = generate_external_fixture(small_spec(Op::gdn), drifting, {});
  EXPECT_FALSE(check(f, "determinism").passed);
  EXPECT_TRUE(check(f, "sampled_vs_quad").passed);
}

// The file's bytes depend on the problem and the evaluator only: the steps'
// wall times are reported beside it (timings), never in it.
TEST(ExternalFixture, TwoGenerationsGiveTheSameBytesAndTheTimingsStayOutOfTheFile) {
  const FixtureSpec spec = small_spec(Op::gdn2);
  const GeneratedFixture a = generate_external_fixture(spec, f64_oracle(), {});
  const GeneratedFixture b = generate_external_fixture(spec, f64_oracle(), {});
  EXPECT_EQ(differing_bytes(a.file, b.file), 0u);
  for (const char* step : {"evaluate", "sampled_vs_quad", "fd_vs_reverse_sweep",
                           "taylor_remainder_order", "determinism", "assemble"})
    EXPECT_TRUE(a.timings.contains(step)) << step;
  EXPECT_EQ(a.timings.at("fd_evaluations").get<int>() % 7, 0);  // per direction, 7 inputs
  EXPECT_EQ(a.file.metadata.at("self_checks").find("seconds"), std::string::npos);
}

TEST(ProductionFixtures, AreTheIssuesShapes) {
  const auto set = production_fixtures();
  ASSERT_EQ(set.size(), 4u);
  EXPECT_EQ(set[0].file, "gdn2/t4096-c64-k128-b4h16-bf16.safetensors");
  EXPECT_EQ(set[3].file, "kda/t32768-c64-k128-b1h1-bf16.safetensors");
  for (const auto& f : set) {
    EXPECT_NO_THROW(f.spec.validate());
    EXPECT_EQ(f.spec.K, 128);
    EXPECT_EQ(f.spec.V, 128);
    EXPECT_EQ(f.spec.chunk, 64);
  }
}

}  // namespace
}  // namespace deltaproof::oracle
