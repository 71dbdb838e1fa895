// tests/gates/noise_test.cpp — precision contracts and bars from noise
// (issue 10; gates/noise.hpp, kernels/precision.hpp, docs/PRECISION.md).
// The rounding rules bit by bit; the contract is the identity at f32 and is
// refused by backends that cannot emulate it; and the class gates see what
// they must: at bf16 a term scaled by 1.01 is red and names the term while the
// reference rounded to bf16 (pure rounding noise) is green; at tf32 a 0.5%
// scaling is red; the same fixture gives the same bars bit for bit.
// Run: ctest --test-dir build -R 'Rounding|Contract|NoiseBars'
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "gates/fixture_io.hpp"
#include "gates/noise.hpp"
#include "kernels/cpu/backends.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/problem.hpp"

namespace deltaproof::gates {
namespace {

using kernels::Buffers;
using kernels::KernelShape;
using kernels::Phase;
using kernels::Rounding;
using Values = std::map<std::string, std::vector<double>>;

float bits_to_float(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// ---- rounding rules --------------------------------------------------------

TEST(Rounding, Bf16NearestEvenTiesToEvenAndCarriesIntoTheExponent) {
  // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1)
  EXPECT_EQ(kernels::round_float(1.0f + 0x1p-8f, Precision::bf16, Rounding::nearest_even, 0), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6)
  EXPECT_EQ(kernels::round_float(1.0f + 3 * 0x1p-8f, Precision::bf16, Rounding::nearest_even, 0),
            1.0f + 0x1p-6f);
  // just above half rounds up; the largest mantissa carries into the exponent
  EXPECT_EQ(
      kernels::round_float(1.0f + 0x1p-8f + 0x1p-20f, Precision::bf16, Rounding::nearest_even, 0),
      1.0f + 0x1p-7f);
  EXPECT_EQ(
      kernels::round_float(bits_to_float(0x3fffffffu), Precision::bf16, Rounding::nearest_even, 0),
      2.0f);
  EXPECT_EQ(
      kernels::round_float(-1.0f - 0x1p-8f - 0x1p-20f, Precision::bf16, Rounding::nearest_even, 0),
      -1.0f - 0x1p-7f);
  EXPECT_TRUE(
      std::isnan(kernels::round_float(std::nanf(""), Precision::bf16, Rounding::nearest_even, 0)));
}

TEST(Rounding, TowardZeroDropsTheLowBitsAndTf32KeepsTenMantissaBits) {
  const float x = 1.0f + 0x1p-10f + 0x1p-11f + 0x1p-20f;
  EXPECT_EQ(kernels::round_float(x, Precision::tf32, Rounding::toward_zero, 0), 1.0f + 0x1p-10f);
  EXPECT_EQ(kernels::round_float(-x, Precision::tf32, Rounding::toward_zero, 0), -1.0f - 0x1p-10f);
  EXPECT_EQ(kernels::round_float(x, Precision::tf32, Rounding::nearest_even, 0), 1.0f + 0x1p-9f);
  EXPECT_EQ(kernels::round_float(x, Precision::f32, Rounding::toward_zero, 0), x);
}

TEST(Rounding, StochasticRoundingIsUnbiasedAndReproducible) {
  kernels::PrecisionContract contract;
  contract.precision = Precision::bf16;
  contract.rounding = Rounding::stochastic;
  contract.seed = 7;
  const float x = 1.0f + 0x1p-9f;  // a quarter of the way from 1 to 1 + 2^-7
  kernels::Rounder a(contract, 3), b(contract, 3), other(contract, 4);
  double sum = 0.0;
  bool streams_differ = false;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float ra = a.round(x, Precision::bf16);
    EXPECT_TRUE(ra == 1.0f || ra == 1.0f + 0x1p-7f);
    EXPECT_EQ(ra, b.round(x, Precision::bf16));  // the same stream, the same bits
    streams_differ = streams_differ || ra != other.round(x, Precision::bf16);
    sum += ra;
  }
  EXPECT_TRUE(streams_differ);
  EXPECT_NEAR(sum / n, x, 4 * 0x1p-7 * std::sqrt(0.25 * 0.75 / n));
}

// ---- a bf16 problem of a realistic width, with its f64 reference ------------

struct Case {
  KernelShape shape;
  Buffers inputs;
  Values reference;
};

Case make_case(Op op, DType dtype, int T, int K) {
  oracle::FixtureSpec spec;
  spec.op = op;
  spec.T = T;
  spec.K = spec.V = K;
  spec.chunk = 64;
  spec.dtype = dtype;
  const oracle::Problem problem = oracle::draw_problem(spec);
  Case c;
  c.shape = kernel_shape(spec);
  c.inputs = kernel_inputs(problem);
  c.reference = oracle::evaluate<double>(problem, true, 0).tensors;
  return c;
}

const Case& bf16_case() {
  static const Case c = make_case(Op::gdn2, DType::BF16, 200, 64);
  return c;
}

std::vector<TermComparison> check(const Case& c, const NoiseModel& model, const Values& candidate) {
  CompareOptions options;
  options.term_bars = noise_bars(model);
  auto terms = compare_terms(c.shape, Phase::bwd, candidate, c.reference, options);
  judge_bias(c.shape, model, candidate, c.reference, terms);
  return terms;
}

const TermComparison& term(const std::vector<TermComparison>& terms, const std::string& name) {
  for (const auto& t : terms)
    if (t.term == name) return t;
  throw std::runtime_error("no term " + name);
}

TEST(Contract, F32ContractIsTheIdentityAndOtherBackendsRefuseARoundingOne) {
  const Case c = make_case(Op::kda, DType::F32, 40, 16);
  KernelShape s = c.shape;
  s.chunk = 16;
  Buffers plain = kernels::allocate_outputs(s, Phase::bwd, 0.0f);
  Buffers contracted = plain;
  kernels::ExecutionRecord record;
  kernels::cpu::chunk_backend().run(s, c.inputs, Phase::bwd, plain, record);
  kernels::PrecisionContract f32;
  f32.rounding = Rounding::stochastic;  // a rule without a class to apply it is nothing
  s.contract = f32;
  kernels::cpu::chunk_backend().run(s, c.inputs, Phase::bwd, contracted, record);
  for (const auto& [name, values] : plain)
    EXPECT_EQ(std::memcmp(values.data(), contracted.at(name).data(), values.size() * 4), 0) << name;
  s.contract.precision = Precision::bf16;
  EXPECT_THROW(kernels::cpu::recurrent_backend().run(s, c.inputs, Phase::bwd, plain, record),
               InputError);
}

// cuda-chunk rounds under the deterministic contracts (its kernels take
// DeviceRounding) and refuses stochastic rounding; cuda-recurrent refuses any
// contract that rounds. Both refusals come before the GPU is looked for.
TEST(Contract, CudaChunkTakesDeterministicContractsAndCudaRecurrentNone) {
  const auto names = kernels::backend_names();
  if (std::find(names.begin(), names.end(), "cuda-chunk") == names.end())
    GTEST_SKIP() << "built without the CUDA backends";
  const Case c = make_case(Op::gdn2, DType::F32, 40, 16);
  KernelShape s = c.shape;
  s.chunk = 16;
  s.contract.precision = Precision::bf16;
  Buffers out = kernels::allocate_outputs(s, Phase::bwd, 0.0f);
  kernels::ExecutionRecord record;
  auto contains = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };
  auto message = [&](const char* backend) {
    try {
      kernels::find_backend(backend).run(s, c.inputs, Phase::bwd, out, record);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("ran");
  };
  EXPECT_PRED2(contains, message("cuda-recurrent"), "runs f32 arithmetic only");
  s.contract.rounding = Rounding::stochastic;
  EXPECT_PRED2(contains, message("cuda-chunk"), "stochastic rounding is emulated by cpu-chunk");
  s.contract.rounding = Rounding::nearest_even;
  if (!kernels::gpu_available()) {
    EXPECT_PRED2(contains, message("cuda-chunk"), "needs a CUDA GPU");
    return;
  }
  // on a GPU: the contract is taken, and the run is the class's (every output
  // a bf16 value, within the class's noise of cpu-chunk under the same contract)
  ASSERT_EQ(message("cuda-chunk"), "ran");
  Buffers twin = kernels::allocate_outputs(s, Phase::bwd, 0.0f);
  kernels::cpu::chunk_backend().run(s, c.inputs, Phase::bwd, twin, record);
  for (const auto& [name, values] : out) {
    double diff = 0.0, amax = 0.0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float x = values[i];
      EXPECT_EQ(x, kernels::round_float(x, Precision::bf16, Rounding::toward_zero, 0)) << name;
      diff = std::max(diff, std::abs(double(x) - twin.at(name)[i]));
      amax = std::max(amax, std::abs(double(twin.at(name)[i])));
    }
    EXPECT_LT(diff, 0.05 * amax) << name;
  }
}

// cuda-tc computes in the bf16 class and refuses what it cannot run, each
// with a sentence naming itself, before the GPU is looked for: another
// class's contract, a chunk size but 64, K or V past 128, B*H past a grid.
TEST(Contract, CudaTcRefusesWhatItCannotRunBeforeLookingForAGpu) {
  const auto names = kernels::backend_names();
  if (std::find(names.begin(), names.end(), "cuda-tc") == names.end())
    GTEST_SKIP() << "built without the CUDA backends";
  const Case c = make_case(Op::gdn2, DType::F32, 40, 16);
  KernelShape s = c.shape;
  s.chunk = 64;
  kernels::ExecutionRecord record;
  auto message = [&](const KernelShape& shape, Phase phase) {
    Buffers out = kernels::allocate_outputs(shape, phase, 0.0f);
    try {
      kernels::find_backend("cuda-tc").run(shape, c.inputs, phase, out, record);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("ran");
  };
  auto contains = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };
  KernelShape tf32 = s;
  tf32.contract.precision = Precision::tf32;
  EXPECT_PRED2(contains, message(tf32, Phase::fwd), "cuda-tc computes in the bf16 class");
  KernelShape chunk16 = s;
  chunk16.chunk = 16;
  EXPECT_PRED2(contains, message(chunk16, Phase::fwd), "the chunk size must be 64");
  KernelShape wide = s;
  wide.K = 160;
  EXPECT_PRED2(contains, message(wide, Phase::bwd), "K and V must be from 1 to 128");
  KernelShape many_heads = s;  // refused before any buffer is touched
  many_heads.H = 70000;
  Buffers none;
  try {
    kernels::find_backend("cuda-tc").run(many_heads, c.inputs, Phase::fwd, none, record);
    ADD_FAILURE() << "B*H = 70000 ran";
  } catch (const InputError& e) {
    EXPECT_PRED2(contains, e.what(), "B*H must be at most 65535");
  }
  if (!kernels::gpu_available()) {
    EXPECT_PRED2(contains, message(s, Phase::fwd), "needs a CUDA GPU");
  }
}

TEST(NoiseBars, Bf16ScalingOneTermBy1PercentIsRedAndNamesTheTerm) {
  const Case& c = bf16_case();
  const NoiseModel model =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  // the reference itself is green at every term
  for (const auto& t : check(c, model, c.reference))
    EXPECT_EQ(t.status, TermStatus::pass) << t.term << ": " << t.message;
  for (const auto& name : kernels::kernel_output_names(c.shape.op, Phase::bwd)) {
    for (double factor : {1.01, 0.99}) {
      SCOPED_TRACE(name + " x " + std::to_string(factor));
      Values candidate = c.reference;
      for (double& x : candidate[name]) x *= factor;
      const auto terms = check(c, model, candidate);
      const TermComparison& hit = term(terms, name);
      EXPECT_EQ(hit.status, TermStatus::fail)
          << "rel " << hit.rel << " bar " << hit.bar << " alpha " << hit.noise.alpha << " band ["
          << hit.noise.alpha_lo << ", " << hit.noise.alpha_hi << "]";
      EXPECT_EQ(hit.message.rfind(name + ":", 0), 0u) << hit.message;
      EXPECT_LE(hit.noise.mde, 0.01) << "the minimum detectable scaling of " << name;
      for (const auto& other : terms) {
        if (other.term != name && other.status != TermStatus::not_compared) {
          EXPECT_EQ(other.status, TermStatus::pass) << other.term << ": " << other.message;
        }
      }
    }
  }
}

TEST(NoiseBars, Bf16ReferenceRoundedToBf16IsGreen) {
  const Case& c = bf16_case();
  const NoiseModel model =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  Values rounded = c.reference;
  for (auto& [name, values] : rounded)
    for (double& x : values)
      x = kernels::round_float(static_cast<float>(x), Precision::bf16, Rounding::nearest_even, 0);
  for (const auto& t : check(c, model, rounded)) {
    EXPECT_EQ(t.status, TermStatus::pass) << t.term << ": " << t.message;
    EXPECT_GT(t.rel, 0.0) << t.term << " was not rounded";
  }
}

TEST(NoiseBars, Tf32HalfAPercentScalingIsRed) {
  const Case c = make_case(Op::kda, DType::F32, 200, 64);
  const NoiseModel model =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::tf32);
  for (const auto& t : check(c, model, c.reference))
    EXPECT_EQ(t.status, TermStatus::pass) << t.term << ": " << t.message;
  for (const auto& name : kernels::kernel_output_names(c.shape.op, Phase::bwd))
    for (double factor : {1.005, 0.995}) {
      SCOPED_TRACE(name + " x " + std::to_string(factor));
      Values candidate = c.reference;
      for (double& x : candidate[name]) x *= factor;
      const TermComparison& hit = term(check(c, model, candidate), name);
      EXPECT_EQ(hit.status, TermStatus::fail)
          << "rel " << hit.rel << " bar " << hit.bar << " alpha " << hit.noise.alpha << " band ["
          << hit.noise.alpha_lo << ", " << hit.noise.alpha_hi << "]";
      EXPECT_LE(hit.noise.mde, 0.005);
    }
}

