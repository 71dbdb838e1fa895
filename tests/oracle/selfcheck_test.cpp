// tests/oracle/selfcheck_test.cpp — the generator's self-checks pass on the
// oracle and FAIL on broken generators: the double exp of background/000 is
// refused by the gradient checks, a cut carry by the liveness check.
#include <gtest/gtest.h>

#include <cmath>

#include "core/safetensors.hpp"
#include "oracle/fixture.hpp"

namespace deltaproof::oracle {
namespace {

FixtureSpec two_chunks(Op op, Regime regime = Regime::default_) {
  FixtureSpec s;
  s.op = op;
  s.T = 32;
  s.regime = regime;
  return s;
}

GeneratedFixture generate_clean(const FixtureSpec& spec) {
  const GenerateOptions options;
  return generate_fixture(spec, options);
}

const CheckFigure& check(const SelfCheckReport& report, const std::string& name) {
  for (const auto& c : report.checks)
    if (c.check == name) return c;
  throw std::runtime_error("no check named " + name);
}

class EveryOpAndRegime : public ::testing::TestWithParam<std::tuple<Op, Regime>> {};

TEST_P(EveryOpAndRegime, CleanGeneratorPassesEveryCheck) {
  const auto [op, regime] = GetParam();
  const GeneratedFixture f = generate_clean(two_chunks(op, regime));
  for (const auto& c : f.report.checks)
    EXPECT_TRUE(c.passed) << c.check << " figure " << c.figure << " bar " << c.bar << " "
                          << c.detail.dump();
  EXPECT_EQ(f.report.checks.size(), 6u);
}

INSTANTIATE_TEST_SUITE_P(All, EveryOpAndRegime,
                         ::testing::Combine(::testing::Values(Op::gdn2, Op::kda, Op::gdn),
                                            ::testing::Values(Regime::default_, Regime::mild,
                                                              Regime::stress, Regime::edge)),
                         [](const auto& info) {
                           return std::string(op_name(std::get<0>(info.param))) + "_" +
                                  std::string(regime_name(std::get<1>(info.param)));
                         });

// loss_f64_along, which the finite-difference and Taylor checks read, is
// loss_f64 of the moved problem bit for bit: every input of every op, packed
// sequences of grouped value heads, the generator's faults on and off.
TEST(SelfChecks, LossAlongADirectionIsTheMovedProblemsLossBitForBit) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    FixtureSpec s;
    s.op = op;
    s.H = 2, s.HV = 4, s.K = 4, s.V = 3, s.chunk = 16, s.seed = 5;
    s.cu_seqlens = {0, 1, 2, 19, 40};  // 1 token, a chunk plus 1, over a chunk
    s.T = 40;
    const Problem p = draw_problem(s);
    GeneratorFaults cut;
    cut.cut_carry_every = 3;
    for (const GeneratorFaults& faults : {GeneratorFaults{}, cut}) {
      const std::vector<double> steps = {0.5, -1.0 / 3, 1e-5, -2.5e-7};
      for (const auto& layout : input_layouts(s)) {
        Direction d{layout.name, std::vector<double>(p.at(layout.name).size())};
        for (std::size_t i = 0; i < d.values.size(); ++i)
          d.values[i] = std::sin(1.0 + static_cast<double>(i));
        const std::vector<double> along = loss_f64_along(p, d.tensor, d.values, steps, 2, faults);
        for (std::size_t i = 0; i < steps.size(); ++i)
          EXPECT_EQ(along[i], loss_f64(moved(p, d, steps[i]), 1, faults))
              << op_name(op) << " " << layout.name << " step " << steps[i];
      }
    }
  }
}

