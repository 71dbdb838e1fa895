// tests/gates/report_schema_test.cpp — the JSON report against its schema,
// reports/schema/report-v1.schema.json, with valijson: reports that
// make_report writes from real gate results (oracle fwd and bwd, the three
// metamorphic relations, `gate check` candidates green and red, a skipped
// gate) validate as written to disk, and reports broken in one field each are
// refused, so the schema is known to be able to say no.
// Run: ctest --test-dir build -R ReportSchema

// GCC 12 reports a false -Wrestrict in std::string::replace once valijson's
// json_pointer code is inlined here (GCC bug 105651); it is reported against
// libstdc++'s char_traits.h, so it is switched off before any include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../core/temp_folder.hpp"
#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "gates/fixture_io.hpp"
#include "gates/registry.hpp"
#include "gates/report.hpp"
#include "gates/report_file.hpp"
#include "gates/runner.hpp"
#include "tests/schema_validation.hpp"

namespace deltaproof::gates {
namespace {
namespace fs = std::filesystem;
using kernels::Phase;

const fs::path kSourceDir = DELTAPROOF_SOURCE_DIR;
const fs::path kFixtures = kSourceDir / "fixtures";
const fs::path kSchemaPath = kSourceDir / "reports/schema/report-v1.schema.json";

using testing::read_json;

// The committed schema, parsed once.
const valijson::Schema& report_schema() {
  static const std::unique_ptr<valijson::Schema> schema = testing::load_schema(kSchemaPath);
  return *schema;
}

std::vector<std::string> schema_errors(const nlohmann::json& report) {
  return testing::schema_errors(report_schema(), report);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += "\n  " + line;
  return text;
}

// A report as it lies on disk: dumped and parsed back, so that NaN and inf
// arrive as null exactly as a reader of the file sees them.
nlohmann::json as_written(const nlohmann::json& report) {
  return nlohmann::json::parse(report.dump(2));
}

std::vector<GateResult> run_named(const std::vector<std::string>& names, int repeat) {
  RunOptions options;
  options.fixtures_dir = kFixtures;
  options.repeat = repeat;
  std::vector<GateResult> results;
  for (const auto& gate : select_gates(all_gates(kFixtures), names))
    results.push_back(run_gate(gate, options));
  return results;
}

// Candidates for `gate check`: cpu-recurrent's outputs on a fixture, then
// edited by `edit` (to turn terms red in the ways a report must describe).
fs::path write_candidate(const fs::path& folder, const std::string& name,
                         const std::function<void(kernels::Buffers&)>& edit,
                         const std::vector<std::string>& drop = {}) {
  const fs::path fixture = kFixtures / "gdn2/t40-c16.safetensors";
  const KernelJob job = job_from_file(read_safetensors(fixture), fixture.string(), Phase::bwd, 0);
  kernels::Buffers outputs = kernels::allocate_outputs(job.shape, Phase::bwd, 0.0f);
  kernels::ExecutionRecord record;
  kernels::find_backend("cpu-recurrent").run(job.shape, job.inputs, Phase::bwd, outputs, record);
  edit(outputs);
  SafetensorsFile file =
      candidate_file(job.shape, Phase::bwd, outputs, record, "cpu-recurrent", fixture.string());
  for (const auto& tensor : drop) file.tensors.erase(tensor);
  const fs::path path = folder / (name + ".safetensors");
  write_safetensors(path, file);
  return path;
}

// One report holding every kind of gate and every term status there is.
class ReportSchema : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<GateResult> results =
        run_named({"gdn2.cpu-chunk.t40-c16.fwd", "gdn2.cpu-chunk.t256-c16.bwd",
                   "kda.cpu-recurrent.t40-c16.bwd", "gdn2.cpu-chunk.t40-c16.causality",
                   "kda.cpu-chunk.t40-c16.split-call", "gdn.cpu-recurrent.t40-c16.batch-head"},
                  2);
    testing::TempFolder folder;
    const fs::path fixture = kFixtures / "gdn2/t40-c16.safetensors";
    auto nothing = [](kernels::Buffers&) {};
    // green, with the provisional-bars note as a reason
    results.push_back(check_candidate(fixture, write_candidate(folder.path(), "clean", nothing),
                                      Precision::tf32));
    // dq off by far more than the bar in one chunk: fail with per-chunk figures
    results.push_back(check_candidate(
        fixture, write_candidate(folder.path(), "dq-off", [](auto& b) { b.at("dq")[300] += 0.5f; }),
        Precision::f32));
    // NaN left in o: rel, margin and the chunks are null; the gradients not compared
    results.push_back(check_candidate(
        fixture,
        write_candidate(folder.path(), "o-nan", [](auto& b) { b.at("o")[3] = std::nanf(""); }),
        Precision::f32));
    // a gradient missing from the candidate
    results.push_back(check_candidate(
        fixture, write_candidate(folder.path(), "no-dw", nothing, {"dw"}), Precision::bf16));
    // a skipped gate, as run_gate writes one for a GPU backend where no GPU is (made
    // by hand so that the test means the same on a machine with a GPU)
    GateResult skipped = results.front();
    skipped.name = "gdn2.cuda-chunk.t40-c16.fwd";
    skipped.verdict = gates::Verdict::skipped;
    skipped.reasons = {
        "backend cuda-chunk needs a CUDA GPU and this machine has none: skipped, not passed"};
    skipped.terms.clear();
    skipped.record = {};
    skipped.fixture = nullptr;
    skipped.seconds = 0.0;
    results.push_back(skipped);
    report_ = new nlohmann::json(as_written(make_report(results, "deltaproof gate run test")));
  }
  static void TearDownTestSuite() { delete report_; }
  static const nlohmann::json& report() { return *report_; }
  static const nlohmann::json& gate(const std::string& name) {
    for (const auto& g : report_->at("gates"))
      if (g.at("name") == name) return g;
    throw std::runtime_error("no gate " + name + " in the report");
  }
  static const nlohmann::json& term(const nlohmann::json& gate, const std::string& name) {
    for (const auto& t : gate.at("terms"))
      if (t.at("term") == name) return t;
    throw std::runtime_error("no term " + name + " in " + gate.at("name").get<std::string>());
  }
  // A copy of the report with one edit, which the schema must refuse, with an
  // error whose text holds `names` (the field at fault), not some other one.
  static void expect_refused(const std::string& what, const std::string& names,
                             const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json broken = report();
    edit(broken);
    const auto errors = schema_errors(broken);
    EXPECT_FALSE(errors.empty()) << "the schema accepted a report with " << what
                                 << "; it is too loose there";
    if (errors.empty()) return;
    EXPECT_NE(joined(errors).find(names), std::string::npos)
        << "the schema refused a report with " << what << ", but no error names '" << names
        << "':" << joined(errors);
    // the compiled-in copy that `report show|diff` and the campaign read with
    EXPECT_NE(report_schema_problem(broken), "")
        << "read_report_file would accept a report with " << what;
  }
  // The reader's sentence for a copy of the report with one edit.
  static std::string refusal(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json broken = report();
    edit(broken);
    return report_schema_problem(broken);
  }
  static std::size_t index_of(const std::string& name) {
    const auto& gates = report_->at("gates");
    for (std::size_t i = 0; i < gates.size(); ++i)
      if (gates[i].at("name") == name) return i;
    throw std::runtime_error("no gate " + name + " in the report");
  }
  static std::size_t term_index(std::size_t gate, const std::string& name) {
    const auto& terms = report_->at("gates")[gate].at("terms");
    for (std::size_t i = 0; i < terms.size(); ++i)
      if (terms[i].at("term") == name) return i;
    throw std::runtime_error("no term " + name);
  }

