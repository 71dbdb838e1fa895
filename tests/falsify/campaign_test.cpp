// tests/falsify/campaign_test.cpp — the parts of a campaign that decide a
// fault's status, each shown both ways: judge() against catalog expectations
// (Killed, Survived, KilledWrongTerm, GreenBroken), the killer and its margin,
// gate_outcomes() reading a gate-run report, the separation table and its
// weak gates, sharding, child processes (exit, signal, timeout), the tree
// hashes and the scratch worktree (removed, the repository untouched).
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <set>
#include <thread>

#include "core/error.hpp"
#include "core/process.hpp"
#include "falsify/campaign.hpp"
#include "falsify/tree.hpp"
#include "tests/core/temp_folder.hpp"

namespace deltaproof::falsify {
namespace {
namespace fs = std::filesystem;

GateOutcome gate(const std::string& name, int T, int chunk, bool red,
                 std::vector<std::string> terms = {}, double error = 0.0, double bar = 5e-5) {
  GateOutcome g;
  g.name = name;
  g.kind = "oracle";
  g.fixture.T = T;
  g.fixture.chunk = chunk;
  g.fixture.K = g.fixture.V = 8;
  g.red = red;
  g.red_terms = std::move(terms);
  g.error = error;
  g.bar = bar;
  g.worst_term = g.red_terms.empty() ? "" : g.red_terms.front();
  g.reason = red ? "a term above its bar" : "";
  return g;
}

// ds-not-handed-back's expectations: red on multi-chunk bwd gates, on gradients.
CatalogFault glue_fault() {
  CatalogFault f;
  f.id = "ds-not-handed-back";
  f.cls = "kernel";
  f.red = {{"*.bwd", "", "multi-chunk", {"dk", "dv", "dg"}}};
  f.green = {{"*", "", "one-chunk", {}}, {"*.fwd", "", "any", {}}};
  return f;
}

FaultOutcome judged(const CatalogFault& f, std::vector<GateOutcome> gates) {
  FaultOutcome o(f.id, f.cls, "cpu-chunk");
  o.outcomes = std::move(gates);
  judge(f, o);
  return o;
}

TEST(Judge, KilledWhenEveryExpectationHolds) {
  const auto o = judged(glue_fault(), {gate("g.cpu-chunk.t16-c16.bwd", 16, 16, false),
                                       gate("g.cpu-chunk.t32-c16.bwd", 32, 16, true, {"dk"}, 1e-2),
                                       gate("g.cpu-chunk.t64-c16.bwd", 64, 16, true, {"dv"}, 1e-3),
                                       gate("g.cpu-chunk.t32-c16.fwd", 32, 16, false)});
  EXPECT_EQ(o.status, FaultStatus::killed) << o.reason;
  EXPECT_EQ(o.red_gates, 2);
  // the killer is the expected-red gate the fault cleared its bar by least
  EXPECT_EQ(o.killer_gate, "g.cpu-chunk.t64-c16.bwd");
  EXPECT_EQ(o.killer_term, "dv");
  EXPECT_DOUBLE_EQ(o.margin, 1e-3 / 5e-5);
}

TEST(Judge, SurvivedWhenNothingIsRed) {
  const auto o = judged(glue_fault(), {gate("g.cpu-chunk.t32-c16.bwd", 32, 16, false)});
  EXPECT_EQ(o.status, FaultStatus::survived);
  EXPECT_NE(o.reason.find("no gate went red"), std::string::npos) << o.reason;
}

TEST(Judge, SurvivedWhenAnExpectedRedGateStaysGreen) {
  const auto o = judged(glue_fault(), {gate("g.cpu-chunk.t32-c16.bwd", 32, 16, true, {"dk"}, 1),
                                       gate("g.cpu-chunk.t64-c16.bwd", 64, 16, false)});
  EXPECT_EQ(o.status, FaultStatus::survived);
  ASSERT_EQ(o.broken.size(), 1u);
  EXPECT_EQ(o.broken[0], "g.cpu-chunk.t64-c16.bwd must go red and stayed green");
  EXPECT_EQ(
      o.broken_gates,
      (std::map<std::string, FaultStatus>{{"g.cpu-chunk.t64-c16.bwd", FaultStatus::survived}}));
  EXPECT_EQ(o.to_json().at("broken_gates").at("g.cpu-chunk.t64-c16.bwd"), "Survived");
}

TEST(Judge, KilledWrongTermWhenRedOutsideTheExpectedTerms) {
  const auto o =
      judged(glue_fault(), {gate("g.cpu-chunk.t32-c16.bwd", 32, 16, true, {"dk", "dh0"}, 1)});
  EXPECT_EQ(o.status, FaultStatus::killed_wrong_term);
  EXPECT_NE(o.broken.at(0).find("red on dk, dh0; expected red only on dg, dk, dv"),
            std::string::npos)
      << o.broken.at(0);
  EXPECT_EQ(o.broken_gates.at("g.cpu-chunk.t32-c16.bwd"), FaultStatus::killed_wrong_term);
}

TEST(Judge, GreenBrokenWhenAnExpectedGreenGateGoesRed) {
  const auto o = judged(glue_fault(), {gate("g.cpu-chunk.t32-c16.bwd", 32, 16, true, {"dk"}, 1),
                                       gate("g.cpu-chunk.t16-c16.bwd", 16, 16, true, {"dk"}, 1)});
  EXPECT_EQ(o.status, FaultStatus::green_broken);
  EXPECT_NE(o.broken.at(0).find("t16-c16.bwd must stay green"), std::string::npos);
  EXPECT_EQ(o.broken_gates.size(), 1u);
  EXPECT_EQ(o.broken_gates.at("g.cpu-chunk.t16-c16.bwd"), FaultStatus::green_broken);
}

TEST(Judge, ExceptLeavesGatesOutOfASelector) {
  CatalogFault f;
  f.id = "h0-ignored";
  f.red = {{"*.fwd", "*-edge.*", "any", {"o"}}};
  f.green = {{"*-edge.*", "", "any", {}}};
  EXPECT_EQ(judged(f, {gate("g.c.t32.fwd", 32, 16, true, {"o"}, 1),
                       gate("g.c.t32-edge.fwd", 32, 16, false)})
                .status,
            FaultStatus::killed);
  EXPECT_EQ(judged(f, {gate("g.c.t32.fwd", 32, 16, true, {"o"}, 1),
                       gate("g.c.t32-edge.fwd", 32, 16, true, {"o"}, 1)})
                .status,
            FaultStatus::green_broken);
}

TEST(GateOutcomes, ReadsVerdictsTermsAndErrors) {
  const nlohmann::json report = nlohmann::json::parse(R"({"gates": [
    {"name": "a", "kind": "oracle", "phase": "bwd", "verdict": "fail", "reasons": ["dq: NaN"],
     "fixture": {"spec": {"T": "40", "chunk": "16"}},
     "terms": [{"term": "o", "status": "pass", "rel": 1e-7, "bar": 3e-5},
               {"term": "dq", "status": "fail", "rel": null, "bar": 5e-5, "non_finite": 3},
               {"term": "dk", "status": "fail", "rel": 2e-3, "bar": 5e-5, "non_finite": 0},
               {"term": "dv", "status": "not-compared", "rel": null, "bar": 5e-5}]},
    {"name": "b", "kind": "split-call", "phase": "bwd", "verdict": "pass",
     "fixture": {"spec": {"T": "40", "chunk": "16"}},
     "terms": [{"term": "o split at t=16", "status": "pass", "rel": 0.6, "bar": 0}]},
    {"name": "c", "kind": "split-call", "phase": "bwd", "verdict": "fail",
     "fixture": {"spec": {"T": "40", "chunk": "16"}},
     "terms": [{"term": "dv split at t=16", "status": "fail", "rel": 0.0, "bar": 0,
                "non_finite": 5}]}]})");
  const auto gates = gate_outcomes(report);
  ASSERT_EQ(gates.size(), 3u);
  EXPECT_TRUE(gates[0].red);
  EXPECT_EQ(gates[0].fixture.T, 40);
  EXPECT_EQ(gates[0].fixture.chunk, 16);
  EXPECT_EQ(gates[0].red_terms, (std::vector<std::string>{"dq", "dk"}));
  EXPECT_TRUE(std::isinf(gates[0].error)) << "NaN outputs are an unbounded error";
  EXPECT_EQ(gates[0].worst_term, "dq");
  EXPECT_DOUBLE_EQ(gates[0].clean_error, 1e-7);
  EXPECT_FALSE(gates[1].red);
  EXPECT_EQ(gates[1].clean_error, 0.0) << "a bitwise relation's moved terms are not an error";
  EXPECT_EQ(gates[2].red_terms, std::vector<std::string>{"dv"})
      << "a relation's label names its term";
  EXPECT_TRUE(std::isinf(gates[2].error)) << "NaN equal to NaN bitwise is still an unbounded error";
}

