// tests/oracle/sampled_test.cpp — checking a reference computed elsewhere
// against the quad oracle on sampled sequences (oracle/sampled.hpp): a
// sequence cut out as its own problem gives its slice of the whole problem's
// outputs bit for bit, the f64 oracle passes at 1e-12, and a reference off by
// one part in 1e9 in one element of one sequence is caught there and only there.
#include "oracle/sampled.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "oracle/evaluate.hpp"

namespace deltaproof::oracle {
namespace {

Problem small_problem(Op op) {
  FixtureSpec spec;
  spec.op = op;
  spec.B = 2, spec.T = 20, spec.H = 3, spec.K = 8, spec.V = 4;
  spec.seed = 3;
  return draw_problem(spec);
}

TEST(Sampled, ASequenceCutOutIsItsSliceOfTheWholeProblemBitForBit) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const Problem p = small_problem(op);
    const TensorMap whole = evaluate<double>(p, true, 1).tensors;
    for (const auto& [b, h] : {std::pair{0, 0}, {1, 2}, {0, 1}}) {
      const TensorMap one = evaluate<double>(head_problem(p, b, h), true, 1).tensors;
      const TensorMap cut = head_slice(p.spec, whole, b, h);
      ASSERT_EQ(cut.size(), one.size()) << op_name(op);
      for (const auto& [name, values] : one) {
        ASSERT_EQ(values.size(), cut.at(name).size()) << name;
        EXPECT_EQ(std::memcmp(values.data(), cut.at(name).data(), values.size() * sizeof(double)),
                  0)
            << op_name(op) << " " << name << " (" << b << ", " << h << ")";
      }
    }
  }
}

TEST(Sampled, TheF64OraclePassesAt1e12AndAPerturbedElementIsCaughtInItsSequenceOnly) {
  const Problem p = small_problem(Op::kda);
  TensorMap reference = evaluate<double>(p, true, 1).tensors;
  const std::vector<std::pair<int, int>> heads = {{0, 0}, {1, 2}};
  for (const SampledHead& head : check_heads_against_quad(p, reference, heads, true, 1)) {
    EXPECT_EQ(head.terms.size(), 8u);  // o ht dq dk dv dg dbeta dh0
    EXPECT_LE(head.worst().rel, 1e-12) << head.worst().term;
  }
  // one element of dk in sequence (1, 2), off by one part in 1e9
  reference.at("dk")[token_offset(p.spec, p.spec.K, 1, 7, 2, 3)] *= 1 + 1e-9;
  const auto checked = check_heads_against_quad(p, reference, heads, true, 1);
  EXPECT_LE(checked[0].worst().rel, 1e-12);
  EXPECT_EQ(checked[1].worst().term, "dk");
  EXPECT_GT(checked[1].worst().rel, 1e-12);
}

TEST(Sampled, AMissingTermOrASequenceOutOfRangeIsRefusedWithASentence) {
  const Problem p = small_problem(Op::gdn2);
  TensorMap reference = evaluate<double>(p, false, 1).tensors;
  try {
    check_heads_against_quad(p, reference, {{0, 0}}, true, 1);
    ADD_FAILURE() << "a reference without gradients was checked for them";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the reference has no dq"), std::string::npos) << e.what();
  }
  try {
    check_heads_against_quad(p, reference, {{2, 0}}, false, 1);
    ADD_FAILURE() << "b = 2 of B = 2 was checked";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("outside B=2 H=3"), std::string::npos) << e.what();
  }
  reference.at("o").pop_back();
  EXPECT_THROW(check_heads_against_quad(p, reference, {{0, 0}}, false, 1), InputError);
}

}  // namespace
}  // namespace deltaproof::oracle
