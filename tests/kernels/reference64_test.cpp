// tests/kernels/reference64_test.cpp — the f64 reference on the GPU
// (kernels/cuda/reference64.hpp) against the oracle: the CPU's f64 oracle on
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
#include <string>

#include "core/gdn2_form.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/reference64.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/sampled.hpp"

namespace deltaproof::testing {
namespace {

using oracle::TensorMap;

// The problem's outputs and gradients from the GPU, in the op's own form.
TensorMap reference_on_gpu(const oracle::Problem& p) {
  const oracle::FixtureSpec& s = p.spec;
  const auto gates = gdn2_gates(s.op, s.K, s.V, p.values);
  kernels::cuda::Reference64Input in;
  in.B = s.B, in.T = s.T, in.H = s.H, in.K = s.K, in.V = s.V, in.scale = s.scale();
  in.q = p.at("q"), in.k = p.at("k"), in.v = p.at("v"), in.h0 = p.at("h0");
  in.g = gates.g, in.b = gates.b, in.w = gates.w;
  in.d_o = p.at("do"), in.dht = p.at("dht");
  const kernels::cuda::Reference64Output out = kernels::cuda::run_reference64(in, true);
  TensorMap t{{"o", out.o},   {"ht", out.ht}, {"dq", out.dq},
              {"dk", out.dk}, {"dv", out.dv}, {"dh0", out.dh0}};
  std::map<std::string, std::vector<double>> folded{{"dg", out.dg}, {"db", out.db}, {"dw", out.dw}};
  fold_gradients(s.op, s.K, s.V, folded);
  for (auto& [name, values] : folded) t[name] = std::move(values);
  return t;
}

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
  const TensorMap gpu = reference_on_gpu(p);
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

// Bad input is refused with a sentence before the GPU is touched.
TEST(Reference64Refuses, AShapeItCannotRunOrInputsOfTheWrongSize) {
  kernels::cuda::Reference64Input in;
  in.K = 200;
  try {
    kernels::cuda::run_reference64(in, false);
    ADD_FAILURE() << "K = 200 ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("K and V must be at most 128"), std::string::npos)
        << e.what();
  }
  in.K = 4;
  try {
    kernels::cuda::run_reference64(in, false);
    ADD_FAILURE() << "empty inputs ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("q holds 0 values, not 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace deltaproof::testing