TEST(FaultStatus, EveryStatusReadsBackByItsName) {
  for (FaultStatus st : {FaultStatus::killed, FaultStatus::survived, FaultStatus::killed_wrong_term,
                         FaultStatus::green_broken, FaultStatus::compile_error,
                         FaultStatus::runtime_error, FaultStatus::timeout, FaultStatus::ignored})
    EXPECT_EQ(parse_fault_status(status_name(st)), st);
  EXPECT_THROW(parse_fault_status("killed"), InputError) << "the names are Stryker's: Killed";
}

TEST(Sanitizer, ReadsTheTotalNotTheUnprintedRemainder) {
  const std::string initcheck =
      "========= Uninitialized __global__ memory read of size 4 bytes\n"
      "========= ERROR SUMMARY: 8192 errors\n"
      "========= ERROR SUMMARY: 8092 errors were not printed. Use --print-limit option\n";
  EXPECT_EQ(sanitizer_summary("initcheck", initcheck, 0)["count"], 8192);
  EXPECT_EQ(sanitizer_summary("memcheck", "========= ERROR SUMMARY: 0 errors\n", 0)["count"], 0);
  const auto race = sanitizer_summary(
      "racecheck", "========= RACECHECK SUMMARY: 5 hazards displayed (1 error, 4 warnings)\n", 1);
  EXPECT_EQ(race["count"], 5);
  EXPECT_EQ(race["summary"], "RACECHECK SUMMARY: 5 hazards displayed (1 error, 4 warnings)");
  EXPECT_EQ(sanitizer_summary("racecheck", "no GPU\n", 2)["count"], -1);
}