  static nlohmann::json* report_;
};
nlohmann::json* ReportSchema::report_ = nullptr;

// Every report committed from a GPU run (reports/gpu/<commit>/*.json) is a
// report-v1 document: what was verified on a GPU stays readable by the tools.
TEST(ReportSchemaFile, EveryCommittedGpuReportValidates) {
  int reports = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kSourceDir / "reports/gpu")) {
    if (entry.path().extension() != ".json") continue;
    const nlohmann::json document = read_json(entry.path());
    if (!document.is_object() || document.value("schema", "") != "deltaproof-report/1") continue;
    ++reports;
    const auto errors = schema_errors(document);
    EXPECT_TRUE(errors.empty()) << entry.path() << joined(errors);
  }
  EXPECT_GT(reports, 0) << "no committed GPU report found under reports/gpu";
}

TEST(ReportSchemaFile, ParsesAsDraft7) {
  const nlohmann::json document = read_json(kSchemaPath);
  EXPECT_EQ(document.at("$schema"), "http://json-schema.org/draft-07/schema#");
  EXPECT_EQ(document.at("title"), kReportSchema)
      << "the schema's title names the report format it describes";
  EXPECT_EQ(document.at("properties").at("schema").at("const"), kReportSchema);
  EXPECT_NO_THROW(report_schema()) << kSchemaPath << " does not parse as a draft-07 schema";
}

