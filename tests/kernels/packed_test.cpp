// tests/kernels/packed_test.cpp — cpu-chunk and cpu-recurrent (and, where a
// GPU is, cuda-chunk and cuda-recurrent: they run a packed shape as a padded
// dense batch) on packed sequences (cu_seqlens) and grouped value heads
// (HV > H), docs/VARLEN.md:
// each output and gradient against the f64 oracle; the packing relation — the
// packed run equals the sequences run one by one, bit for bit (the same code
// in the same order); isolation — moving one sequence's inputs leaves every
// other sequence's outputs and gradients bitwise unchanged; a grouped key
// head's dq and dk are its group's sum.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/metric.hpp"
#include "gates/fixture_io.hpp"
#include "kernels/cpu/backends.hpp"
#include "oracle/evaluate.hpp"

namespace deltaproof {
namespace {

using oracle::FixtureSpec;

kernels::Buffers run(const kernels::Backend& backend, const oracle::Problem& p) {
  const kernels::KernelShape shape = gates::kernel_shape(p.spec);
  kernels::Buffers out = kernels::allocate_outputs(shape, kernels::Phase::bwd, std::nanf(""));
  kernels::ExecutionRecord record;
  backend.run(shape, gates::kernel_inputs(p), kernels::Phase::bwd, out, record);
  return out;
}

// The f32 backends of this machine; `bitwise`: those whose packed run is
// each sequence alone bit for bit (not cuda-chunk: a padded last chunk sums
// its gate gradient in another order, gates/registry.hpp packs_bitwise).
std::vector<std::string> f32_backends(bool bitwise = false) {
  std::vector<std::string> names = {"cpu-chunk", "cpu-recurrent"};
  if (kernels::gpu_available() && !bitwise) names.push_back("cuda-chunk");
  if (kernels::gpu_available()) names.push_back("cuda-recurrent");
  return names;
}

// 1 token, under a chunk, a chunk exactly, a chunk plus one, long (chunk 16);
// two key heads, four value heads
FixtureSpec packed_spec(oracle::Op op) {
  FixtureSpec s;
  s.op = op;
  s.B = 1, s.H = 2, s.HV = 4, s.K = 8, s.V = 6, s.chunk = 16, s.seed = 21;
  s.cu_seqlens = {0, 1, 8, 24, 41, 110};
  s.T = 110;
  return s;
}

TEST(PackedKernels, CpuBackendsMatchTheOracleOnPackedGroupedSequences) {
  for (oracle::Op op : {oracle::Op::gdn2, oracle::Op::kda, oracle::Op::gdn}) {
    const oracle::Problem p = oracle::draw_problem(packed_spec(op));
    const oracle::OracleOutput want = oracle::evaluate<double>(p, true, 2);
    for (const std::string& name : f32_backends()) {
      const kernels::Buffers got = run(kernels::find_backend(name), p);
      for (const auto& [term, values] : got) {
        ASSERT_EQ(values.size(), want.tensors.at(term).size()) << name << " " << term;
        const double rel =
            rel_error(std::vector<double>(values.begin(), values.end()), want.tensors.at(term))
                .rel();
        EXPECT_LT(rel, 2e-5) << oracle::op_name(op) << " " << name << " " << term;
      }
    }
  }
}

TEST(PackedKernels, APackedRunIsTheSequencesRunOneByOneBitForBit) {
  for (oracle::Op op : {oracle::Op::gdn2, oracle::Op::kda, oracle::Op::gdn}) {
    const FixtureSpec s = packed_spec(op);
    const oracle::Problem p = oracle::draw_problem(s);
    const kernels::KernelShape shape = gates::kernel_shape(s);
    for (const std::string& name : f32_backends(true)) {
      const kernels::Backend& backend = kernels::find_backend(name);
      const kernels::Buffers whole = run(backend, p);
      for (int n = 0; n < s.states(); ++n) {
        const oracle::Problem alone = oracle::draw_problem(oracle::alone_spec(s, n));
        const kernels::Buffers one = run(backend, alone);
        const kernels::KernelShape one_shape = gates::kernel_shape(alone.spec);
        const auto refs = shape.sequences(), one_refs = one_shape.sequences();
        for (const auto& [term, values] : one) {
          const bool state = kernels::tensor_width(shape, term) < 0;
          const bool key = kernels::on_key_heads(term);
          const int width = std::max(1, kernels::tensor_width(shape, term));
          for (int hv = 0; hv < s.value_heads(); ++hv) {
            const auto& r = refs[static_cast<std::size_t>(n * s.value_heads() + hv)];
            const auto& r1 = one_refs[static_cast<std::size_t>(hv)];
            std::size_t differing = 0;
            if (state) {
              for (int i = 0; i < s.K * s.V; ++i)
                differing +=
                    whole.at(
                        term)[state_offset(s.value_heads(), s.K, s.V, r.state, r.value_head, 0, 0) +
                              i] !=
                    values[state_offset(s.value_heads(), s.K, s.V, 0, hv, 0, 0) + i];
            } else {
              const int heads = key ? s.H : s.value_heads();
              const int head = key ? r.key_head : r.value_head;
              for (int t = 0; t < r.length(); ++t)
                for (int i = 0; i < width; ++i)
                  differing +=
                      whole.at(term)[token_offset(s.T, heads, width, 0, r.begin + t, head, i)] !=
                      values[token_offset(r1.length(), heads, width, 0, t, head, i)];
            }
            EXPECT_EQ(differing, 0u) << oracle::op_name(op) << " " << name << " " << term
                                     << " sequence " << n << " value head " << hv;
          }
        }
      }
    }
  }
}

TEST(PackedKernels, PerturbingOneSequenceLeavesEveryOtherBitwiseUnchanged) {
  // isolation: sequence 2's inputs moved (its v, and its first token's k in
  // every head); every output and gradient element outside sequence 2's tokens
  // and states keeps its bits
  for (oracle::Op op : {oracle::Op::gdn2, oracle::Op::kda, oracle::Op::gdn}) {
    const FixtureSpec s = packed_spec(op);
    const oracle::Problem p = oracle::draw_problem(s);
    oracle::Problem moved = p;
    const auto begin = s.cu_seqlens[2], end = s.cu_seqlens[3];
    const std::size_t v_row = static_cast<std::size_t>(s.value_heads()) * s.V;
    for (auto t = begin; t < end; ++t)
      for (std::size_t i = 0; i < v_row; ++i)
        moved.values["v"][static_cast<std::size_t>(t) * v_row + i] *= 1.25;
    const std::size_t k_row = static_cast<std::size_t>(s.H) * s.K;
    for (std::size_t i = 0; i < k_row; ++i)
      moved.values["k"][static_cast<std::size_t>(begin) * k_row + i] *= 0.5;
    const kernels::KernelShape shape = gates::kernel_shape(s);
    for (const std::string& name : f32_backends()) {
      const kernels::Backend& backend = kernels::find_backend(name);
      const kernels::Buffers a = run(backend, p), b = run(backend, moved);
      std::size_t inside_moved = 0;
      for (const auto& [term, values] : a) {
        const bool state = kernels::tensor_width(shape, term) < 0;
        const std::size_t per =
            state ? static_cast<std::size_t>(s.value_heads()) * s.K * s.V
                  : values.size() / static_cast<std::size_t>(s.T);  // per token (all heads)
        for (std::size_t i = 0; i < values.size(); ++i) {
          const auto unit = static_cast<std::int64_t>(i / per);  // token, or state n
          const bool ours = state ? unit == 2 : (unit >= begin && unit < end);
          const bool same = values[i] == b.at(term)[i];
          if (ours) {
            inside_moved += !same;
          } else {
            EXPECT_TRUE(same) << oracle::op_name(op) << " " << name << " " << term << " element "
                              << i << " outside the moved sequence";
          }
        }
      }
      EXPECT_GT(inside_moved, 0u) << name << ": the moved sequence did not move";
    }
  }
}

}  // namespace
}  // namespace deltaproof
