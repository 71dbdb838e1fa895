// tests/gates/external_folder_test.cpp — a folder written as `gen --production`
// writes one (a fixture whose reference was computed elsewhere, and a
// manifest.json listing it), with the CPU's f64 oracle standing in for the GPU:
// `gate run --fixtures DIR` builds each backend's oracle gates there and no
// metamorphic gate (their fixtures are not in the folder); cpu-chunk passes at
// its bars; the report's fixture block names what computed the reference; and a
// reference off by 1% in one term is red on that term.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "core/safetensors.hpp"
#include "gates/registry.hpp"
#include "gates/runner.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/external.hpp"

namespace deltaproof::gates {
namespace {
namespace fs = std::filesystem;

// Writes `gdn2/t40-c16-ext.safetensors` and its manifest into a fresh folder;
// `scale_dk` multiplies the reference's dk.
fs::path external_folder(const std::string& name, double scale_dk) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "gdn2");
  oracle::FixtureSpec spec;
  spec.op = Op::gdn2;
  spec.T = 40, spec.chunk = 16;
  oracle::ExternalEvaluator f64{"f64 oracle (test)",
                                [scale_dk](const oracle::Problem& p, bool gradients) {
                                  auto t = oracle::evaluate<double>(p, gradients, 1).tensors;
                                  if (gradients)
                                    for (double& x : t.at("dk")) x *= scale_dk;
                                  return t;
                                },
                                {}};
  const oracle::GeneratedFixture f = oracle::generate_external_fixture(spec, f64, {});
  write_safetensors(dir / "gdn2/t40-c16-ext.safetensors", f.file);
  const nlohmann::json manifest = {
      {"format", "deltaproof-manifest/1"},
      {"fixtures",
       {{{"file", "gdn2/t40-c16-ext.safetensors"}, {"spec", {{"op", "gdn2"}, {"chunk", 16}}}}}}};
  write_text_atomically(dir / "manifest.json", manifest.dump());
  return dir;
}

TEST(ExternalFolder, HasOracleGatesOnlyAndCpuChunkPassesThere) {
  const fs::path dir = external_folder("external-folder", 1.0);
  const auto gates = all_gates(dir);
  for (const Gate& g : gates) EXPECT_EQ(g.kind, GateKind::oracle) << g.name;
  const auto chosen = select_gates(gates, {"gdn2.cpu-chunk.t40-c16-ext.bwd"});
  ASSERT_EQ(chosen.size(), 1u);
  RunOptions options;
  options.fixtures_dir = dir;
  const GateResult r = run_gate(chosen.front(), options);
  EXPECT_TRUE(r.passed()) << (r.reasons.empty() ? "" : r.reasons.front());
  EXPECT_EQ(r.fixture.at("reference"), "f64 oracle (test)");
  fs::remove_all(dir);
}

TEST(ExternalFolder, AReferenceOffByOnePercentInDkIsRedOnDk) {
  const fs::path dir = external_folder("external-folder-bad", 1.01);
  RunOptions options;
  options.fixtures_dir = dir;
  const GateResult r =
      run_gate(select_gates(all_gates(dir), {"gdn2.cpu-chunk.t40-c16-ext.bwd"}).front(), options);
  EXPECT_FALSE(r.passed());
  bool dk_red = false;
  for (const auto& t : r.terms) dk_red = dk_red || (t.term == "dk" && t.status == TermStatus::fail);
  EXPECT_TRUE(dk_red);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace deltaproof::gates