// A report written by one process is read back by another (a campaign's
// child gate runs, `report html`): every gate reads back to what it wrote,
// its noise figures included.
TEST_F(ReportSchema, EveryGateReadsBackAsWritten) {
  int with_noise = 0;
  for (const nlohmann::json& written : report().at("gates")) {
    for (const auto& t : written.at("terms")) with_noise += t.contains("noise");
    const nlohmann::json again = as_written(read_gate_result(written).to_json());
    EXPECT_EQ(again, written) << written.at("name");
  }
  EXPECT_GT(with_noise, 0) << "no term with a noise model: the round trip of noise is untested";
}

TEST(ReadGateResult, RefusesAnUnknownStatusNamingTheGate) {
  nlohmann::json gate = {{"name", "g.cpu-chunk.t40-c16.fwd"},
                         {"verdict", "pass"},
                         {"terms", {{{"term", "o"}, {"status", "not_compared"}}}}};
  try {
    read_gate_result(gate);
    FAIL() << "an unknown status was read";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("g.cpu-chunk.t40-c16.fwd"), std::string::npos) << what;
    EXPECT_NE(what.find("'not_compared'"), std::string::npos) << what;
    EXPECT_NE(what.find("not-compared"), std::string::npos) << "the names it knows: " << what;
  }
  gate["terms"] = nlohmann::json::array();
  gate["verdict"] = "green";
  EXPECT_THROW(read_gate_result(gate), InputError);
}

// A reference that overflowed (a stress fixture under a fault) has an amax of
// inf, which JSON writes as null: it reads back as inf, not as a broken report.
TEST(ReadGateResult, ReadsNullFiguresAsInfinite) {
  const nlohmann::json gate = {
      {"name", "g"},
      {"verdict", "fail"},
      {"terms", {{{"term", "o"}, {"status", "fail"}, {"rel", nullptr}, {"ref_amax", nullptr}}}}};
  const GateResult r = read_gate_result(gate);
  ASSERT_EQ(r.terms.size(), 1u);
  EXPECT_TRUE(std::isinf(r.terms[0].ref_amax));
  EXPECT_TRUE(std::isinf(r.terms[0].rel));
  EXPECT_EQ(r.verdict, Verdict::fail);
}

TEST(NameTables, EveryVerdictAndStatusReadsBackByItsName) {
  for (Verdict v : {Verdict::pass, Verdict::fail, Verdict::skipped})
    EXPECT_EQ(parse_verdict(verdict_name(v)), v);
  for (TermStatus t : {TermStatus::pass, TermStatus::fail, TermStatus::unresolvable,
                       TermStatus::not_compared, TermStatus::missing})
    EXPECT_EQ(parse_term_status(status_name(t)), t);
}

TEST_F(ReportSchema, RealGateResultsValidate) {
  const auto errors = schema_errors(report());
  EXPECT_TRUE(errors.empty()) << "make_report's output breaks " << kSchemaPath << ":"
                              << joined(errors);
  // every gate alone, so a failure names the gate
  for (const auto& g : report().at("gates")) {
    nlohmann::json one = report();
    one["gates"] = nlohmann::json::array({g});
    EXPECT_TRUE(schema_errors(one).empty())
        << g.at("name") << " breaks the schema:" << joined(schema_errors(one));
  }
}

// A gate on a loss-masked fixture (gen --do-mask) says so in its fixture's
// spec, as the fixture's metadata does, and the report still validates.
TEST_F(ReportSchema, ALossMaskedFixturesSpecNamesTheMask) {
  const LoadedFixture f = load_fixture(kFixtures / "gdn2/t40-c16-domask.safetensors", Phase::fwd);
  const auto& spec = f.info.at("spec");
  ASSERT_TRUE(spec.contains("do_mask")) << spec.dump();
  EXPECT_EQ(spec.at("do_mask"), oracle::kDoMask);
  EXPECT_FALSE(load_fixture(kFixtures / "gdn2/t40-c16.safetensors", Phase::fwd)
                   .info.at("spec")
                   .contains("do_mask"));
  nlohmann::json masked = report();
  masked["gates"][0]["fixture"] = f.info;
  EXPECT_TRUE(schema_errors(masked).empty()) << joined(schema_errors(masked));
}

