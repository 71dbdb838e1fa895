// tests/oracle/packed_test.cpp — the oracle on packed sequences (cu_seqlens)
// and grouped value heads (HV > H), docs/VARLEN.md: a packed sequence is the
// same sequence alone, bit for bit; a grouped problem is the dense problem
// whose key heads are repeated over their groups, with dq and dk summed over
// each group; bad specs are refused with a sentence.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/fixture.hpp"
#include "oracle/selfcheck.hpp"

namespace deltaproof::oracle {
namespace {

FixtureSpec grouped_spec(Op op) {
  FixtureSpec s;
  s.op = op;
  s.B = 2, s.T = 21, s.H = 2, s.HV = 6, s.K = 4, s.V = 3, s.chunk = 16, s.seed = 11;
  return s;
}

// The value heads' tensors of one sequence n (all heads) of a packed problem,
// as the flat values a problem of B = 1 would hold: its token rows and state.
std::vector<double> slice(const FixtureSpec& packed, const TensorLayout& layout,
                          const std::vector<double>& values, int n) {
  const auto heads = static_cast<std::size_t>(layout.heads(packed));
  if (layout.is_state) {
    const std::size_t per = heads * packed.K * packed.V;
    return {values.begin() + static_cast<std::ptrdiff_t>(n * per),
            values.begin() + static_cast<std::ptrdiff_t>((n + 1) * per)};
  }
  const std::size_t row = heads * static_cast<std::size_t>(layout.per_token());
  return {values.begin() + static_cast<std::ptrdiff_t>(packed.cu_seqlens[n] * row),
          values.begin() + static_cast<std::ptrdiff_t>(packed.cu_seqlens[n + 1] * row)};
}

TEST(Packed, EachSequenceIsTheSameSequenceAloneBitForBit) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    FixtureSpec s = grouped_spec(op);
    s.B = 1, s.T = 40, s.HV = 4;
    s.cu_seqlens = {0, 1, 7, 23, 40};  // 1 token, under a chunk, a chunk plus 0 and 1
    const Problem packed = draw_problem(s);
    const OracleOutput whole = evaluate<double>(packed, true, 2);
    std::vector<TensorLayout> layouts = input_layouts(s);
    for (const auto& l : output_layouts(s)) layouts.push_back(l);
    for (auto l : input_layouts(s)) {
      l.name = gradient_name(l.name);
      layouts.push_back(l);
    }
    for (int n = 0; n < s.states(); ++n) {
      const Problem alone = draw_problem(alone_spec(s, n));
      const OracleOutput one = evaluate<double>(alone, true, 1);
      for (const auto& layout : layouts) {
        const bool input = packed.values.count(layout.name) > 0;
        const auto& got = input ? packed.at(layout.name) : whole.tensors.at(layout.name);
        const auto& want = input ? alone.at(layout.name) : one.tensors.at(layout.name);
        EXPECT_EQ(slice(s, layout, got, n), want)
            << op_name(op) << " sequence " << n << " " << layout.name;
      }
    }
  }
}

TEST(Grouped, IsTheDenseProblemWithKeyHeadsRepeatedAndDqDkSummedOverTheGroup) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const FixtureSpec s = grouped_spec(op);
    const Problem grouped = draw_problem(s);
    // the dense twin: H = HV heads, q and k of head hv the grouped key head hv / G
    FixtureSpec d = s;
    d.H = s.HV, d.HV = 0;
    Problem dense{d, grouped.values};
    const int G = s.group(), H = s.H, HV = s.HV;
    for (const char* name : {"q", "k"}) {
      std::vector<double>& x = dense.values[name];
      x.assign(static_cast<std::size_t>(s.B) * s.T * HV * s.K, 0.0);
      for (int b = 0; b < s.B; ++b)
        for (int t = 0; t < s.T; ++t)
          for (int hv = 0; hv < HV; ++hv)
            for (int i = 0; i < s.K; ++i)
              x[token_offset(d, s.K, b, t, hv, i)] =
                  grouped.at(name)[deltaproof::token_offset(s.T, H, s.K, b, t, hv / G, i)];
    }
    const OracleOutput got = evaluate<double>(grouped, true, 2);
    const OracleOutput want = evaluate<double>(dense, true, 2);
    for (const auto& [name, values] : want.tensors) {
      if (name == "dq" || name == "dk") continue;
      EXPECT_EQ(got.tensors.at(name), values) << op_name(op) << " " << name;
    }
    for (const char* name : {"dq", "dk"}) {
      std::vector<double> summed(static_cast<std::size_t>(s.B) * s.T * H * s.K, 0.0);
      for (int b = 0; b < s.B; ++b)
        for (int t = 0; t < s.T; ++t)
          for (int hv = 0; hv < HV; ++hv)
            for (int i = 0; i < s.K; ++i)
              summed[deltaproof::token_offset(s.T, H, s.K, b, t, hv / G, i)] +=
                  want.tensors.at(name)[token_offset(d, s.K, b, t, hv, i)];
      EXPECT_EQ(got.tensors.at(name), summed) << op_name(op) << " " << name;
    }
    EXPECT_EQ(got.loss, want.loss) << op_name(op);
  }
}

