// tests/kernels/coverage_proof_test.cpp — built only with -DDELTAPROOF_FALSIFY=ON.
// The proof table of issue 11: for each hole the coverage matrix closed, a
// fault of our own design (kernels/faults.hpp) that the fixtures before it
// could not see. Each runs on cpu-chunk over every canonical fixture, forward
// and backward against the oracle at the CPU bars: green on each of the 39
// fixtures that existed before the matrix (canonical_fixtures() lists them
// first), red on a new fixture exactly where the hole it lives in is. The
// relation points are proved by the campaign (falsify/catalog.json).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/faults.hpp"
#include "oracle/fixture.hpp"
#include "tests/kernels/bars.hpp"
#include "tests/kernels/fixture_compare.hpp"

namespace deltaproof::testing {
namespace {

constexpr std::size_t kFixturesBeforeTheMatrix = 39;

// The largest log-decay span -(G_last - G_first) inside a partial last chunk,
// over every (b, h, k): past log(FLT_MAX) a factorised decay overflows.
double tail_span(const std::string& file, const oracle::FixtureSpec& spec) {
  const auto g = read_safetensors(source_dir() / "fixtures" / file).at("g").to_f64();
  const int tail = spec.T % spec.chunk;
  if (tail == 0) return 0.0;
  const int width = spec.op == Op::gdn ? 1 : spec.K;
  double span = 0.0;
  for (int b = 0; b < spec.B; ++b)
    for (int h = 0; h < spec.H; ++h)
      for (int k = 0; k < width; ++k) {
        double G = 0.0;
        for (int t = spec.T - tail; t < spec.T; ++t)
          G += g[((static_cast<std::size_t>(b) * spec.T + t) * spec.H + h) * width + k];
        span = std::max(span, -G);
      }
  return span;
}

struct Proof {
  const char* fault;
  const char* hole;
  std::function<bool(const std::string& file, const oracle::FixtureSpec&)> red;
};

const std::vector<Proof>& proofs() {
  static const std::vector<Proof> table = {
      {"tail-decay-factorised", "a long, strongly decaying partial tail",
       [](const std::string& file, const oracle::FixtureSpec& s) {
         return tail_span(file, s) > std::log(FLT_MAX);
       }},
      {"chunk-shift-lacks-32", "chunk 32",
       [](const std::string&, const oracle::FixtureSpec& s) { return s.chunk == 32 && s.T > 32; }},
      {"v-read-with-k-stride", "K != V",
       [](const std::string&, const oracle::FixtureSpec& s) { return s.K != s.V; }},
      {"ceil-div-off-by-one", "a one-row tail",
       [](const std::string&, const oracle::FixtureSpec& s) { return s.T % s.chunk == 1; }},
      {"gate-batch-offset-dropped", "B > 1",
       [](const std::string&, const oracle::FixtureSpec& s) { return s.B > 1; }},
      {"head-count-hardcoded-2", "H > 2",
       [](const std::string&, const oracle::FixtureSpec& s) { return s.H > 2; }},
      {"short-call-ignores-h0", "T < chunk with h0 != 0",
       [](const std::string&, const oracle::FixtureSpec& s) {
         return s.T < s.chunk && !s.h0_is_zero();
       }},
  };
  return table;
}

// What ctest lists beside each test: the fault's id.
void PrintTo(const Proof& proof, std::ostream* out) { *out << proof.fault; }

class CoverageProof : public ::testing::TestWithParam<Proof> {
 protected:
  void TearDown() override { kernels::set_active_fault("none"); }
};

TEST_P(CoverageProof, GreenOnTheFixturesBeforeTheMatrixRedWhereTheHoleWas) {
  const Proof& proof = GetParam();
  kernels::set_active_fault(proof.fault);
  const auto fixtures = oracle::canonical_fixtures();
  ASSERT_GT(fixtures.size(), kFixturesBeforeTheMatrix);
  std::vector<std::string> red_on;
  for (std::size_t i = 0; i < fixtures.size(); ++i) {
    const auto& [file, spec] = fixtures[i];
    // the matrix is over dense batches (oracle/coverage.cpp); the faults of
    // packed and grouped paths are the catalog's (docs/VARLEN.md)
    if (spec.packed() || spec.group() > 1) continue;
    const BackendRun run = run_on_fixture("cpu-chunk", file, kernels::Phase::bwd);
    std::string red_term;
    for (const auto& e : run.terms) {
      if (!(e.rel <= term_bar("cpu-chunk", e.term)) && red_term.empty())
        red_term = fmt::format("{} rel {:.2e}", e.term, e.rel);
    }
    const bool old = i < kFixturesBeforeTheMatrix;
    const bool expected = proof.red(file, spec);
    if (old) {
      EXPECT_FALSE(expected) << file << " is a fixture from before the matrix";
      EXPECT_TRUE(red_term.empty()) << proof.fault << " is red on " << file
                                    << ", a fixture from before the matrix: " << red_term;
    } else {
      EXPECT_EQ(!red_term.empty(), expected)
          << proof.fault << " on " << file << (expected ? " stayed green" : " went red: ")
          << red_term;
    }
    if (!red_term.empty()) red_on.push_back(file);
  }
  std::cout << fmt::format("[proof] {:<26} ({}) green on the {} old fixtures, red on {}: {}\n",
                           proof.fault, proof.hole, kFixturesBeforeTheMatrix, red_on.size(),
                           fmt::join(red_on, " "));
  EXPECT_FALSE(red_on.empty()) << proof.fault << " is red nowhere";
}

INSTANTIATE_TEST_SUITE_P(Issue11, CoverageProof, ::testing::ValuesIn(proofs()),
                         [](const auto& info) {
                           std::string name(info.param.fault);
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace deltaproof::testing