TEST(SelfChecks, DoubleExpInTheDecayIsRefused) {
  GenerateOptions options;
  options.checks.faults.double_exp_in_reverse_decay = true;
  const GeneratedFixture f = generate_fixture(two_chunks(Op::gdn2), options);
  ASSERT_FALSE(f.report.passed());
  EXPECT_EQ(f.report.first_failure()->check, "reverse_vs_forward_mode");
  EXPECT_GT(check(f.report, "reverse_vs_forward_mode").figure, 1e-2);
  // the Taylor remainder sees the same wrong gradient on its own: order ~1
  EXPECT_FALSE(check(f.report, "taylor_remainder_order").passed);
  EXPECT_LT(check(f.report, "taylor_remainder_order").figure, 1.3);
  // and finite differences agree with forward mode: the forward is right
  EXPECT_TRUE(check(f.report, "fd_vs_forward_mode").passed);
}

TEST(SelfChecks, CutCarryFailsLiveness) {
  GenerateOptions options;
  options.checks.faults.cut_carry_every = 16;
  const GeneratedFixture f = generate_fixture(two_chunks(Op::kda), options);
  ASSERT_FALSE(f.report.passed());
  EXPECT_EQ(f.report.first_failure()->check, "liveness");
  EXPECT_EQ(check(f.report, "liveness").figure, 0.0);
  // every gradient check still passes: only liveness can see this bug
  EXPECT_TRUE(check(f.report, "reverse_vs_forward_mode").passed);
  EXPECT_TRUE(check(f.report, "f64_vs_quad").passed);
}

TEST(SelfChecks, LivenessIsNotApplicableOnOneChunk) {
  FixtureSpec s = two_chunks(Op::gdn);
  s.T = 16;
  const GeneratedFixture f = generate_clean(s);
  EXPECT_TRUE(f.report.passed());
  EXPECT_TRUE(std::isnan(check(f.report, "liveness").figure));
}

TEST(SelfChecks, LargeFixturesAreCertifiedByDirections) {
  FixtureSpec s = two_chunks(Op::gdn2);
  s.T = 40;
  GenerateOptions options;
  options.checks.coordinate_limit = 100;  // force the direction path
  const GeneratedFixture f = generate_fixture(s, options);
  EXPECT_TRUE(f.report.passed());
  EXPECT_NE(check(f.report, "reverse_vs_forward_mode").method.find("random directions"),
            std::string::npos);
}

TEST(Fixture, TwoGenerationsGiveTheSameBytesAndTheMetadataNamesTheSpec) {
  const FixtureSpec s = two_chunks(Op::gdn2, Regime::edge);
  const GeneratedFixture a = generate_clean(s);
  const GeneratedFixture b = generate_clean(s);
  EXPECT_EQ(serialize_safetensors(a.file), serialize_safetensors(b.file));
  const auto& m = a.file.metadata;
  EXPECT_EQ(m.at("op"), "gdn2");
  EXPECT_EQ(m.at("T"), "32");
  EXPECT_EQ(m.at("status"), "checked");
  EXPECT_EQ(m.at("sha256.dq"), a.file.tensors.at("dq").sha256());
  EXPECT_EQ(spec_from_metadata(m, "x").describe(), s.describe());
  for (const auto& [name, tensor] : a.file.tensors) EXPECT_EQ(tensor.dtype(), DType::F64) << name;
}

TEST(Fixture, InputsAreExactlyRepresentableInTheInputDtype) {
  FixtureSpec s = two_chunks(Op::kda);
  s.dtype = DType::BF16;
  const Problem p = draw_problem(s);
  for (const auto& [name, values] : p.values)
    for (double x : values) ASSERT_EQ(x, round_to_bf16(x)) << name;
}

