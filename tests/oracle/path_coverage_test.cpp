// tests/oracle/path_coverage_test.cpp — every cotangent -> gradient path of
// every op is carried by at least kMinFixtures committed fixtures (issue 10,
// item 6). Reads fixtures/manifest.json: per fixture, the per-path shares that
// `gen --all` recorded (max|g(c alone)|/max|g|). A path counts for a fixture
// when its share is >= SelfCheckBars::path_share; a kernel that drops a path
// shows that share as its rel error on that gradient, so a path carried by
// few fixtures is a bug few gates can see.
// Run: ctest --test-dir build -R PathCoverage
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "oracle/fixture.hpp"

namespace deltaproof::oracle {
namespace {

constexpr std::size_t kMinFixtures = 3;

nlohmann::json read_manifest() {
  const auto path = std::filesystem::path(DELTAPROOF_SOURCE_DIR) / "fixtures" / "manifest.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return nlohmann::json::parse(in);
}

// The paths of an op that the recurrence has: {do, dht} x its gradients,
// less the structurally absent ones (dht -> dq).
std::vector<std::string> required_paths(Op op) {
  FixtureSpec spec;
  spec.op = op;
  std::vector<std::string> out;
  for (const auto& cotangent : cotangent_layouts(spec))
    for (const auto& gradient : gradient_names(spec))
      if (path_exists(cotangent.name, gradient)) out.push_back(cotangent.name + "->" + gradient);
  return out;
}

TEST(PathCoverage, EveryPathOfEveryOpIsCarriedBySeveralCommittedFixtures) {
  const nlohmann::json manifest = read_manifest();
  // op -> path -> fixtures carrying it
  std::map<std::string, std::map<std::string, std::vector<std::string>>> carried;
  for (const auto& entry : manifest.at("fixtures")) {
    const std::string file = entry.at("file");
    const std::string op = entry.at("spec").at("op");
    ASSERT_TRUE(entry.contains("path_liveness"))
        << file << ": the manifest has no path_liveness; regenerate with gen --all";
    const auto& liveness = entry.at("path_liveness");
    const auto& shares = liveness.at("shares");
    std::set<std::string> covered_here;
    for (const auto& [cotangent, by_gradient] : shares.items())
      for (const auto& [gradient, share] : by_gradient.items())
        if (path_exists(cotangent, gradient) && share.is_number() &&
            share.get<double>() >= SelfCheckBars::path_share) {
          carried[op][cotangent + "->" + gradient].push_back(file);
          covered_here.insert(cotangent + "->" + gradient);
        }
    // the recorded list agrees with the shares at today's threshold
    const auto listed = liveness.at("covered").get<std::vector<std::string>>();
    EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), covered_here)
        << file << ": 'covered' disagrees with the shares at threshold "
        << std::to_string(SelfCheckBars::path_share) << " (recorded " << liveness.at("threshold")
        << ")";
  }
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const std::string name(op_name(op));
    for (const auto& path : required_paths(op)) {
      const auto& files = carried[name][path];
      std::string list;
      for (const auto& f : files) list += " " + f;
      EXPECT_GE(files.size(), kMinFixtures)
          << "op " << name << ", path " << path
          << ": carried (share >= " << std::to_string(SelfCheckBars::path_share) << ") by "
          << files.size() << " committed fixture(s), fewer than " << kMinFixtures << ":"
          << (list.empty() ? " none" : list);
    }
  }
}

}  // namespace
}  // namespace deltaproof::oracle
