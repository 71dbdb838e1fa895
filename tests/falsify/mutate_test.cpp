// tests/falsify/mutate_test.cpp — the pieces of `falsify mutate` that need no
// build: reading mutants.py's list, choosing mutants (--ids, --shard, --max),
// judging a mutant from its child's exit and report (each status), the score,
// and the report (Stryker schemaVersion 2, validated against the committed
// schema; NoEffect is Stryker's Ignored). The whole command, built in a
// scratch worktree, is tests/cli/mutate_cli_test.sh.
// Run: ctest --test-dir build -R Mutate

// GCC 12 reports a false -Wrestrict once valijson is inlined (see
// stryker_schema_test.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "falsify/mutate.hpp"
#include "gates/report.hpp"
#include "tests/schema_validation.hpp"

namespace deltaproof::falsify {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

json listed(int id, const std::string& op, bool held = true) {
  return {{"id", id},
          {"file", "kernels/cpu/toy.cpp"},
          {"operator", op},
          {"line", 2},
          {"column", 12},
          {"offset", 41},
          {"length", 1},
          {"original", "+"},
          {"replacement", "-"},
          {"function", "toy"},
          {"schema", held ? json{{"kind", "expression"}, {"offset", 20}, {"length", 9}} : json()}};
}

std::vector<Mutant> some_mutants(int n) {
  json list = json::array();
  for (int i = 1; i <= n; ++i) list.push_back(listed(i, i % 2 ? "arith" : "relational"));
  return parse_mutants(list, "test");
}

TEST(MutateList, ReadsMutantsPyList) {
  json list = json::array({listed(1, "arith"), listed(2, "delete", false)});
  const auto mutants = parse_mutants(list, "list.json");
  ASSERT_EQ(mutants.size(), 2u);
  EXPECT_EQ(mutants[0].id, 1);
  EXPECT_EQ(mutants[0].op, "arith");
  EXPECT_EQ(mutants[0].offset, 41);
  EXPECT_TRUE(mutants[0].held);
  EXPECT_FALSE(mutants[1].held);
}

TEST(MutateList, MalformedMutantNamesTheListAndTheMutant) {
  json list = json::array({listed(1, "arith")});
  list[0].erase("offset");
  try {
    parse_mutants(list, "list.json");
    FAIL() << "a mutant without an offset was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("list.json: mutant 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_mutants(json::object(), "list.json"), InputError);
}

TEST(MutateChoose, IdsShardAndMaxCompose) {
  const auto all = some_mutants(10);
  EXPECT_EQ(choose_mutants(all, {}, 1, 1, 0).size(), 10u);
  const auto picked = choose_mutants(all, {3, 7}, 1, 1, 0);
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_EQ(picked[0].id, 3);
  EXPECT_EQ(picked[1].id, 7);
  // shards split the list and cover it once
  std::vector<int> seen;
  for (int i = 1; i <= 3; ++i)
    for (const auto& m : choose_mutants(all, {}, i, 3, 0)) seen.push_back(m.id);
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(seen[i], i + 1);
  // --max spreads over the list, not its head
  const auto spread = choose_mutants(all, {}, 1, 1, 3);
  ASSERT_EQ(spread.size(), 3u);
  EXPECT_EQ(spread[0].id, 1);
  EXPECT_EQ(spread[1].id, 4);
  EXPECT_EQ(spread[2].id, 7);
  EXPECT_THROW(choose_mutants(all, {11}, 1, 1, 0), InputError);
}

// A gate-run report of one green oracle gate and, when `red`, a red one.
json child_report(bool red, const std::string& digest) {
  gates::GateResult green;
  green.name = "gdn2.cpu-chunk.t64-c16.fwd";
  green.kind = "oracle";
  green.verdict = gates::Verdict::pass;
  gates::TermComparison o;
  o.term = "o";
  o.status = gates::TermStatus::pass;
  o.rel = 1e-7;
  o.bar = 1e-5;
  green.terms.push_back(o);
  std::vector<gates::GateResult> results = {green};
  if (red) {
    gates::GateResult r = green;
    r.name = "gdn2.cpu-chunk.t64-c16.bwd";
    r.verdict = gates::Verdict::fail;
    r.terms[0].status = gates::TermStatus::fail;
    r.terms[0].rel = 3e-3;
    r.reasons = {"o: rel 3e-3 over the bar"};
    results.push_back(r);
  }
  json report = gates::make_report(results, "gate run");
  report["gates"][0]["outputs_sha256"] = digest;
  return report;
}

const std::map<std::string, std::string> kBaseline = {{"gdn2.cpu-chunk.t64-c16.fwd", "aaaa"}};

TEST(MutateJudge, EachStatusFromTheChildsExitAndReport) {
  const Mutant m = some_mutants(1).front();
  MutantRun run;
  run.exit_code = 1;
  run.report = child_report(true, "bbbb");
  MutantOutcome o = judge_mutant(m, run, kBaseline);
  EXPECT_EQ(o.status, MutantStatus::killed);
  EXPECT_EQ(o.killer_gate, "gdn2.cpu-chunk.t64-c16.bwd");
  EXPECT_EQ(o.killer_term, "o");
  EXPECT_NEAR(o.margin, 300.0, 1e-9);

  run.exit_code = 0;
  run.report = child_report(false, "bbbb");
  o = judge_mutant(m, run, kBaseline);
  EXPECT_EQ(o.status, MutantStatus::survived) << o.reason;
  EXPECT_EQ(o.changed_outputs, std::vector<std::string>{"gdn2.cpu-chunk.t64-c16.fwd"});

  run.report = child_report(false, "aaaa");
  EXPECT_EQ(judge_mutant(m, run, kBaseline).status, MutantStatus::no_effect);

  MutantRun hung;
  hung.timed_out = true;
  hung.timeout_s = 5;
  EXPECT_EQ(judge_mutant(m, hung, kBaseline).status, MutantStatus::timeout);

  MutantRun crashed;
  crashed.signal = 11;
  crashed.exit_code = -1;
  o = judge_mutant(m, crashed, kBaseline);
  EXPECT_EQ(o.status, MutantStatus::runtime_error);
  EXPECT_NE(o.reason.find("signal 11"), std::string::npos) << o.reason;

  MutantRun no_report;
  no_report.exit_code = 0;
  EXPECT_EQ(judge_mutant(m, no_report, kBaseline).status, MutantStatus::runtime_error);
  MutantRun exit_one_all_green;  // exit 1 without a red gate is no kill
  exit_one_all_green.exit_code = 1;
  exit_one_all_green.report = child_report(false, "aaaa");
  EXPECT_EQ(judge_mutant(m, exit_one_all_green, kBaseline).status, MutantStatus::runtime_error);
}

TEST(MutateSanitize, EachToolsFirstErrorLineIsAFinding) {
  EXPECT_EQ(sanitizer_finding("gate ok\n==4242==ERROR: AddressSanitizer: heap-buffer-overflow on "
                              "address 0x6020 at pc 0x55\nREAD of size 4\n",
                              kSanitizerExitCode, 0),
            "AddressSanitizer: ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020 at "
            "pc 0x55");
  EXPECT_EQ(sanitizer_finding("kernels/cpu/chunk.cpp:20:5: runtime error: index 17 out of bounds "
                              "for type 'float [16]'\n",
                              kSanitizerExitCode, 0),
            "UndefinedBehaviorSanitizer: kernels/cpu/chunk.cpp:20:5: runtime error: index 17 out "
            "of bounds for type 'float [16]'");
  EXPECT_EQ(sanitizer_finding("deltaproof: Eigen/src/Core/Block.h:122: Block: Assertion `startRow "
                              ">= 0' failed.\n",
                              -1, 6)
                .rfind("assertion: deltaproof: Eigen/src/Core/Block.h:122", 0),
            0u);
  EXPECT_EQ(sanitizer_finding("========= COMPUTE-SANITIZER\n========= Invalid __local__ write of "
                              "size 4 bytes\n=========     at chunk_intra_kernel+0x1f0\n",
                              kSanitizerExitCode, 0),
            "memcheck: Invalid __local__ write of size 4 bytes");
  EXPECT_EQ(sanitizer_finding("========= Error: Race reported between Write access at "
                              "chunk_kernel+0x30\n",
                              kSanitizerExitCode, 0),
            "racecheck: Error: Race reported between Write access at chunk_kernel+0x30");
  EXPECT_EQ(sanitizer_finding("========= Barrier error detected. Divergent thread(s) in warp\n",
                              kSanitizerExitCode, 0),
            "synccheck: Barrier error detected. Divergent thread(s) in warp");
  // the error exit code with nothing known printed is still a finding
  EXPECT_NE(sanitizer_finding("something else\n", kSanitizerExitCode, 0), "");
  // a clean run, and a red gate's exit 1, are none
  EXPECT_EQ(
      sanitizer_finding("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", 0, 0),
      "");
  EXPECT_EQ(sanitizer_finding("gate gdn2... FAIL\n", 1, 0), "");
}

TEST(MutateSanitize, AnUndetectedMutantIsKilledByAFindingOrARedGateElseKeepsItsStatus) {
  const Mutant m = some_mutants(1).front();
  MutantRun first;
  first.exit_code = 0;
  first.report = child_report(false, "bbbb");
  const MutantOutcome survived = judge_mutant(m, first, kBaseline);
  ASSERT_EQ(survived.status, MutantStatus::survived);

  MutantRun found;  // ASan stopped the run: no report, exit 86
  found.exit_code = kSanitizerExitCode;
  found.finding = "AddressSanitizer: ERROR: AddressSanitizer: heap-buffer-overflow";
  MutantOutcome o = judge_sanitized(survived, found, "asan");
  EXPECT_EQ(o.status, MutantStatus::killed);
  EXPECT_EQ(o.killer_gate, "asan");
  EXPECT_EQ(o.killer_term, "AddressSanitizer");
  EXPECT_EQ(o.killed_by, std::vector<std::string>{"asan"});
  EXPECT_EQ(o.sanitizer, "asan");
  EXPECT_NE(o.reason.find("Survived on the outputs alone"), std::string::npos) << o.reason;

  MutantRun red;  // a gate red under the sanitizer kills it too
  red.exit_code = 1;
  red.report = child_report(true, "cccc");
  o = judge_sanitized(survived, red, "memcheck");
  EXPECT_EQ(o.status, MutantStatus::killed);
  EXPECT_EQ(o.killer_gate, "gdn2.cpu-chunk.t64-c16.bwd");
  EXPECT_TRUE(o.sanitizer_finding.empty());

  MutantRun clean;
  clean.exit_code = 0;
  clean.report = child_report(false, "bbbb");
  o = judge_sanitized(survived, clean, "asan");
  EXPECT_EQ(o.status, MutantStatus::survived);
  EXPECT_NE(o.reason.find("clean under asan"), std::string::npos) << o.reason;
  EXPECT_EQ(o.sanitizer, "asan");
}

// A temporary file's path, removed at the end of the test.
struct TemporaryPath {
  fs::path path = fs::temp_directory_path() /
                  fmt::format("deltaproof-journal-{}-{}.jsonl", ::getpid(),
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TemporaryPath() { fs::remove(path); }
  ~TemporaryPath() { fs::remove(path); }
};

MutantOutcome outcome(const Mutant& m, MutantStatus status) {
  MutantOutcome o;
  o.mutant = m;
  o.status = status;
  o.reason = "why";
  o.killer_gate = status == MutantStatus::killed ? "gdn.cpu-chunk.t16.fwd" : "";
  o.killed_by = {o.killer_gate};
  o.margin = 3.5;
  o.seconds = 1.25;
  return o;
}

TEST(MutateJournal, ResultsComeBackAsTheyWentInTheLastOfEachPhaseWinning) {
  TemporaryPath file;
  const auto mutants = some_mutants(3);
  MutateOptions options;
  options.files = {"kernels/cpu/toy.cpp"};
  const json header = journal_header(options);
  EXPECT_EQ(read_journal(file.path, header, mutants).results, 0);  // none yet
  append_journal(file.path, header,
                 journal_line(outcome(mutants[0], MutantStatus::killed), JournalPhase::gates));
  append_journal(file.path, header,
                 journal_line(outcome(mutants[1], MutantStatus::no_effect), JournalPhase::gates));
  MutantOutcome sanitized = outcome(mutants[1], MutantStatus::killed);
  sanitized.sanitizer = "asan";
  sanitized.sanitizer_finding = "AddressSanitizer: heap-buffer-overflow";
  append_journal(file.path, header, journal_line(sanitized, JournalPhase::sanitize));
  const Journal j = read_journal(file.path, header, mutants);
  EXPECT_EQ(j.results, 3);
  EXPECT_EQ(j.cut_lines, 0);
  ASSERT_EQ(j.gates.size(), 2u);
  EXPECT_EQ(j.gates.at(1).status, MutantStatus::killed);
  EXPECT_EQ(j.gates.at(1).killer_gate, "gdn.cpu-chunk.t16.fwd");
  EXPECT_EQ(j.gates.at(1).margin, 3.5);
  EXPECT_EQ(j.gates.at(1).mutant.replacement, "-");
  EXPECT_EQ(j.gates.at(2).status, MutantStatus::no_effect);
  ASSERT_EQ(j.sanitize.size(), 1u);
  EXPECT_EQ(j.sanitize.at(2).sanitizer_finding, "AddressSanitizer: heap-buffer-overflow");
  EXPECT_EQ(j.gates.count(3), 0u);
}

TEST(MutateJournal, ALineCutShortIsLeftOutAndTheNextResultStartsOnANewLine) {
  TemporaryPath file;
  const auto mutants = some_mutants(2);
  MutateOptions options;
  const json header = journal_header(options);
  append_journal(file.path, header,
                 journal_line(outcome(mutants[0], MutantStatus::killed), JournalPhase::gates));
  {
    std::ofstream out(file.path, std::ios::app);
    out << R"({"id": 2, "phase": "ga)";  // the machine went away here
  }
  EXPECT_EQ(read_journal(file.path, header, mutants).cut_lines, 1);
  append_journal(file.path, header,
                 journal_line(outcome(mutants[1], MutantStatus::survived), JournalPhase::gates));
  const Journal j = read_journal(file.path, header, mutants);
  EXPECT_EQ(j.cut_lines, 1);
  EXPECT_EQ(j.results, 2);
  EXPECT_EQ(j.gates.at(2).status, MutantStatus::survived);
}

TEST(MutateJournal, AnotherSetUpOrAnotherListIsRefusedNamingTheFileAndLine) {
  TemporaryPath file;
  auto mutants = some_mutants(2);
  MutateOptions options;
  const json header = journal_header(options);
  append_journal(file.path, header,
                 journal_line(outcome(mutants[0], MutantStatus::killed), JournalPhase::gates));
  MutateOptions other = options;
  other.backends = {"cuda-chunk"};
  try {
    read_journal(file.path, journal_header(other), mutants);
    FAIL() << "a journal of other backends was taken";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.path.string() + ", line 1"), std::string::npos) << what;
    EXPECT_NE(what.find("backends"), std::string::npos) << what;
  }
  mutants[0].replacement = "*";  // the list was made again from an edited file
  try {
    read_journal(file.path, header, mutants);
    FAIL() << "a journal of another list was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: mutant 1"), std::string::npos) << e.what();
  }
  fs::remove(file.path);
  std::ofstream(file.path) << "{\"gates\": []}\n";
  EXPECT_THROW(read_journal(file.path, header, mutants), InputError);  // not a journal
}