TEST(Fixture, CanonicalSetHasThirteenFixturesPerOpAndTheCoverageMatrixOnes) {
  const auto set = canonical_fixtures();
  // 13 per op, then 34 for the coverage matrix, then B2 H3 per op, then 2
  // loss masks (gdn2, kda), then 5 packed or grouped (issue 14)
  EXPECT_EQ(set.size(), 39u + 34u + 3u + 2u + 5u);
  std::set<std::string> names;
  for (const auto& f : set) names.insert(f.file);
  EXPECT_EQ(names.size(), set.size());
  EXPECT_TRUE(names.count("gdn2/t200-c64.safetensors"));
  EXPECT_TRUE(names.count("kda/t32-c16-bf16.safetensors"));
  EXPECT_TRUE(names.count("gdn/t32-c16-edge.safetensors"));
  EXPECT_TRUE(names.count("kda/t16-c16-mild.safetensors"));
  EXPECT_TRUE(names.count("gdn2/t40-c16-mild.safetensors"));
  EXPECT_TRUE(names.count("kda/t112-c64-k8-stress.safetensors"));
  EXPECT_TRUE(names.count("kda/t49-c16-k16v8-h0zero.safetensors"));
  for (const char* masked : {"gdn2/t40-c16-domask.safetensors", "kda/t40-c16-domask.safetensors"})
    EXPECT_TRUE(names.count(masked)) << masked;
  for (const char* packed : {"gdn2/varlen-c16.safetensors", "kda/varlen-c64-k16.safetensors",
                             "kda/hv2-t65-c64-k8.safetensors", "gdn/hv4-t40-c16.safetensors",
                             "kda/varlen-hv2-c32.safetensors"})
    EXPECT_TRUE(names.count(packed)) << packed;
}

std::vector<std::string> strings(std::initializer_list<const char*> list) {
  return {list.begin(), list.end()};
}

TEST(SelfChecks, PathSharesSplitEachGradientBetweenTheTwoCotangents) {
  const GeneratedFixture mild = generate_clean(two_chunks(Op::gdn2, Regime::mild));
  const PathLiveness& paths = mild.report.paths;
  EXPECT_EQ(paths.threshold, SelfCheckBars::path_share);
  EXPECT_EQ(paths.paths.size(), 14u);  // {do, dht} x dq dk dv dg db dw dh0
  EXPECT_LT(paths.linearity, 1e-13);   // g(do alone) + g(dht alone) = g
  EXPECT_TRUE(paths.uncovered().empty()) << paths.to_json().dump();
  EXPECT_EQ(paths.covered().size(), 13u);
  EXPECT_EQ(paths.structurally_absent(), strings({"dht->dq"}));
  for (const auto& p : paths.paths) {
    if (p.name() == "dht->dq") {
      EXPECT_EQ(p.share, 0.0);  // dq_t = scale S_t do_t
    }
    if (p.name() == "do->dq") {
      EXPECT_EQ(p.share, 1.0);
    }
  }
  // recorded in the metadata as JSON, the covered list with the shares
  const auto recorded = nlohmann::json::parse(mild.file.metadata.at("path_liveness"));
  EXPECT_EQ(recorded.at("covered").get<std::vector<std::string>>(), paths.covered());
  EXPECT_EQ(recorded.at("norm"), "max");
  EXPECT_GT(recorded.at("shares").at("dht").at("dh0").get<double>(), 0.1);
}

TEST(SelfChecks, DecayWipesOutDhtToDh0AndTheFixtureIsMarkedNotCoveringIt) {
  // default regime: 32 tokens of g in [-5, -0.1] leave ~1e-8 of dht in dh0
  const GeneratedFixture f = generate_clean(two_chunks(Op::kda));
  EXPECT_TRUE(f.report.passed()) << "an uncovered path never fails generation";
  EXPECT_EQ(f.report.paths.uncovered(), strings({"dht->dh0"}));
  EXPECT_EQ(f.file.metadata.at("status"), "checked");
  const auto recorded = nlohmann::json::parse(f.file.metadata.at("path_liveness"));
  EXPECT_EQ(recorded.at("uncovered").get<std::vector<std::string>>(), strings({"dht->dh0"}));
  EXPECT_LT(recorded.at("shares").at("dht").at("dh0").get<double>(), 1e-6);
}

}  // namespace
}  // namespace deltaproof::oracle