// The report really holds what the schema's nullable and conditional parts
// are there for; otherwise RealGateResultsValidate proves less than it says.
TEST_F(ReportSchema, ReportCoversEveryShapeOfGateAndTerm) {
  std::set<std::string> kinds, verdicts, statuses;
  for (const auto& g : report().at("gates")) {
    kinds.insert(g.at("kind"));
    verdicts.insert(g.at("verdict"));
    for (const auto& t : g.at("terms")) statuses.insert(t.at("status"));
  }
  EXPECT_EQ(kinds,
            (std::set<std::string>{"oracle", "causality", "split-call", "batch-head", "check"}));
  EXPECT_EQ(verdicts, (std::set<std::string>{"pass", "fail", "skipped"}));
  EXPECT_EQ(statuses, (std::set<std::string>{"pass", "fail", "not-compared", "missing"}));
  EXPECT_EQ(report().at("verdict"), "fail");

  const auto& multi_chunk = gate("gdn2.cpu-chunk.t256-c16.bwd");
  EXPECT_EQ(term(multi_chunk, "dq").at("per_chunk_rel").size(), 16u);
  EXPECT_TRUE(term(multi_chunk, "dh0").at("per_chunk_rel").empty()) << "a state has no chunks";
  EXPECT_EQ(term(multi_chunk, "dh0").at("index_names"), "b,h,i,j");
  EXPECT_EQ(multi_chunk.at("determinism").at("repeats"), 2);

  const auto& nan_gate = gate("check.gdn2.o-nan.safetensors");
  EXPECT_TRUE(term(nan_gate, "o").at("rel").is_null()) << "inf is written as null";
  EXPECT_EQ(term(nan_gate, "o").at("non_finite"), 1);
  EXPECT_TRUE(term(nan_gate, "o").at("per_chunk_rel").at(0).is_null());
  EXPECT_EQ(term(nan_gate, "dq").at("status"), "not-compared");
  EXPECT_TRUE(term(nan_gate, "dq").at("rel").is_null()) << "NaN is written as null";

  const auto& dq_off = gate("check.gdn2.dq-off.safetensors");
  EXPECT_EQ(term(dq_off, "dq").at("status"), "fail");
  EXPECT_EQ(dq_off.at("verdict"), "fail");

  // a class's bars come from its noise on the fixture: measured, never provisional
  const auto& clean_bars = gate("check.gdn2.clean.safetensors").at("bars");
  EXPECT_TRUE(clean_bars.at("fwd").at("clean_worst").is_number()) << clean_bars.dump();
  EXPECT_FALSE(clean_bars.at("fwd").at("provisional").get<bool>());
  EXPECT_EQ(clean_bars.at("noise").at("precision"), "tf32");
  EXPECT_TRUE(term(gate("check.gdn2.clean.safetensors"), "dq").contains("noise"));
  EXPECT_TRUE(gate("gdn2.cuda-chunk.t40-c16.fwd").at("fixture").is_null());

  const auto& causality = gate("gdn2.cpu-chunk.t40-c16.causality");
  EXPECT_TRUE(term(causality, "o[t<16] unchanged").at("margin").is_null())
      << "an identical relation has margin inf";
  EXPECT_TRUE(term(causality, "o[t<16] unchanged").at("worst_index").empty());
}

