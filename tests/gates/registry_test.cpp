// tests/gates/registry_test.cpp — the gate registry: every committed fixture x
// every backend x both phases is a gate, names follow
// <op>.<backend>.<fixture>.<phase>, globs select, and every bar stands on its
// evidence (at least 3x above the clean kernel's worst error, below the
// smallest error a catalog fault produced).
// Run: ctest --test-dir build -R Registry
#include "gates/registry.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"

namespace deltaproof::gates {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(DELTAPROOF_SOURCE_DIR) / "fixtures";

TEST(Registry, EveryFixtureTimesEveryBackendTimesBothPhasesIsAGate) {
  const auto gates = all_gates(kFixtures);
  std::set<std::string> names;
  for (const auto& g : gates) names.insert(g.name);
  EXPECT_EQ(names.size(), gates.size()) << "gate names are unique";
  // 78 fixtures x 4 f32 backends x 2 phases, + 3 ops x 4 backends x (3
  // relations on t40-c16, causality on a stress fixture and on t200-c64,
  // split-call at chunks 32 and 64, batch-head on t40-c16-b2h3); cuda-tc: the
  // 20 chunk-64 fixtures in both phases, causality on the 4 chunk-64 ones and
  // split-call on the 3 chunk-64 ones. The 5 packed and grouped fixtures
  // (issue 14) on the 4 f32 families: both phases, isolation, packing,
  // causality and batch-head on the 3 packed ones, batch-head, split-call and
  // causality on the 2 grouped ones; on cuda-tc the 2 of chunk 64 (one packed,
  // one grouped).
  EXPECT_EQ(gates.size(), 78u * 4 * 2 + 3 * 4 * (3 + 2 + 2 + 1) + 20 * 2 + 4 + 3 +
                              4 * (5 * 2 + 3 * 4 + 2 * 3) + (2 * 2 + 4 + 3));
  for (const char* name :
       {"gdn2.cpu-chunk.t32-c16.bwd", "kda.cpu-recurrent.t200-c64.fwd",
        "gdn.cuda-chunk.t32-c16-bf16.bwd", "gdn2.cuda-recurrent.t40-c16.split-call",
        "kda.cpu-chunk.t40-c16.causality", "gdn.cpu-recurrent.t40-c16.batch-head",
        "kda.cuda-chunk.t56-c32-stress.split-call", "gdn.cpu-chunk.t65-c64-k16v8.split-call",
        "gdn2.cpu-chunk.t40-c16-b2h3.batch-head", "gdn.cpu-chunk.t200-c64.causality",
        "kda.cuda-tc.t200-c64.fwd", "gdn2.cuda-tc.t65-c64-k8-stress.bwd",
        "kda.cuda-tc.t112-c64-k8-stress.causality", "gdn.cuda-tc.t65-c64-k16v8.split-call",
        "gdn2.cpu-chunk.varlen-c16.isolation", "kda.cpu-recurrent.varlen-hv2-c32.packing",
        "kda.cpu-chunk.hv2-t65-c64-k8.batch-head", "gdn.cpu-recurrent.hv4-t40-c16.bwd"})
    EXPECT_TRUE(names.count(name)) << name;
  for (const char* name :
       {"kda.cuda-chunk.varlen-hv2-c32.isolation", "gdn2.cuda-recurrent.varlen-c16.packing",
        "kda.cuda-tc.varlen-c64-k16.packing", "kda.cuda-tc.hv2-t65-c64-k8.batch-head"})
    EXPECT_TRUE(names.count(name)) << name;
}

TEST(Registry, AFamilyOfOneChunkSizeHasOnlyThatChunkSizesGates) {
  const auto gates = all_gates(kFixtures);
  std::map<GateKind, int> tc;
  for (const auto& g : gates) {
    if (std::string(g.family->backend) != "cuda-tc") continue;
    ++tc[g.kind];
    EXPECT_NE(g.name.find("-c64"), std::string::npos) << g.name;
  }
  EXPECT_EQ(tc[GateKind::oracle], 44);  // 22 chunk-64 fixtures, both phases
  EXPECT_EQ(tc[GateKind::causality], 6);
  EXPECT_EQ(tc[GateKind::split_call], 4);
  EXPECT_EQ(tc[GateKind::batch_head], 2);  // the chunk-64 packed and grouped ones
  EXPECT_EQ(tc[GateKind::isolation], 1);
  EXPECT_EQ(tc[GateKind::packing], 1);
}

TEST(Registry, GlobsSelectAndAGlobThatMatchesNothingIsAnError) {
  const auto gates = all_gates(kFixtures);
  EXPECT_EQ(select_gates(gates, {"gdn2.cpu-chunk.*.bwd"}).size(),
            25u);  // with varlen-c16 and t40-c16-domask
  EXPECT_EQ(select_gates(gates, {"*.t40-c16.causality"}).size(), 12u);
  EXPECT_TRUE(glob_match("a?c*", "abcdef"));
  EXPECT_FALSE(glob_match("a?c", "abcd"));
  EXPECT_THROW(select_gates(gates, {"nothing.*"}), InputError);
}

TEST(Registry, EveryMeasuredBarSitsAtLeast3xAboveTheCleanErrorAndBelowEveryFault) {
  auto check = [](const std::string& what, const Bar& bar) {
    SCOPED_TRACE(what);
    EXPECT_GT(bar.value, 0.0);
    if (bar.clean_worst >= 0) {
      EXPECT_GE(bar.value, 3 * bar.clean_worst) << bar.clean_where;
    }
    if (bar.smallest_fault >= 0) {
      EXPECT_LT(bar.value, bar.smallest_fault) << bar.fault_where;
    }
  };
  for (const Family& f : families()) {
    if (f.noise_bars()) continue;  // its bars come from the class's noise, per fixture
    check(std::string(f.backend) + " fwd", f.bars.fwd);
    check(std::string(f.backend) + " bwd", f.bars.bwd);
  }
}

TEST(Registry, GpuFamiliesAreMarkedSoTheyAreSkippedWithoutAGpu) {
  for (const Family& f : families())
    EXPECT_EQ(f.needs_gpu, std::string(f.backend).rfind("cuda-", 0) == 0) << f.backend;
}

}  // namespace
}  // namespace deltaproof::gates