TEST(NoiseBars, TheSameFixtureGivesTheSameBarsBitForBit) {
  const Case& c = bf16_case();
  const NoiseModel a = measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  const NoiseModel b = measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  const auto bars_a = noise_bars(a), bars_b = noise_bars(b);
  ASSERT_EQ(bars_a.size(), bars_b.size());
  for (const auto& [name, bar] : bars_a) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(bar), std::bit_cast<std::uint64_t>(bars_b.at(name)))
        << name;
    const TermNoise &na = a.terms.at(name), &nb = b.terms.at(name);
    EXPECT_EQ(na.member_alpha, nb.member_alpha) << name;
    EXPECT_EQ(na.member_rel, nb.member_rel) << name;
    for (std::size_t g = 0; g < na.chunk_alpha.size(); ++g) {
      EXPECT_EQ(na.chunk_alpha[g].lo, nb.chunk_alpha[g].lo) << name << " chunk " << g;
      EXPECT_EQ(na.chunk_alpha[g].hi, nb.chunk_alpha[g].hi) << name << " chunk " << g;
    }
  }
}

// A noise cache folder: the first measurement writes its model, the second
// reads it back (the same figures bit for bit, in far less time than the
// ensemble's runs); another reference is another entry; a damaged entry is
// measured again and replaced.
TEST(NoiseBars, TheCacheGivesTheMeasuredModelBackAndKeysOnTheFixture) {
  namespace fs = std::filesystem;
  const Case& c = bf16_case();
  const fs::path folder = fs::temp_directory_path() / fmt::format("noise-cache-{}", ::getpid());
  fs::remove_all(folder);
  const NoiseModel uncached =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  set_noise_cache(folder);
  const NoiseModel first =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  std::vector<fs::path> entries(fs::directory_iterator(folder), fs::directory_iterator{});
  ASSERT_EQ(entries.size(), 1u);
  const NoiseModel second =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  EXPECT_EQ(terms_to_json(uncached), terms_to_json(first));
  EXPECT_EQ(terms_to_json(first), terms_to_json(second));
  EXPECT_EQ(second.members.size(), first.members.size());
  EXPECT_EQ(noise_bars(first), noise_bars(second));

  auto other = c.reference;
  other.at("o")[0] *= 2;
  measure_noise(c.shape, c.inputs, Phase::bwd, other, Precision::bf16);
  EXPECT_EQ(std::distance(fs::directory_iterator(folder), fs::directory_iterator{}), 2);

  std::ofstream(entries.front()) << "{ not json";
  const NoiseModel again =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  EXPECT_EQ(terms_to_json(again), terms_to_json(first));
  set_noise_cache({});
  fs::remove_all(folder);
}

