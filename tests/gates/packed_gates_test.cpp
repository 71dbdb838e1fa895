// tests/gates/packed_gates_test.cpp — the gates on packed sequences and grouped
// value heads (issue 14, docs/VARLEN.md): the per-sequence groups the
// statistics take, the causality points of a packed batch, and the isolation,
// packing and batch-head relations shown red on backends broken in one way
// each (the clean backends are green on them: ctest -L gate).
// Run: ctest --test-dir build -R PackedGates
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gates/compare.hpp"
#include "gates/fixture_io.hpp"
#include "gates/noise.hpp"
#include "gates/report.hpp"
#include "gates/report_file.hpp"
#include "tests/gates/broken_backend.hpp"

namespace deltaproof::gates {
namespace {
using kernels::Buffers;
using kernels::ExecutionRecord;
using kernels::KernelShape;
using kernels::Phase;
using testing::Broken;
using testing::mentions;
using testing::run_with;

// gdn2/varlen-c16's packing: lengths 1, 7, 16, 17, 32, 67 at chunk 16
KernelShape varlen_c16() {
  KernelShape s;
  s.op = Op::gdn2;
  s.B = 1, s.T = 140, s.H = 2, s.HV = 4, s.K = 8, s.V = 8, s.chunk = 16;
  s.cu_seqlens = {0, 1, 8, 24, 41, 73, 140};
  return s;
}

TEST(PackedGates, ChunksAreEachSequencesOwnAndHeadsAreSequenceAndHead) {
  const KernelShape s = varlen_c16();
  const TermGroups o(s, "o");
  // chunks: 1 + 1 + 1 + 2 + 2 + 5; heads: 6 sequences x 4 value heads
  EXPECT_EQ(o.chunks(), 12u);
  EXPECT_EQ(o.heads(), 24u);
  // token 41 is sequence 4's first: its chunk 0, the 6th chunk over all
  const std::size_t token = static_cast<std::size_t>(s.value_heads()) * s.V;
  EXPECT_EQ(o.of(41 * token).chunk, 5u);
  EXPECT_EQ(o.chunk_name(5), "sequence 4 chunk 0");
  EXPECT_EQ(o.of(57 * token).chunk, 6u);  // 16 tokens on: its chunk 1
  EXPECT_EQ(o.chunk_name(11), "sequence 5 chunk 4");
  EXPECT_EQ(o.of(41 * token + 3 * s.V).head, 4u * 4 + 3);
  EXPECT_EQ(o.head_name(4 * 4 + 3), "sequence 4 head 3");
  // q runs over the key heads; a state's first index is the sequence
  EXPECT_EQ(TermGroups(s, "dq").heads(), 12u);
  const TermGroups ht(s, "ht");
  EXPECT_EQ(ht.chunks(), 0u);
  EXPECT_EQ(ht.of(5 * 4 * 8 * 8 + 2 * 8 * 8).head, 5u * 4 + 2);
  // dense: t / chunk over every row, (b, h)
  KernelShape dense = s;
  dense.cu_seqlens.clear();
  dense.HV = 0;
  EXPECT_EQ(TermGroups(dense, "o").chunks(), 9u);
  EXPECT_EQ(TermGroups(dense, "o").chunk_name(3), "chunk 3");
}

TEST(PackedGates, AnErrorInOneSequencesChunkIsNamedBySequenceAndChunk) {
  const KernelShape s = varlen_c16();
  std::map<std::string, std::vector<double>> reference, candidate;
  reference["o"].assign(kernels::tensor_size(s, "o"), 1.0);
  reference["ht"].assign(kernels::tensor_size(s, "ht"), 1.0);
  candidate = reference;
  candidate["o"][60 * 4 * 8 + 5] = 1.5;  // token 60: sequence 4 (from 41), chunk 1
  CompareOptions options;
  const auto terms = compare_terms(s, Phase::fwd, candidate, reference, options);
  ASSERT_EQ(terms.front().term, "o");
  EXPECT_EQ(terms.front().status, TermStatus::fail);
  EXPECT_NE(terms.front().message.find("chunks above the bar: sequence 4 chunk 1 of 12"),
            std::string::npos)
      << terms.front().message;
}

TEST(PackedGates, CausalityIsProbedInEverySequenceAndAtEveryBoundary) {
  KernelShape s = varlen_c16();
  const std::vector<int> points = causality_points(s);
  for (int boundary : {1, 8, 24, 41, 73})
    EXPECT_NE(std::find(points.begin(), points.end(), boundary), points.end()) << boundary;
  // sequence 5 (73..140, 67 tokens): its boundary row 73 + 16, its tail 73 + 64
  for (int inside : {73 + 8, 73 + 16, 73 + 64})
    EXPECT_NE(std::find(points.begin(), points.end(), inside), points.end()) << inside;
  s.cu_seqlens.clear();
  EXPECT_EQ(causality_points(s), causality_points(140, 16));
}

// cpu-chunk with `amount` of the first token's o (sequence 0's) added to the
// last sequence's first token, on a packed shape.
Broken leak_into_last_sequence(float amount) {
  return Broken("cpu-chunk", [amount](const KernelShape& s, Buffers&, Buffers& out,
                                      ExecutionRecord&, bool before) {
    if (before || !s.packed()) return;
    auto& o = out["o"];
    const std::size_t token = static_cast<std::size_t>(s.value_heads()) * s.V;
    const auto last = static_cast<std::size_t>(s.cu_seqlens[s.cu_seqlens.size() - 2]);
    for (std::size_t i = 0; i < token; ++i) o[last * token + i] += amount * o[i];
  });
}

// Sequence 0's o leaks into the last sequence: isolation and packing see it,
// causality (the leak runs forward in time) does not.
TEST(PackedGates, ALeakBetweenSequencesFailsIsolationAndPackingNotCausality) {
  const Broken leaky = leak_into_last_sequence(1e-3f);
  const GateResult isolation = run_with("gdn2.cpu-chunk.varlen-c16.isolation", leaky);
  EXPECT_EQ(isolation.verdict, Verdict::fail);
  EXPECT_TRUE(mentions(isolation.reasons, "o of the other sequences unchanged, sequence 0 moved:"))
      << ::testing::PrintToString(isolation.reasons);
  EXPECT_FALSE(mentions(isolation.reasons, "sequence 1 moved"));
  const GateResult packing = run_with("gdn2.cpu-chunk.varlen-c16.packing", leaky);
  EXPECT_EQ(packing.verdict, Verdict::fail);
  EXPECT_TRUE(mentions(packing.reasons, "o of sequence 5 (length 67) packed = alone"))
      << ::testing::PrintToString(packing.reasons);
  EXPECT_EQ(run_with("gdn2.cpu-chunk.varlen-c16.causality", leaky).verdict, Verdict::pass);
}

// A family whose packed run is not bitwise its sequences alone
// (packs_bitwise false: cuda-chunk) holds them to its bars: the clean kernel
// is green, a leak of 0.1 red.
TEST(PackedGates, APackingGateAtTheBarsIsGreenCleanAndRedOnALeak) {
  Family family = *testing::registered("gdn2.cpu-chunk.varlen-c16.packing").family;
  family.packs_bitwise = false;
  Gate gate = testing::registered("gdn2.cpu-chunk.varlen-c16.packing");
  gate.family = &family;
  RunOptions options;
  options.fixtures_dir = testing::fixtures_folder();
  const GateResult clean = run_gate(gate, options);
  EXPECT_EQ(clean.verdict, Verdict::pass) << ::testing::PrintToString(clean.reasons);
  const Broken leaky = leak_into_last_sequence(0.1f);
  options.backend = &leaky;
  const GateResult r = run_gate(gate, options);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_TRUE(mentions(r.reasons, "o of sequence 5 (length 67) packed vs alone: o: rel"))
      << ::testing::PrintToString(r.reasons);
}

// A packed run that depends on how many sequences it holds: the batch-head
// gate's doubled set of sequences sees it.
TEST(PackedGates, DependingOnTheSequenceCountFailsBatchHead) {
  const Broken counting(
      "cpu-chunk", [](const KernelShape& s, Buffers&, Buffers& out, ExecutionRecord&, bool before) {
        if (!before && s.states() > 6) out["dv"][0] *= 1.5f;
      });
  const GateResult r = run_with("kda.cpu-chunk.varlen-hv2-c32.batch-head", counting);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_TRUE(mentions(r.reasons, "dv unchanged with the sequences doubled:"))
      << ::testing::PrintToString(r.reasons);
}

// Grouped value heads: a value head that reads its group's other value head
// (v of head 1 into head 0) fails the value-head relation; one that reads
// the next group's q (value head 1 on key head 1) fails the key-head one.
TEST(PackedGates, AValueHeadReadingAnotherHeadsInputsFailsBatchHead) {
  const Broken borrower(
      "cpu-chunk", [](const KernelShape& s, Buffers& in, Buffers&, ExecutionRecord&, bool before) {
        if (!before) return;
        const int HV = s.value_heads();
        auto& v = in["v"];
        for (int t = 0; t < s.T; ++t)
          for (int j = 0; j < s.V; ++j)
            v[token_offset(s.T, HV, s.V, 0, t, 0, j)] +=
                0.5f * v[token_offset(s.T, HV, s.V, 0, t, 1, j)];
      });
  const GateResult r = run_with("kda.cpu-chunk.hv2-t65-c64-k8.batch-head", borrower);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_TRUE(mentions(r.reasons, "o value head 0 unchanged:"))
      << ::testing::PrintToString(r.reasons);
  EXPECT_FALSE(mentions(r.reasons, "o key head 0 unchanged:")) << "head 1 is in key head 0's group";

  const Broken crossed(
      "cpu-chunk", [](const KernelShape& s, Buffers& in, Buffers&, ExecutionRecord&, bool before) {
        if (!before) return;
        auto& q = in["q"];  // key head 0 takes a little of key head 1
        for (int t = 0; t < s.T; ++t)
          for (int i = 0; i < s.K; ++i)
            q[token_offset(s.T, s.H, s.K, 0, t, 0, i)] +=
                0.5f * q[token_offset(s.T, s.H, s.K, 0, t, 1, i)];
      });
  const GateResult k = run_with("gdn.cpu-chunk.hv4-t40-c16.batch-head", crossed);
  EXPECT_EQ(k.verdict, Verdict::fail);
  EXPECT_TRUE(mentions(k.reasons, "o key head 0 unchanged:"))
      << ::testing::PrintToString(k.reasons);
}

// The reports of these gates hold what the schema knows: the kinds isolation
// and packing, a packed state's (n, h, i, j), the fixture's HV, N and cu_seqlens.
TEST(PackedGates, TheirReportsFollowTheSchema) {
  std::vector<GateResult> results;
  for (const char* gate :
       {"gdn2.cpu-chunk.varlen-c16.bwd", "gdn2.cpu-chunk.varlen-c16.isolation",
        "gdn2.cpu-chunk.varlen-c16.packing", "kda.cpu-recurrent.varlen-hv2-c32.batch-head",
        "gdn.cpu-chunk.hv4-t40-c16.split-call"}) {
    RunOptions options;
    options.fixtures_dir = testing::fixtures_folder();
    results.push_back(run_gate(testing::registered(gate), options));
    EXPECT_EQ(results.back().verdict, Verdict::pass) << gate;
  }
  const nlohmann::json report = make_report(results, "packed_gates_test");
  EXPECT_EQ(report_schema_problem(report), "");
  EXPECT_EQ(report["gates"][0]["fixture"]["spec"]["cu_seqlens"].size(), 7u);
}

}  // namespace
}  // namespace deltaproof::gates