TEST(Packed, BadSpecsAreRefusedWithASentence) {
  auto refusal = [](FixtureSpec s) -> std::string {
    try {
      s.validate();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  FixtureSpec s;
  s.B = 1, s.T = 10, s.H = 2;
  s.HV = 3;
  EXPECT_NE(refusal(s).find("--HV is 3, but the value heads must be a multiple of the 2 key"),
            std::string::npos)
      << refusal(s);
  s.HV = 4;
  EXPECT_EQ(refusal(s), "");
  s.cu_seqlens = {1, 10};
  EXPECT_NE(refusal(s).find("--cu-seqlens 1,10: it must start at 0, not 1."), std::string::npos)
      << refusal(s);
  s.cu_seqlens = {0, 4, 4, 10};
  EXPECT_NE(refusal(s).find("offset 2 is 4 after 4 (a sequence of length 0)"), std::string::npos)
      << refusal(s);
  s.cu_seqlens = {0, 4, 9};
  EXPECT_NE(refusal(s).find("it must end at the 10 tokens (T), not at 9"), std::string::npos)
      << refusal(s);
  s.cu_seqlens = {0};
  EXPECT_NE(refusal(s).find("it holds 1 offsets"), std::string::npos) << refusal(s);
  s.cu_seqlens = {0, 4, 10};
  EXPECT_EQ(refusal(s), "");
  EXPECT_EQ(s.describe(), "gdn2 B1 T10 H2 K8 V8 chunk16 default f32 seed0 HV4 cu_seqlens=0,4,10");
  s.B = 2;
  EXPECT_NE(refusal(s).find("packed sequences need batch size 1, not 2"), std::string::npos)
      << refusal(s);
}

// A small packed, grouped spec: lengths 1, under a chunk, a chunk plus one
// (chunk 16), HV = 2H.
FixtureSpec packed_grouped_spec(Op op) {
  FixtureSpec s;
  s.op = op;
  s.B = 1, s.H = 1, s.HV = 2, s.K = 4, s.V = 3, s.chunk = 16, s.seed = 5;
  s.cu_seqlens = {0, 1, 8, 25};
  s.T = 25;
  return s;
}

const CheckFigure* find_check(const SelfCheckReport& report, const std::string& name) {
  for (const auto& c : report.checks)
    if (c.check == name) return &c;
  return nullptr;
}

TEST(Packed, GenWritesAPackedGroupedFixtureWhoseSelfChecksPass) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const FixtureSpec s = packed_grouped_spec(op);
    GenerateOptions options;
    options.threads = 2;
    const GeneratedFixture g = generate_fixture(s, options);
    for (const auto& c : g.report.checks)
      EXPECT_TRUE(c.passed) << op_name(op) << " " << c.check << " " << c.figure;
    // every coordinate by forward mode (the spec is small), packed_vs_alone run
    const CheckFigure* forward = find_check(g.report, "reverse_vs_forward_mode");
    ASSERT_NE(forward, nullptr);
    EXPECT_NE(forward->method.find("every coordinate"), std::string::npos) << forward->method;
    const CheckFigure* alone = find_check(g.report, "packed_vs_alone");
    ASSERT_NE(alone, nullptr) << op_name(op);
    EXPECT_EQ(alone->figure, 0.0);
    EXPECT_GT(alone->detail.value("compared", 0), 0);
    const CheckFigure* liveness = find_check(g.report, "liveness");
    ASSERT_NE(liveness, nullptr);
    EXPECT_GT(liveness->figure, SelfCheckBars::liveness) << op_name(op);

    // the file: cu_seqlens as I64, HV and N in the metadata, read back to the spec
    const Tensor& cu = g.file.tensors.at("cu_seqlens");
    EXPECT_EQ(cu.dtype(), DType::I64);
    EXPECT_EQ(cu.to_i64(), s.cu_seqlens);
    EXPECT_EQ(g.file.metadata.at("HV"), "2");
    EXPECT_EQ(g.file.metadata.at("N"), "3");
    EXPECT_EQ(g.file.tensors.at("v").shape(), (Shape{1, 25, 2, 3}));
    EXPECT_EQ(g.file.tensors.at("q").shape(), (Shape{1, 25, 1, 4}));
    EXPECT_EQ(g.file.tensors.at("h0").shape(), (Shape{3, 2, 4, 3}));
    EXPECT_EQ(g.file.tensors.at("dq").shape(), (Shape{1, 25, 1, 4}));
    const SafetensorsFile back = parse_safetensors(serialize_safetensors(g.file), "x");
    EXPECT_EQ(spec_of_fixture(back, "x").describe(), s.describe());
    EXPECT_NE(g.file.metadata.at("command").find("--HV 2 --cu-seqlens 0,1,8,25"), std::string::npos)
        << g.file.metadata.at("command");
  }
}