TEST_F(ReportSchema, RefusesBrokenReports) {
  ASSERT_TRUE(schema_errors(report()).empty());
  expect_refused("a gate without a verdict", "Missing required property 'verdict'",
                 [](auto& r) { r["gates"][0].erase("verdict"); });
  expect_refused("a gate verdict 'green'", "[gates][0][verdict]",
                 [](auto& r) { r["gates"][0]["verdict"] = "green"; });
  expect_refused("a term without rel", "Missing required property 'rel'",
                 [](auto& r) { r["gates"][0]["terms"][0].erase("rel"); });
  expect_refused("an unknown top-level field", "'colour'", [](auto& r) { r["colour"] = "blue"; });
  expect_refused("another schema id", "<root>[schema]",
                 [](auto& r) { r["schema"] = "deltaproof-report/2"; });
  expect_refused("an unknown gate field", "'note'", [](auto& r) { r["gates"][0]["note"] = "x"; });
  expect_refused("an unknown term field", "'rel_max'",
                 [](auto& r) { r["gates"][0]["terms"][0]["rel_max"] = 0.0; });
  expect_refused("a term status 'ok'", "[status]",
                 [](auto& r) { r["gates"][0]["terms"][0]["status"] = "ok"; });
  expect_refused("rel as a string", "[rel]",
                 [](auto& r) { r["gates"][0]["terms"][0]["rel"] = "1e-7"; });
  expect_refused("a null bar", "[terms][0][bar]",
                 [](auto& r) { r["gates"][0]["terms"][0]["bar"] = nullptr; });
  expect_refused("a worst index of three numbers", "[worst_index]", [](auto& r) {
    r["gates"][0]["terms"][0]["worst_index"] = {0, 1, 2};
  });
  expect_refused("an unknown gate kind", "[kind]", [](auto& r) { r["gates"][0]["kind"] = "fuzz"; });
  expect_refused("a fixture sha256 that is not 64 hex digits", "[sha256]",
                 [](auto& r) { r["gates"][0]["fixture"]["sha256"] = "abc"; });
  expect_refused("a failed gate with no reason", "[reasons]", [](auto& r) {
    for (auto& g : r["gates"])
      if (g["verdict"] == "fail") g["reasons"] = nlohmann::json::array();
  });
  expect_refused("a red term with no message", "[message]", [](auto& r) {
    for (auto& g : r["gates"])
      for (auto& t : g["terms"])
        if (t["status"] == "fail") t["message"] = "";
  });
  expect_refused("no summary", "Missing required property 'summary'",
                 [](auto& r) { r.erase("summary"); });
  expect_refused("a report verdict 'skipped'", "<root>[verdict]",
                 [](auto& r) { r["verdict"] = "skipped"; });
  expect_refused("gates as an object", "<root>[gates]",
                 [](auto& r) { r["gates"] = nlohmann::json::object(); });
}

}  // namespace
}  // namespace deltaproof::gates