TEST(Separation, ListsTheSmallestKernelFaultErrorAndFlagsWeakGates) {
  BaselineOutcome b;
  b.backend = "cpu-chunk";
  GateOutcome clean = gate("g.cpu-chunk.t32-c16.bwd", 32, 16, false);
  clean.clean_error = 1e-5;
  clean.clean_term = "dg";
  b.clean = {clean};
  FaultOutcome strong("strong", "kernel", "cpu-chunk"), weak("weak", "kernel", "cpu-chunk"),
      instrument("metric", "instrument", "cpu-chunk");
  strong.outcomes = {gate("g.cpu-chunk.t32-c16.bwd", 32, 16, true, {"dk"}, 1.0)};
  weak.outcomes = {gate("g.cpu-chunk.t32-c16.bwd", 32, 16, true, {"dv"}, 6e-5)};
  instrument.outcomes = {gate("g.cpu-chunk.t32-c16.bwd", 32, 16, true, {"o"}, 1e-9)};
  auto rows = separation({b}, {strong, instrument});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].smallest_fault, "strong") << "instrument faults are not kernel errors";
  EXPECT_FALSE(rows[0].weak);
  rows = separation({b}, {strong, weak});
  EXPECT_EQ(rows[0].smallest_fault, "weak");
  EXPECT_DOUBLE_EQ(rows[0].ratio, 6.0);
  EXPECT_TRUE(rows[0].weak) << "6x between clean and fault is below 10x";
}