// The bf16 ensemble's last three members read the token inputs and do in bf16:
// to nearest, as a kernel whose tensors arrive in bf16 does (a kernel that
// rounds q on load, like cuda-tc, is one of the class), and stochastically,
// the problem's own sensitivity to its inputs at that precision. On an f32
// fixture each is another member; on a bf16 fixture, whose inputs are exact in
// bf16, each is the baseline.
TEST(NoiseBars, TheInputsInBf16MembersDifferOnAnF32FixtureOnly) {
  const auto members = ensemble_members(Precision::bf16, 64);
  std::vector<std::size_t> reading;
  for (std::size_t m = 0; m < members.size(); ++m)
    if (members[m].inputs_in_bf16) reading.push_back(m);
  ASSERT_EQ(reading.size(), 3u);
  for (const DType dtype : {DType::F32, DType::BF16}) {
    const Case c = make_case(Op::kda, dtype, 70, 16);
    const NoiseModel model =
        measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
    for (std::size_t m : reading) {
      bool differs = false;
      for (const auto& [name, noise] : model.terms)
        differs = differs || noise.member_rel[m] != noise.member_rel.front();
      EXPECT_EQ(differs, dtype == DType::F32)
          << members[m].name << (dtype == DType::F32 ? ", f32" : ", bf16");
    }
  }
}