TEST(MutateScore, KilledOverKilledPlusSurvivedNoEffectSetAside) {
  std::vector<MutantOutcome> outcomes(6);
  outcomes[0].status = outcomes[1].status = outcomes[2].status = MutantStatus::killed;
  outcomes[3].status = MutantStatus::survived;
  outcomes[4].status = MutantStatus::no_effect;
  outcomes[5].status = MutantStatus::no_coverage;
  const Score s = score_of(outcomes);
  EXPECT_DOUBLE_EQ(s.score(), 0.75);
  EXPECT_EQ(s[MutantStatus::no_effect], 1);
  EXPECT_EQ(s[MutantStatus::timeout], 0);
  EXPECT_TRUE(std::isnan(score_of({}).score()));
  EXPECT_EQ(s.to_json()["score_text"], "75.0%");
}

TEST(MutateReport, StrykerSchemaV2WithOurFieldsAndAScorePerFileAndOperator) {
  MutateResult result;
  result.source_top = "/src";
  result.head = "0123456789abcdef";
  result.sources["kernels/cpu/toy.cpp"] = "float toy(float a, float b) {\n  return a + b;\n}\n";
  result.mutants_found = 3;
  const auto mutants = some_mutants(3);
  const MutantStatus statuses[] = {MutantStatus::killed, MutantStatus::survived,
                                   MutantStatus::no_effect};
  for (int i = 0; i < 3; ++i) {
    MutantOutcome o;
    o.mutant = mutants[i];
    o.status = statuses[i];
    result.mutants.push_back(o);
  }
  MutateOptions options;
  options.files = {"kernels/cpu/toy.cpp"};
  const json report = mutate_report(result, options, "deltaproof falsify mutate");
  EXPECT_TRUE(is_mutate_report(report));
  const auto schema = testing::load_schema(fs::path(DELTAPROOF_SOURCE_DIR) /
                                           "reports/schema/mutation-testing-report-v2.schema.json");
  const auto errors = testing::schema_errors(*schema, report);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const json& listed_mutants = report["files"]["kernels/cpu/toy.cpp"]["mutants"];
  ASSERT_EQ(listed_mutants.size(), 3u);
  EXPECT_EQ(listed_mutants[2]["status"], "Ignored");
  EXPECT_EQ(listed_mutants[2]["deltaproofStatus"], "NoEffect");
  EXPECT_EQ(listed_mutants[0]["location"]["end"]["line"], 2);
  const json& summary = report["deltaproof"]["summary"];
  EXPECT_EQ(summary["score_text"], "50.0%");
  EXPECT_EQ(summary["score_by_operator"]["arith"]["Killed"], 1);
  EXPECT_EQ(summary["score_by_operator"]["relational"]["Survived"], 1);
  EXPECT_EQ(summary["score_by_file"]["kernels/cpu/toy.cpp"]["NoEffect"], 1);
}

}  // namespace
}  // namespace deltaproof::falsify