namespace deltaproof::gates {
namespace {

// read_report_file: the schema's refusal as one sentence naming the gate (its
// number and name), the term and the field, and what the field must hold.
TEST_F(ReportSchema, TheReaderNamesTheGateTermAndField) {
  EXPECT_EQ(report_schema_problem(report()), "") << "a report as make_report wrote it";
  const std::size_t bwd = index_of("gdn2.cpu-chunk.t256-c16.bwd");
  const std::size_t dq = term_index(bwd, "dq");
  const std::string gate_text = fmt::format("gate {} ('gdn2.cpu-chunk.t256-c16.bwd')", bwd + 1);
  EXPECT_EQ(refusal([&](auto& r) { r["gates"][bwd].erase("verdict"); }),
            gate_text +
                " has no 'verdict' field, which every deltaproof-report/1 report has; was the "
                "file edited, or written by another tool?");
  EXPECT_EQ(refusal([&](auto& r) { r["gates"][bwd]["terms"][dq].erase("rel"); }),
            gate_text +
                ", term 'dq' has no 'rel' field, which every deltaproof-report/1 report has; was "
                "the file edited, or written by another tool?");
  EXPECT_EQ(refusal([&](auto& r) { r["gates"][bwd]["terms"][dq]["rel"] = "small"; }),
            gate_text + ", term 'dq': 'rel' is 'small', but must be a number or null.");
  EXPECT_EQ(refusal([&](auto& r) { r["gates"][bwd]["verdict"] = "green"; }),
            gate_text + ": 'verdict' is 'green', but must be one of: pass, fail, skipped.");
  EXPECT_EQ(refusal([&](auto& r) { r["host"]["cpus"] = "4"; }),
            "the report: 'host': 'cpus' is '4', but must be an integer.");
  EXPECT_EQ(refusal([&](auto& r) { r["gates"][bwd]["terms"][dq]["bar"] = nullptr; }),
            gate_text + ", term 'dq': 'bar' is null, but must be a number.");
  EXPECT_EQ(refusal([&](auto& r) { r["gates"][bwd]["fixture"] = "t256"; }),
            gate_text + ": 'fixture' is 't256', but must be null or an object.");
  // a right type that breaks another constraint: valijson's own words
  const std::string commit = refusal([](auto& r) { r["git_commit"] = "abc"; });
  EXPECT_EQ(commit.rfind("the report: 'git_commit' is 'abc': ", 0), 0u) << commit;
  const std::string reasons = refusal([&](auto& r) {
    r["gates"][bwd]["verdict"] = "fail";
    r["gates"][bwd]["reasons"] = nlohmann::json::array();
  });
  EXPECT_EQ(reasons.rfind(gate_text + ": 'reasons' is an array: ", 0), 0u) << reasons;
}

TEST_F(ReportSchema, AReportFileReadsBackTyped) {
  testing::TempFolder folder;
  const fs::path path = folder.path() / "r.json";
  std::ofstream(path) << report().dump(2);
  const ReportFile file = read_report_file(path);
  EXPECT_EQ(file.schema, kReportSchema);
  EXPECT_EQ(file.command, "deltaproof gate run test");
  EXPECT_EQ(file.verdict, Verdict::fail) << "the red `gate check` candidates";
  ASSERT_EQ(file.gates.size(), report().at("gates").size());
  for (std::size_t i = 0; i < file.gates.size(); ++i) {
    EXPECT_EQ(file.gates[i].name, report().at("gates")[i].at("name"));
    EXPECT_EQ(file.gates[i].terms.size(), report().at("gates")[i].at("terms").size());
  }
  nlohmann::json broken = report();
  broken["gates"][0].erase("terms");
  std::ofstream(path) << broken.dump();
  try {
    read_report_file(path);
    ADD_FAILURE() << "a gate without terms was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": gate 1 ('", 0), 0u) << e.what();
  }
}

// diff_reports: gates by name, terms by term; a 10% growth is worse, a term
// or gate that passed in A and does not in B turned red.
TEST_F(ReportSchema, DiffMatchesGatesAndTermsByName) {
  testing::TempFolder folder;
  auto file_of = [&](const std::string& name, const nlohmann::json& document) {
    const fs::path path = folder.path() / name;
    std::ofstream(path) << document.dump();
    return read_report_file(path);
  };
  const ReportFile a = file_of("a.json", report());
  const ReportDiff same = diff_reports(a, a);
  EXPECT_EQ(same.gates.size(), a.gates.size());
  EXPECT_EQ(same.worse + same.better + same.verdicts_changed, 0);
  EXPECT_TRUE(same.turned_red.empty());

  const std::size_t bwd = index_of("gdn2.cpu-chunk.t256-c16.bwd");
  const std::size_t dq = term_index(bwd, "dq"), dk = term_index(bwd, "dk");
  nlohmann::json edited = report();
  auto& gate = edited["gates"][bwd];
  gate["terms"][dk]["rel"] = gate["terms"][dk]["rel"].get<double>() * 1.5;  // worse, still green
  gate["terms"][dq]["status"] = "fail";
  gate["terms"][dq]["message"] = "dq: rel above the bar";
  gate["verdict"] = "fail";
  gate["reasons"] = {"dq: rel above the bar"};
  edited["verdict"] = "fail";
  edited["gates"].erase(index_of("kda.cpu-recurrent.t40-c16.bwd"));
  const ReportDiff d = diff_reports(a, file_of("b.json", edited));
  EXPECT_EQ(d.worse, 2);
  EXPECT_EQ(d.better, 0);
  EXPECT_EQ(d.verdicts_changed, 1);
  ASSERT_EQ(d.only_a.size(), 1u);
  EXPECT_EQ(d.only_a[0]->name, "kda.cpu-recurrent.t40-c16.bwd");
  EXPECT_EQ(d.turned_red, (std::vector<std::string>{"gate gdn2.cpu-chunk.t256-c16.bwd",
                                                    "gdn2.cpu-chunk.t256-c16.bwd term dq"}));

  nlohmann::json twice = report();
  twice["gates"].push_back(twice["gates"][0]);
  const ReportFile doubled = file_of("twice.json", twice);
  EXPECT_THROW(diff_reports(a, doubled), InputError);
}

}  // namespace
}  // namespace deltaproof::gates