TEST(Packed, PackedVsAloneIsRedWhenASequenceIsNotItselfAlone) {
  const FixtureSpec s = packed_grouped_spec(Op::gdn2);
  Problem p = draw_problem(s);
  const OracleOutput quad = evaluate_quad(p, true, 2);
  EXPECT_EQ(packed_vs_alone_check(p, quad, 2).figure, 0.0);
  // one token of the last sequence moved: its inputs and every output after it
  p.values["v"][static_cast<std::size_t>(10 * s.HV * s.V)] += 0.25;
  const CheckFigure moved = packed_vs_alone_check(p, evaluate_quad(p, true, 2), 2);
  EXPECT_FALSE(moved.passed);
  EXPECT_GT(moved.detail.value("v", 0), 0);
  EXPECT_GT(moved.detail.value("o", 0), 0);
  EXPECT_EQ(moved.detail.count("q"), 0u);  // q was not moved
}

TEST(Packed, LivenessIsRedWhenTheCarryIsCutInEachSequence) {
  FixtureSpec s = packed_grouped_spec(Op::kda);
  s.cu_seqlens = {0, 3, 40, 57};
  s.T = 57;
  GenerateOptions options;
  options.threads = 2;
  options.checks.faults.cut_carry_every = s.chunk;
  const GeneratedFixture g = generate_fixture(s, options);
  const CheckFigure* liveness = find_check(g.report, "liveness");
  ASSERT_NE(liveness, nullptr);
  EXPECT_FALSE(liveness->passed) << liveness->figure;
}

TEST(Packed, AFixturesPackingIsReadAndCheckedWithASentence) {
  const FixtureSpec s = packed_grouped_spec(Op::gdn);
  GenerateOptions options;
  options.threads = 2;
  const SafetensorsFile good = generate_fixture(s, options).file;
  auto refusal = [](const SafetensorsFile& f) -> std::string {
    try {
      spec_of_fixture(f, "f.safetensors");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal(good), "");
  SafetensorsFile f = good;
  f.tensors.erase("cu_seqlens");
  EXPECT_NE(refusal(f).find("f.safetensors: the metadata says N=3 packed sequences, but there is "
                            "no tensor 'cu_seqlens'"),
            std::string::npos)
      << refusal(f);
  f = good;
  f.tensors["cu_seqlens"] = Tensor::from_f64(DType::F64, {4}, std::vector<double>{0, 1, 8, 25});
  EXPECT_NE(refusal(f).find("tensor 'cu_seqlens' is F64 of shape [4]; it must be I64"),
            std::string::npos)
      << refusal(f);
  f = good;
  f.tensors["cu_seqlens"] = Tensor::from_i64({3}, std::vector<std::int64_t>{0, 8, 25});
  EXPECT_NE(
      refusal(f).find("has shape [3], but the metadata says N=3 sequences, so it must be [4]"),
      std::string::npos)
      << refusal(f);
  f = good;
  f.tensors["cu_seqlens"] = Tensor::from_i64({4}, std::vector<std::int64_t>{0, 8, 1, 25});
  EXPECT_NE(refusal(f).find("tensor 'cu_seqlens' (0,8,1,25): it must increase strictly"),
            std::string::npos)
      << refusal(f);
  f = good;
  f.tensors["cu_seqlens"] = Tensor::from_i64({4}, std::vector<std::int64_t>{0, 1, 8, 24});
  EXPECT_NE(refusal(f).find("it must end at the 25 tokens (T), not at 24"), std::string::npos)
      << refusal(f);
  f = good;
  f.metadata.erase("N");  // N is cu_seqlens' length less one; the metadata only repeats it
  EXPECT_EQ(refusal(f), "");
  f = good;
  f.metadata["HV"] = "300";
  EXPECT_NE(refusal(f).find("f.safetensors: the spec its metadata gives is refused: --HV is 300"),
            std::string::npos)
      << refusal(f);
}

}  // namespace
}  // namespace deltaproof::oracle