TEST(NoiseBars, RoundingGrainIsAnUlpOverTheElementsThatCarryAGroup) {
  KernelShape s = bf16_case().shape;  // B1 T200 H2 K=V=64, chunk 64
  const std::size_t size = static_cast<std::size_t>(s.B) * s.T * s.H * s.V;
  std::vector<double> r(size, 0.0);
  // chunk 0, head 0: one element of 1.0 (bf16 ulp 2^-7); chunk 1, head 0: 16 of 1.5
  r[0] = 1.0;
  for (int t = 64; t < 80; ++t) r[static_cast<std::size_t>(t) * s.H * s.V] = 1.5;
  const Grains bf16 = rounding_grains(s, "o", r, Precision::bf16);
  EXPECT_DOUBLE_EQ(bf16.chunk[0], std::ldexp(1.0, -7));
  EXPECT_DOUBLE_EQ(bf16.chunk[1], std::ldexp(1.0, -7) / 1.5 / 4.0);  // ulp(r) r sqrt(16) / 16 r^2
  EXPECT_EQ(bf16.chunk[2], 0.0);                                     // no reference there
  EXPECT_EQ(bf16.head[1], 0.0);
  const Grains f32 = rounding_grains(s, "o", r, Precision::f32);
  EXPECT_DOUBLE_EQ(f32.chunk[0], std::ldexp(1.0, -23));
}

