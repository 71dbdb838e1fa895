// tests/kernels/cuda_tc_test.cpp — cuda-tc on shapes no committed fixture has,
// forward and backward, judged as its gates judge it: each problem is drawn by the oracle, the f64
// oracle is the reference, and the bf16 class's noise on that problem sets each
// term's bar and bias band (gates/noise.hpp, as `gate check --precision bf16`).
// Every case also checks that no output element is left unwritten (outputs are
// poisoned with NaN) and that a second run gives the same bits. Shapes: one
// token; exact chunks with B > 1 and H > 2; K and V off the multiple of 8 (the
// element-by-element loads) and off the padded widths 64 and 128; bf16 inputs;
// the stress and mild regimes; every op. And packed sequences against each
// sequence run alone, the state kernels' variants against each other, and
// beta read a row at a time against beta broadcast in gdn2 form.
//
// Built where nvcc is, run where a GPU is: ctest --test-dir build -L gpu
// (labels cuda;gpu). Where no GPU is, every test is skipped, never passed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/gdn2_form.hpp"
#include "gates/compare.hpp"
#include "gates/fixture_io.hpp"
#include "gates/noise.hpp"
#include "kernels/backend.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/problem.hpp"

namespace deltaproof::testing {
namespace {

using kernels::Buffers;
using kernels::Phase;

// Elements still NaN, the poison every output is allocated with.
int unwritten(const std::vector<float>& x) {
  int n = 0;
  for (float v : x) n += std::isnan(v) ? 1 : 0;
  return n;
}

struct TcCase {
  const char* name;
  Op op;
  int B, T, H, K, V;
  oracle::Regime regime;
  DType dtype;
};
void PrintTo(const TcCase& c, std::ostream* os) { *os << c.name; }

class CudaTc : public ::testing::TestWithParam<TcCase> {};

TEST_P(CudaTc, GreenAtTheBf16ClassEveryElementWrittenTheSameBitsTwice) {
  if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  const TcCase& c = GetParam();
  oracle::FixtureSpec spec;
  spec.op = c.op;
  spec.B = c.B, spec.T = c.T, spec.H = c.H, spec.K = c.K, spec.V = c.V;
  spec.chunk = 64;
  spec.regime = c.regime;
  spec.dtype = c.dtype;
  spec.seed = 7;
  const oracle::Problem problem = oracle::draw_problem(spec);
  const kernels::KernelShape shape = gates::kernel_shape(spec);
  const Buffers inputs = gates::kernel_inputs(problem);
  const auto reference = oracle::evaluate<double>(problem, true, 0).tensors;

  const kernels::Backend& tc = kernels::find_backend("cuda-tc");
  auto run = [&] {
    Buffers out = kernels::allocate_outputs(shape, Phase::bwd, NAN);
    kernels::ExecutionRecord record;
    tc.run(shape, inputs, Phase::bwd, out, record);
    for (const char* stage :
         {"fwd.intra", "fwd.inter", "fwd.output", "bwd.bk2", "bwd.bk1", "bwd.glue"})
      EXPECT_TRUE(record.ran(stage)) << stage;
    return out;
  };
  const Buffers first = run(), second = run();

  std::map<std::string, std::vector<double>> candidate;
  for (const auto& [name, values] : first) {
    EXPECT_EQ(unwritten(values), 0) << c.name << ": " << name << " elements left NaN";
    EXPECT_EQ(std::memcmp(values.data(), second.at(name).data(), values.size() * sizeof(float)), 0)
        << c.name << ": " << name << " differs between two runs";
    candidate[name] = std::vector<double>(values.begin(), values.end());
  }
  const gates::NoiseModel noise =
      gates::measure_noise(shape, inputs, Phase::bwd, reference, kernels::Precision::bf16);
  const auto terms = gates::judge_against_noise(shape, Phase::bwd, noise, candidate, reference);
  for (const auto& t : terms) {
    std::printf("[measured] %s %s rel %.3e bar %.3e\n", c.name, t.term.c_str(), t.rel, t.bar);
    EXPECT_EQ(t.status, gates::TermStatus::pass) << c.name << ": " << t.message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaTc,
    ::testing::Values(
        TcCase{"one_token_k128", Op::gdn2, 1, 1, 1, 128, 128, oracle::Regime::default_, DType::F32},
        TcCase{"exact_chunks_b2h3", Op::gdn2, 2, 128, 3, 64, 64, oracle::Regime::default_,
               DType::BF16},
        TcCase{"k100_v36_scalar_loads", Op::gdn2, 1, 130, 2, 100, 36, oracle::Regime::mild,
               DType::F32},
        TcCase{"k5_v7", Op::kda, 1, 65, 2, 5, 7, oracle::Regime::default_, DType::F32},
        TcCase{"k64_v128_stress_bf16", Op::gdn2, 1, 200, 1, 64, 128, oracle::Regime::stress,
               DType::BF16},
        TcCase{"k128_v64_mild_kda", Op::kda, 1, 300, 1, 128, 64, oracle::Regime::mild, DType::BF16},
        TcCase{"k32_v16_gdn", Op::gdn, 2, 129, 2, 32, 16, oracle::Regime::default_, DType::F32}),
    [](const ::testing::TestParamInfo<TcCase>& info) { return std::string(info.param.name); });

// Packed sequences run natively (DeviceProblem::cu_seqlens): each sequence's
// outputs and gradients are, bit for bit, those of the sequence run alone as a
// dense batch of one, so its chunks start at its first token, no token of a
// neighbour leaks in, and its state is its own. Lengths: one token, an exact
// chunk, chunk tails, and the longest setting the grid.
TEST(CudaTcPacked, EachSequenceBitForBitAsItsOwnDenseRun) {
  if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  for (const Op op : {Op::gdn2, Op::kda}) {
    oracle::FixtureSpec spec;
    spec.op = op;
    spec.B = 1, spec.T = 330, spec.H = 2, spec.K = 64, spec.V = 32;
    spec.chunk = 64;
    spec.dtype = DType::BF16;
    spec.seed = 11;
    spec.cu_seqlens = {0, 1, 65, 200, 201, 330};
    const kernels::KernelShape shape = gates::kernel_shape(spec);
    const Buffers inputs = gates::kernel_inputs(oracle::draw_problem(spec));
    const kernels::Backend& tc = kernels::find_backend("cuda-tc");
    Buffers packed = kernels::allocate_outputs(shape, Phase::bwd, NAN);
    kernels::ExecutionRecord record;
    tc.run(shape, inputs, Phase::bwd, packed, record);
    EXPECT_TRUE(record.ran("layout:packed"));

    for (std::size_t n = 0; n + 1 < spec.cu_seqlens.size(); ++n) {
      const int begin = static_cast<int>(spec.cu_seqlens[n]);
      const int end = static_cast<int>(spec.cu_seqlens[n + 1]);
      oracle::FixtureSpec alone = spec;
      alone.cu_seqlens.clear();
      alone.T = end - begin;
      const kernels::KernelShape dense = gates::kernel_shape(alone);
      // sequence n's slice of a packed tensor: its tokens, or its state
      auto slice = [&](const std::string& name, const std::vector<float>& x) {
        const int width = kernels::tensor_width(shape, name);
        if (width < 0) {
          const std::size_t size = x.size() / (spec.cu_seqlens.size() - 1);
          return std::vector<float>(x.begin() + n * size, x.begin() + (n + 1) * size);
        }
        const std::size_t row = static_cast<std::size_t>(spec.H) * (width == 0 ? 1 : width);
        return std::vector<float>(x.begin() + begin * row, x.begin() + end * row);
      };
      Buffers one_in;
      for (const auto& [name, x] : inputs) one_in[name] = slice(name, x);
      Buffers one = kernels::allocate_outputs(dense, Phase::bwd, NAN);
      tc.run(dense, one_in, Phase::bwd, one, record);
      for (const auto& [name, x] : packed) {
        const std::vector<float> mine = slice(name, x);
        ASSERT_EQ(mine.size(), one.at(name).size()) << name;
        EXPECT_EQ(unwritten(mine), 0) << op_name(op) << " sequence " << n << ": " << name;
        EXPECT_EQ(std::memcmp(mine.data(), one.at(name).data(), mine.size() * sizeof(float)), 0)
            << op_name(op) << " sequence " << n << " (tokens " << begin << ".." << end
            << "): " << name << " differs from the sequence run alone";
      }
    }
  }
}

// cuda-tc's variants (kernels/cuda/tc.cu: state_tile, bk2_buffers,
// products_launches, tokens_blocks, inter_stages, state_order): 16- or
// 32-column state tiles, bwd.bk2 with one operand buffer or two (chunk c - 1's
// loaded while c runs), bwd.bk1's products in one launch or two, its token
// gradients in one block a chunk or two, fwd.inter with two operand buffers or
// three (chunks c + 1 and c + 2 in flight), the state kernels' packed
// sequences in index order or longest first, fwd.intra's work around A's and
// M's barrier shared by every thread alike or by the warps with the fewest
// tasks (kIntraShares). Each is chosen by shape or by default; each must give
// the bits of every other, over many chunks (the buffers change hands from one
// to the next), dense and packed.
TEST(CudaTcStateVariants, EveryTileAndBufferingTheSameBits) {
  if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  struct Variant {
    const char *tile, *buffers, *products, *tokens, *stages, *order, *shares;
  };
  const Variant variants[] = {
      {"32", "1", "1", "1", "2", "1", "2"}, {"16", "1", "2", "2", "3", "2", "1"},
      {"32", "2", "1", "2", "3", "1", "2"}, {"16", "2", "2", "1", "2", "2", "1"},
      {"32", "1", "2", "1", "3", "2", "2"}, {"32", "1", "1", "2", "2", "1", "1"}};
  for (const bool packed : {false, true}) {
    oracle::FixtureSpec spec;
    spec.op = packed ? Op::kda : Op::gdn2;
    spec.B = packed ? 1 : 2, spec.T = 460, spec.H = 2, spec.K = 128, spec.V = 128;
    spec.chunk = 64;
    spec.dtype = DType::BF16;
    spec.seed = 5;
    if (packed) spec.cu_seqlens = {0, 70, 130, 460};
    const kernels::KernelShape shape = gates::kernel_shape(spec);
    const Buffers inputs = gates::kernel_inputs(oracle::draw_problem(spec));
    const kernels::Backend& tc = kernels::find_backend("cuda-tc");
    Buffers first;
    for (const Variant& v : variants) {
      ::setenv("DELTAPROOF_TC_STATE_TILE", v.tile, 1);
      ::setenv("DELTAPROOF_TC_BK2_BUFFERS", v.buffers, 1);
      ::setenv("DELTAPROOF_TC_PRODUCTS", v.products, 1);
      ::setenv("DELTAPROOF_TC_TOKENS", v.tokens, 1);
      ::setenv("DELTAPROOF_TC_INTER_STAGES", v.stages, 1);
      ::setenv("DELTAPROOF_TC_STATE_ORDER", v.order, 1);
      ::setenv("DELTAPROOF_TC_INTRA_SHARES", v.shares, 1);
      Buffers out = kernels::allocate_outputs(shape, Phase::bwd, NAN);
      kernels::ExecutionRecord record;
      tc.run(shape, inputs, Phase::bwd, out, record);
      if (first.empty()) {
        first = out;
        continue;
      }
      for (const auto& [name, x] : out)
        EXPECT_EQ(std::memcmp(x.data(), first.at(name).data(), x.size() * sizeof(float)), 0)
            << (packed ? "packed" : "dense") << ": " << name << " with tile " << v.tile << " and "
            << v.buffers << " bk2 buffer(s), " << v.products << " products launch(es), " << v.tokens
            << " tokens block(s) a chunk, " << v.stages << " fwd.inter buffers, state order "
            << v.order << ", intra shares " << v.shares
            << " differs from tile 32, 1 buffer, 1 launch, 1 block, 2 buffers, index order, "
               "every thread alike";
    }
    ::unsetenv("DELTAPROOF_TC_STATE_TILE");
    ::unsetenv("DELTAPROOF_TC_BK2_BUFFERS");
    ::unsetenv("DELTAPROOF_TC_PRODUCTS");
    ::unsetenv("DELTAPROOF_TC_TOKENS");
    ::unsetenv("DELTAPROOF_TC_INTER_STAGES");
    ::unsetenv("DELTAPROOF_TC_STATE_ORDER");
    ::unsetenv("DELTAPROOF_TC_INTRA_SHARES");
  }
}

// kda's and gdn's beta read as it is (DeviceProblem::beta, [B,T,H], one value
// a row broadcast over b's and w's channels as the kernels read them) against
// the same problem in gdn2 form (b and w that broadcast, stored at full
// width): every output and gradient the same bits, except those folded from
// gdn2 form (dbeta, gdn's dg), within bf16's rounding of the fold of the gdn2
// form's (the backend rounds them after the fold, and the gdn2 form's db and
// dw before it). Dense with H > 1 (a row's value is its head's) and packed;
// bf16 and f32 inputs; K = V = 128 (16-byte pieces) and K5 V7 (element by
// element).
TEST(CudaTcBeta, PerRowBitForBitAsBroadcastInGdn2Form) {
  if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  struct Case {
    const char* name;
    Op op;
    int B, T, H, K, V;
    DType dtype;
    std::vector<std::int64_t> cu_seqlens;
  };
  const Case cases[] = {{"kda_b2h3_k128_bf16", Op::kda, 2, 200, 3, 128, 128, DType::BF16, {}},
                        {"kda_packed_f32", Op::kda, 1, 330, 2, 128, 128, DType::F32, {0, 70, 330}},
                        {"kda_k5_v7", Op::kda, 1, 130, 2, 5, 7, DType::BF16, {}},
                        {"gdn_k64_v32", Op::gdn, 1, 129, 2, 64, 32, DType::F32, {}}};
  const kernels::Backend& tc = kernels::find_backend("cuda-tc");
  for (const Case& c : cases) {
    oracle::FixtureSpec spec;
    spec.op = c.op;
    spec.B = c.B, spec.T = c.T, spec.H = c.H, spec.K = c.K, spec.V = c.V;
    spec.chunk = 64;
    spec.dtype = c.dtype;
    spec.seed = 13;
    spec.cu_seqlens = c.cu_seqlens;
    const kernels::KernelShape shape = gates::kernel_shape(spec);
    const Buffers inputs = gates::kernel_inputs(oracle::draw_problem(spec));
    Buffers per_row = kernels::allocate_outputs(shape, Phase::bwd, NAN);
    kernels::ExecutionRecord record;
    tc.run(shape, inputs, Phase::bwd, per_row, record);
    EXPECT_TRUE(record.ran("beta:per-row")) << c.name;

    oracle::FixtureSpec full = spec;
    full.op = Op::gdn2;
    const kernels::KernelShape gdn2 = gates::kernel_shape(full);
    Buffers gdn2_inputs = inputs;
    const auto gates = gdn2_gates(c.op, c.K, c.V, inputs);
    gdn2_inputs.erase("beta");
    gdn2_inputs["g"] = gates.g, gdn2_inputs["b"] = gates.b, gdn2_inputs["w"] = gates.w;
    Buffers broadcast = kernels::allocate_outputs(gdn2, Phase::bwd, NAN);
    kernels::ExecutionRecord full_record;
    tc.run(gdn2, gdn2_inputs, Phase::bwd, broadcast, full_record);
    EXPECT_FALSE(full_record.ran("beta:per-row")) << c.name;
    // The gradients folded from gdn2 form (dbeta; gdn's dg) are rounded to
    // bf16 (cuda-tc's outputs) after the fold in the per-row run and before
    // it here, so they are held to bf16's rounding of both: |a - b| <= u (|a|
    // + the sum of the terms' magnitudes), u = 2^-8 (with 1% for the f32
    // sums); every other tensor to the same bits.
    Buffers magnitude;
    for (const char* name : {"dg", "db", "dw"}) {
      magnitude[name] = broadcast.at(name);
      for (float& v : magnitude[name]) v = std::fabs(v);
    }
    // Folded: a tensor the fold made or changed the size of.
    std::map<std::string, std::size_t> unfolded_sizes;
    for (const auto& [name, x] : broadcast) unfolded_sizes[name] = x.size();
    fold_gradients(c.op, c.K, c.V, magnitude);
    fold_gradients(c.op, c.K, c.V, broadcast);
    const auto folded = [&](const std::string& name) {
      const auto was = unfolded_sizes.find(name);
      return was == unfolded_sizes.end() || was->second != broadcast.at(name).size();
    };

    for (const auto& [name, x] : per_row) {
      ASSERT_TRUE(broadcast.count(name)) << c.name << ": " << name;
      const std::vector<float>& y = broadcast.at(name);
      ASSERT_EQ(x.size(), y.size()) << c.name << ": " << name;
      EXPECT_EQ(unwritten(x), 0) << c.name << ": " << name;
      if (!folded(name)) {
        EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0)
            << c.name << ": " << name
            << " with beta read a row at a time differs from beta broadcast into b and w";
        continue;
      }
      const std::vector<float>& terms = magnitude.at(name);
      int outside = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double bound = 1.01 * std::ldexp(1.0, -8) * (std::fabs(x[i]) + terms[i]);
        if (!(std::fabs(static_cast<double>(x[i]) - y[i]) <= bound)) ++outside;
      }
      EXPECT_EQ(outside, 0) << c.name << ": " << name
                            << " with beta read a row at a time is further from the fold of "
                               "beta broadcast into b and w than bf16's rounding of both";
    }
  }
}

}  // namespace
}  // namespace deltaproof::testing
