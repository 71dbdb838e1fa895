// tests/gate_suite/gate_suite.cpp — every registered gate as a GoogleTest
// test, so that `ctest -L gate` runs them (labels: gate + cpu, later cuda).
// The test suite is the backend ("cpu_chunk"), the test the rest of the gate
// name ("gdn2_t32_c16_bwd"); the output names the gate as `deltaproof gate`
// does. A gate of a GPU backend on a machine without a GPU is reported
// skipped (GTEST_SKIP), never passed.
// Run: ctest --test-dir build -L gate    or    build/bin/gate_suite
// --gtest_filter='cpu_chunk.gdn2_*'
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "gates/registry.hpp"
#include "gates/runner.hpp"

namespace deltaproof::gates {
namespace {

// The source tree's fixtures; where the binary runs in a copied tree (the GPU
// machine), ./fixtures.
const std::filesystem::path kFixtures =
    std::filesystem::exists(std::filesystem::path(DELTAPROOF_SOURCE_DIR) / "fixtures")
        ? std::filesystem::path(DELTAPROOF_SOURCE_DIR) / "fixtures"
        : std::filesystem::path("fixtures");

std::string identifier(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '.' || c == '-'; }, '_');
  return text;
}

class GateTest : public ::testing::Test {
 public:
  explicit GateTest(Gate gate) : gate_(std::move(gate)) {}
  void TestBody() override {
    RunOptions options;
    options.fixtures_dir = kFixtures;
    options.repeat = 2;  // determinism in this process comes free with every gate
    std::printf("gate %s (%s)\n", gate_.name.c_str(), gate_.fixture.c_str());
    const GateResult r = run_gate(gate_, options);
    if (r.verdict == gates::Verdict::skipped)
      GTEST_SKIP() << gate_.name << ": " << r.reasons.front();
    std::string why;
    for (const auto& reason : r.reasons) why += "\n  " + reason;
    EXPECT_EQ(r.verdict, gates::Verdict::pass) << gate_.name << why;
    for (const auto& t : r.terms)
      std::printf("  %-28s %-12s rel %.3e  bar %.1e\n", t.term.c_str(),
                  std::string(status_name(t.status)).c_str(), t.rel, t.bar);
  }

 private:
  Gate gate_;
};

}  // namespace
}  // namespace deltaproof::gates

int main(int argc, char** argv) {
  using namespace deltaproof::gates;
  ::testing::InitGoogleTest(&argc, argv);
  for (const Gate& gate : all_gates(kFixtures)) {
    const std::string backend = gate.family->backend;
    // "gdn2.cpu-chunk.t32-c16.bwd" -> suite "cpu_chunk", test "gdn2_t32_c16_bwd"
    std::string test = gate.name;
    test.erase(test.find(backend), backend.size() + 1);
    test = identifier(test);
    ::testing::RegisterTest(identifier(backend).c_str(), test.c_str(), nullptr, nullptr, __FILE__,
                            __LINE__, [gate]() -> ::testing::Test* { return new GateTest(gate); });
  }
  return RUN_ALL_TESTS();
}
