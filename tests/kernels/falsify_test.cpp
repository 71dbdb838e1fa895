// tests/kernels/falsify_test.cpp — built only with -DDELTAPROOF_FALSIFY=ON.
// Each fault injection point of the CPU kernels, switched on alone, must make
// the fixture comparison of fixtures_test.cpp go red on at least one committed
// fixture and term. Prints, per fault, how many fixtures went red, the term
// that moved most and by how much (fault error / bar).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "gates/instrument_faults.hpp"
#include "gates/registry.hpp"
#include "gates/runner.hpp"
#include "kernels/faults.hpp"
#include "tests/bf16_family.hpp"
#include "tests/kernels/bars.hpp"
#include "tests/kernels/fixture_compare.hpp"

namespace deltaproof::testing {
namespace {}  // namespace
}  // namespace deltaproof::testing

namespace deltaproof::kernels {
// What ctest lists beside each test: the fault's id, not its bytes.
void PrintTo(const FaultInfo& info, std::ostream* out) { *out << info.id; }
}  // namespace deltaproof::kernels

namespace deltaproof::testing {
namespace {

class EveryFault : public ::testing::TestWithParam<kernels::FaultInfo> {
 protected:
  void TearDown() override { kernels::set_active_fault("none"); }
};

TEST_P(EveryFault, TurnsAtLeastOneFixtureTermRed) {
  const kernels::FaultInfo& fault = GetParam();
  if (fault.cuda_only()) GTEST_SKIP() << fault.id << " exists in the CUDA kernels only";
  kernels::set_active_fault(fault.id);
  int red_fixtures = 0;
  std::string worst_fixture, worst_term;
  double worst_ratio = 0.0, worst_rel = 0.0;
  std::vector<std::string> green;
  for (const auto& fixture : committed_fixtures()) {
    const BackendRun run = run_on_fixture("cpu-chunk", fixture, kernels::Phase::bwd);
    bool red = false;
    for (const auto& e : run.terms) {
      const double ratio = e.rel / term_bar("cpu-chunk", e.term);
      red = red || !(ratio <= 1.0);
      if (!(ratio <= worst_ratio)) {
        worst_ratio = ratio;
        worst_rel = e.rel;
        worst_fixture = fixture;
        worst_term = e.term;
      }
    }
    red_fixtures += red;
    if (!red) green.push_back(fixture);
  }
  std::string still_green;
  for (const auto& g : green) still_green += " " + g;
  std::cout << fmt::format(
      "[fault] {:<28} red on {:>2}/{} fixtures; worst {} {} rel {:.3e} "
      "({:.3g}x bar); green:{}\n",
      fault.id, red_fixtures, committed_fixtures().size(), worst_fixture, worst_term, worst_rel,
      worst_ratio, still_green.empty() ? " none" : still_green);
  EXPECT_GT(red_fixtures, 0) << "fault " << fault.id << " survived every committed fixture";
}

INSTANTIATE_TEST_SUITE_P(Catalog, EveryFault, ::testing::ValuesIn(kernels::fault_catalog()),
                         [](const auto& info) {
                           std::string name(info.param.id);
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// The switch itself: no fault means the clean kernel, bit for bit.
TEST(FaultSwitch, NoneIsTheCleanKernel) {
  kernels::set_active_fault("none");
  const BackendRun clean =
      run_on_fixture("cpu-chunk", "gdn2/t40-c16.safetensors", kernels::Phase::bwd);
  for (const auto& e : clean.terms) EXPECT_LE(e.rel, bwd_bar("cpu-chunk")) << e.term;
  EXPECT_THROW(kernels::set_active_fault("no-such-fault"), InputError);
}

// A gate's reference machinery runs with the fault under test switched off
// for its scope (kernels::FaultSuspended), and the fault is back after it.
TEST(FaultSwitch, SuspendedForAScopeAndBackAfterIt) {
  kernels::set_active_fault("state-not-carried");
  {
    const kernels::FaultSuspended clean;
    EXPECT_EQ(kernels::active_fault(), kernels::Fault::none);
  }
  EXPECT_EQ(kernels::active_fault(), kernels::Fault::state_not_carried);
  kernels::set_active_fault("none");
}

// A gate of the bf16 class (cuda-tc's family, run here with cpu-chunk in
// cuda-tc's place: no GPU needed) draws its bars from the class's noise on the
// fixture. Two ways that noise could hide a fault, each seen on the H200 in
// cuda-tc's first campaign (reports/gpu/1cb76fd): the ensemble (cpu-chunk)
// sharing the kernel fault under test, and the ensemble measured against the
// reference the gate got wrong. Each fault must turn the gate red; clean, green.
gates::GateResult run_bf16_gate(const std::string& name, const std::string& fault) {
  static const std::vector<gates::Gate> all =
      gates::all_gates(std::filesystem::path(DELTAPROOF_SOURCE_DIR) / "fixtures");
  const gates::Gate* found = nullptr;
  for (const auto& g : all) found = g.name == name ? &g : found;
  if (!found) throw std::runtime_error("no gate " + name);
  gates::set_active_fault(fault);
  gates::GateResult r = run_as_bf16_family(*found, kernels::find_backend("cpu-chunk"));
  gates::set_active_fault("none");
  return r;
}

TEST(Bf16FamilyGate, TheClassNoiseSeesNeitherTheKernelFaultNorTheWrongReference) {
  const std::string gate = "gdn2.cuda-tc.t65-c64-k8-mild.fwd";
  EXPECT_TRUE(run_bf16_gate(gate, "none").passed());
  for (const char* fault : {"state-not-carried", "h0-ignored", "reference-other-seed"}) {
    const gates::GateResult r = run_bf16_gate(gate, fault);
    EXPECT_EQ(r.verdict, gates::Verdict::fail) << fault << " survived " << gate;
  }
}

}  // namespace
}  // namespace deltaproof::testing
