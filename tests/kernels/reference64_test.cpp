// tests/kernels/reference64_test.cpp — the f64 reference on the GPU
// (oracle/reference64.hpp) against the oracle: the CPU's f64 oracle on
// every term to 1e-12 (the same double arithmetic in other orders), and the
// quad oracle on sampled sequences to 1e-12 (oracle/sampled.hpp, as a
// production-shape reference is checked). Shapes: every op, B2 H3, a partial
// last segment of the checkpoints (T 150 = 2 x 64 + 22), K=V=128.
//
// Built where nvcc is, run where a GPU is: ctest --test-dir build -L gpu.
// Where no GPU is, every test is skipped, never passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "kernels/backend.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/gpu_reference.hpp"
#include "oracle/reference64.hpp"
#include "oracle/sampled.hpp"

namespace deltaproof::testing {
namespace {

using oracle::TensorMap;

struct Case {
  const char* name;
  Op op;
  int B, T, H, K, V;
  oracle::Regime regime;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Reference64 : public ::testing::TestWithParam<Case> {};

TEST_P(Reference64, AgreesWithTheF64OracleAndWithQuadOnSampledSequences) {
  if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  const Case& c = GetParam();
  oracle::FixtureSpec spec;
  spec.op = c.op;
  spec.B = c.B, spec.T = c.T, spec.H = c.H, spec.K = c.K, spec.V = c.V;
  spec.regime = c.regime;
  spec.seed = 11;
  const oracle::Problem p = oracle::draw_problem(spec);
  const TensorMap gpu = oracle::evaluate_on_gpu(p, true);
  const TensorMap cpu = oracle::evaluate<double>(p, true, 0).tensors;
  for (const auto& [name, want] : cpu) {
    const std::vector<double>& got = gpu.at(name);
    ASSERT_EQ(got.size(), want.size()) << name;
    double amax = 0, diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      amax = std::max(amax, std::abs(want[i]));
      diff = std::max(diff, std::abs(got[i] - want[i]));
      ASSERT_TRUE(std::isfinite(got[i])) << name << " element " << i;
    }
    const double rel = amax > 0 ? diff / amax : diff;
    std::printf("[measured] %s %s vs f64 oracle rel %.3e\n", c.name, name.c_str(), rel);
    EXPECT_LE(rel, 1e-12) << c.name << " " << name;
  }
  const auto sampled =
      oracle::check_heads_against_quad(p, gpu, {{0, 0}, {c.B - 1, c.H - 1}}, true, 0);
  for (const auto& head : sampled) {
    std::printf("[measured] %s (%d, %d) vs quad worst %s rel %.3e\n", c.name, head.b, head.h,
                head.worst().term.c_str(), head.worst().rel);
    EXPECT_LE(head.worst().rel, 1e-12) << c.name << " " << head.worst().term;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Reference64,
    ::testing::Values(Case{"gdn2_b2h3", Op::gdn2, 2, 150, 3, 8, 4, oracle::Regime::default_},
                      Case{"kda_b2h3_mild", Op::kda, 2, 150, 3, 8, 16, oracle::Regime::mild},
                      Case{"gdn_stress", Op::gdn, 1, 70, 2, 16, 8, oracle::Regime::stress},
                      Case{"gdn2_k128", Op::gdn2, 1, 200, 1, 128, 128, oracle::Regime::default_}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// The whole of `gen --reference gpu-f64` on a shape of several chunks and
// sequences: every self-check of oracle/external.hpp passes, and loss_along
// (which moves one gdn2-form tensor in place) agrees with a fresh evaluation
// of the moved problem.
TEST(Reference64External, EverySelfCheckPassesAndLossAlongIsAFreshEvaluation) {
  if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    oracle::FixtureSpec spec;
    spec.op = op;
    spec.B = 2, spec.T = 300, spec.H = 3, spec.K = 64, spec.V = 32, spec.chunk = 64;
    spec.dtype = DType::BF16;
    const oracle::ExternalEvaluator gpu = oracle::gpu_f64_evaluator();
    const oracle::GeneratedFixture f = oracle::generate_external_fixture(spec, gpu, {});
    for (const auto& c : f.report.checks)
      std::printf("[measured] %s %s %.3e (bar %.3g)\n", std::string(op_name(op)).c_str(),
                  c.check.c_str(), c.figure, c.bar);
    EXPECT_TRUE(f.report.passed()) << op_name(op) << " " << f.report.first_failure()->check;

    const oracle::Problem p = oracle::draw_problem(spec);
    for (const auto& d : oracle::scaled_directions(p)) {
      oracle::Problem moved = p;
      for (std::size_t i = 0; i < d.values.size(); ++i)
        moved.values[d.tensor][i] += 1e-3 * d.values[i];
      const double fresh = oracle::loss_of(moved, oracle::evaluate_on_gpu(moved, false));
      EXPECT_EQ(gpu.loss_along(p, d, 1e-3), fresh) << op_name(op) << " " << d.tensor;
    }
  }
}

// The session's forward is run_reference64's, bit for bit, with its inputs as
// uploaded and with one replaced; a replacement it cannot take is refused.
TEST(Reference64Session, ItsForwardIsRunReference64sWithAndWithoutAReplacement) {
  if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  oracle::Reference64Input in;
  in.B = 2, in.T = 70, in.H = 3, in.K = 16, in.V = 8, in.scale = 0.25;
  Rng rng(7, 0);
  const std::size_t tk = 2 * 70 * 3 * 16, tv = 2 * 70 * 3 * 8, kv = 2 * 3 * 16 * 8;
  auto draw = [&rng](std::size_t n, double lo, double hi) {
    std::vector<double> x(n);
    for (double& v : x) v = rng.uniform(lo, hi);
    return x;
  };
  in.q = draw(tk, -1, 1), in.k = draw(tk, -0.3, 0.3), in.g = draw(tk, -0.2, 0);
  in.b = draw(tk, 0, 1), in.v = draw(tv, -1, 1), in.w = draw(tv, 0, 1), in.h0 = draw(kv, -1, 1);
  oracle::Reference64Session session(in);
  std::vector<double> o, ht;
  session.forward({}, o, ht);
  const auto whole = oracle::run_reference64(in, false);
  EXPECT_EQ(o, whole.o);
  EXPECT_EQ(ht, whole.ht);

  const std::vector<double> w = draw(tv, 0, 1);
  session.forward({{"w", &w}}, o, ht);
  oracle::Reference64Input moved = in;
  moved.w = w;
  const auto replaced = oracle::run_reference64(moved, false);
  EXPECT_EQ(o, replaced.o);
  EXPECT_EQ(ht, replaced.ht);
  EXPECT_NE(o, whole.o);
  session.forward({}, o, ht);  // the replacement lasts one forward
  EXPECT_EQ(o, whole.o);

  EXPECT_EQ(session.size("w"), tv);
  EXPECT_THROW(session.size("beta"), std::invalid_argument);
  const std::vector<double> short_w(3);
  EXPECT_THROW(session.forward({{"w", &short_w}}, o, ht), std::invalid_argument);
}

// Bad input is refused with a sentence before the GPU is touched.
TEST(Reference64Refuses, AShapeItCannotRunOrInputsOfTheWrongSize) {
  oracle::Reference64Input in;
  in.K = 200;
  try {
    oracle::run_reference64(in, false);
    ADD_FAILURE() << "K = 200 ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("K and V must be at most 128"), std::string::npos)
        << e.what();
  }
  in.K = 4;
  try {
    oracle::run_reference64(in, false);
    ADD_FAILURE() << "empty inputs ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("q holds 0 values, not 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace deltaproof::testing