TEST(NoiseBars, Bf16OutputsOneUlpApartInTheElementsThatCarryAGroupAreGreen) {
  // Two correct bf16 kernels may round an output to either bf16 neighbour of
  // the exact value. Where a few elements carry a chunk's <r, r> (gdn2's db:
  // n_eff about 8 of 1024 in a chunk here), the three largest of each chunk
  // rounded away from zero move that chunk's slope by about 3 ulp(r) / |r| /
  // n_eff: green. A 1% scaling stays red.
  const Case& c = bf16_case();
  const NoiseModel model =
      measure_noise(c.shape, c.inputs, Phase::bwd, c.reference, Precision::bf16);
  auto bf16 = [](double x, Rounding rounding) {
    return kernels::round_float(static_cast<float>(x), Precision::bf16, rounding, 0);
  };
  Values rounded = c.reference, moved;
  for (auto& [name, values] : rounded)
    for (double& x : values) x = bf16(x, Rounding::nearest_even);
  moved = rounded;
  for (auto& [name, values] : moved) {
    const TermLayout layout(c.shape, name);
    std::map<int, std::vector<std::size_t>> chunks;  // chunk -> its indices
    for (std::size_t i = 0; i < values.size() && !layout.state; ++i)
      chunks[static_cast<int>(layout.unravel(i)[1]) / c.shape.chunk].push_back(i);
    const std::vector<double>& exact = c.reference.at(name);
    for (auto& [chunk, indices] : chunks) {
      std::partial_sort(
          indices.begin(), indices.begin() + 3, indices.end(),
          [&](std::size_t a, std::size_t b) { return std::abs(exact[a]) > std::abs(exact[b]); });
      for (int k = 0; k < 3; ++k) {  // the bf16 neighbour away from zero
        const std::size_t i = indices[static_cast<std::size_t>(k)];
        const double toward_zero = bf16(exact[i], Rounding::toward_zero);
        if (toward_zero != exact[i])
          values[i] = toward_zero +
                      std::copysign(std::ldexp(1.0, std::ilogb(toward_zero) - 7), toward_zero);
      }
    }
  }
  const auto terms = check(c, model, moved);
  for (const auto& t : terms) EXPECT_EQ(t.status, TermStatus::pass) << t.term << ": " << t.message;
  // An ensemble that agreed to the bit with the rounded outputs in every chunk
  // and head (those bands of zero width at their slopes; the whole term's, which
  // takes no grain, as measured): the grain alone lets db's few-element groups
  // through; without it they are red.
  NoiseModel tight = model;
  for (auto& [name, noise] : tight.terms) {
    const Slopes at = regression_slopes(c.shape, name, rounded.at(name), c.reference.at(name));
    for (std::size_t g = 0; g < at.chunk.size(); ++g)
      noise.chunk_alpha[g] = {at.chunk[g], at.chunk[g]};
    for (std::size_t g = 0; g < at.head.size(); ++g) noise.head_alpha[g] = {at.head[g], at.head[g]};
  }
  EXPECT_EQ(term(check(c, tight, moved), "db").status, TermStatus::pass)
      << term(check(c, tight, moved), "db").message;
  tight.tolerances.grain_z = 0.0;
  const TermComparison& without = term(check(c, tight, moved), "db");
  EXPECT_EQ(without.status, TermStatus::fail);
  Values scaled = moved;
  for (double& x : scaled["dq"]) x *= 1.01;
  EXPECT_EQ(term(check(c, model, scaled), "dq").status, TermStatus::fail);
}

TEST(NoiseBars, RegressionSlopeOfAScaledReferenceIsTheScaling) {
  const Case& c = bf16_case();
  for (const auto& [name, ref] : c.reference) {
    std::vector<double> scaled = ref;
    for (double& x : scaled) x *= 1.01;
    const Slopes s = regression_slopes(c.shape, name, scaled, ref);
    EXPECT_NEAR(s.whole, 0.01, 1e-12) << name;
    for (double x : s.head) EXPECT_NEAR(x, 0.01, 1e-12) << name;
  }
}

}  // namespace
}  // namespace deltaproof::gates