TEST(Shard, SplitsTheCatalogWithoutOverlapOrLoss) {
  Catalog c;
  for (int i = 0; i < 7; ++i) {
    c.faults.emplace_back();
    c.faults.back().id = "f" + std::to_string(i);
  }
  std::set<std::string> seen;
  for (int i = 1; i <= 3; ++i)
    for (const auto* f : shard_faults(c, {}, i, 3)) EXPECT_TRUE(seen.insert(f->id).second);
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(shard_faults(c, {"f3", "f5"}, 2, 2).size(), 1u);
  EXPECT_THROW(shard_faults(c, {"nope"}, 1, 1), InputError);
}

// Output read as data (git's HEAD, its status) holds stdout alone: a warning
// on stderr must not read as a dirty tree.
TEST(Process, CapturesStdoutAloneWhenAsked) {
  const auto r = run_process({"sh", "-c", "echo out; echo err >&2"}, 0, {}, Interrupts::honoured,
                             Capture::stdout_only);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.log, "out\n");
}

TEST(Process, ReportsExitSignalAndTimeout) {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.log.find("out"), std::string::npos);
  EXPECT_NE(r.log.find("err"), std::string::npos);
  r = run_process({"sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(r.signal, SIGSEGV);
  testing::TempFolder dir;
  const fs::path pid_file = dir.path() / "pid";
  r = run_process({"sh", "-c", "sleep 30 & echo $! > '" + pid_file.string() + "'; wait"}, 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 5.0);
  // the shell's own child is gone too: the timeout kills the whole process group
  std::string pid;
  std::ifstream(pid_file) >> pid;
  ASSERT_FALSE(pid.empty());
  bool alive = true;
  for (int i = 0; i < 100 && alive; ++i) {
    std::string stat;
    std::getline(std::ifstream("/proc/" + pid + "/stat"), stat);
    const auto close = stat.rfind(')');
    alive = close != std::string::npos && stat.substr(close + 2, 1) != "Z";
    if (alive) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(alive) << "sleep " << pid << " outlived the timeout";
}

void git(const fs::path& dir, const std::string& args) {
  const auto r = run_process(
      {"sh", "-c", "cd '" + dir.string() + "' && git -c user.email=t@t -c user.name=t " + args});
  ASSERT_EQ(r.exit_code, 0) << args << ": " << r.log;
}

TEST(Tree, HashesNameEveryChangedTrackedFile) {
  testing::TempFolder dir;
  git(dir.path(), "init -q . && echo a > a.txt && echo b > b.txt && git add . && git commit -qm x");
  const auto before = hash_tracked_files(dir.path());
  EXPECT_EQ(before.size(), 2u);
  EXPECT_TRUE(tree_differences(before, hash_tracked_files(dir.path())).empty());
  std::ofstream(dir.path() / "a.txt", std::ios::app) << "!";
  fs::remove(dir.path() / "b.txt");
  const auto changes = tree_differences(before, hash_tracked_files(dir.path()));
  EXPECT_EQ(changes, (std::vector<std::string>{"a.txt changed", "b.txt was deleted"}));
}

TEST(Tree, ScratchWorktreeIsRemovedAndLeavesTheRepositoryAsItWas) {
  testing::TempFolder dir;
  git(dir.path(), "init -q . && echo a > a.txt && git add . && git commit -qm x");
  const auto before = hash_tracked_files(dir.path());
  fs::path scratch;
  {
    ScratchWorktree worktree(dir.path());
    scratch = worktree.scratch();
    ASSERT_TRUE(fs::exists(worktree.tree() / "a.txt"));
    std::ofstream(worktree.tree() / "a.txt") << "patched";
  }
  EXPECT_FALSE(fs::exists(scratch));
  EXPECT_TRUE(tree_differences(before, hash_tracked_files(dir.path())).empty());
  const auto list = run_process({"git", "-C", dir.path().string(), "worktree", "list"});
  EXPECT_EQ(std::count(list.log.begin(), list.log.end(), '\n'), 1) << list.log;
}

}  // namespace
}  // namespace deltaproof::falsify
