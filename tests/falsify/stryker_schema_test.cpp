// tests/falsify/stryker_schema_test.cpp — the Stryker mutation testing report
// schema, reports/schema/mutation-testing-report-v2.schema.json (a committed
// transcription of stryker-mutator/mutation-testing-elements,
// packages/report-schema/src/mutation-testing-report-schema.json), with
// valijson: a minimal schemaVersion 2 report validates, one with deltaproof's
// own fields added validates, and reports broken in one field each are
// refused, with a first error that names the field, so the schema is known to
// be able to say no where mutation-testing-elements needs a field.
// Run: ctest --test-dir build -R StrykerSchema

// GCC 12 reports a false -Wrestrict in std::string::replace once valijson's
// json_pointer code is inlined here (GCC bug 105651); it is reported against
// libstdc++'s char_traits.h, so it is switched off before any include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "falsify/report.hpp"
#include "tests/schema_validation.hpp"

namespace deltaproof::falsify {
namespace {
namespace fs = std::filesystem;

const fs::path kSourceDir = DELTAPROOF_SOURCE_DIR;
const fs::path kSchemaPath = kSourceDir / "reports/schema/mutation-testing-report-v2.schema.json";

using testing::read_json;

// The committed schema, parsed once.
const valijson::Schema& stryker_schema() {
  static const std::unique_ptr<valijson::Schema> schema = testing::load_schema(kSchemaPath);
  return *schema;
}

// The validator's first error (the innermost one, which names the field at
// fault); empty when the report validates.
std::string first_schema_error(const nlohmann::json& report) {
  const auto errors = testing::schema_errors(stryker_schema(), report);
  return errors.empty() ? "" : errors.front();
}

const std::string kFile = "kernels/cpu_chunk.cpp";

// The least a report needs for mutation-testing-elements: one file, one
// mutant killed (and by which test), one that survived.
nlohmann::json minimal_report() {
  return nlohmann::json::parse(R"({
    "schemaVersion": "2",
    "thresholds": {"high": 80, "low": 60},
    "files": {
      "kernels/cpu_chunk.cpp": {
        "language": "cpp",
        "source": "float decay(float g) {\n  return std::exp(g);\n}\n",
        "mutants": [
          {
            "id": "1",
            "mutatorName": "double-exp",
            "location": {"start": {"line": 2, "column": 10}, "end": {"line": 2, "column": 21}},
            "status": "Killed",
            "killedBy": ["gdn2.fwd.oracle"]
          },
          {
            "id": "2",
            "mutatorName": "cut-carry",
            "location": {"start": {"line": 2, "column": 3}, "end": {"line": 2, "column": 22}},
            "status": "Survived"
          }
        ]
      }
    }
  })");
}

nlohmann::json& first_mutant(nlohmann::json& report) {
  return report.at("files").at(kFile).at("mutants").at(0);
}

TEST(StrykerSchemaFile, ParsesAsDraft7AndNamesItsUpstream) {
  const nlohmann::json document = read_json(kSchemaPath);
  EXPECT_EQ(document.at("$schema"), "http://json-schema.org/draft-07/schema#");
  EXPECT_NE(
      document.at("$comment").get<std::string>().find("stryker-mutator/mutation-testing-elements"),
      std::string::npos)
      << kSchemaPath << "'s $comment does not name the upstream it was transcribed from";
  EXPECT_NO_THROW(stryker_schema()) << kSchemaPath << " does not parse as a draft-07 schema";
}

TEST(StrykerSchema, MinimalReportValidates) {
  EXPECT_EQ(first_schema_error(minimal_report()), "")
      << "a minimal schemaVersion 2 report (one file, a Killed and a Survived mutant) is refused";
}

// Upstream allows additional properties everywhere; deltaproof's reports rely
// on that for their own fields.
TEST(StrykerSchema, DeltaproofFieldsValidate) {
  nlohmann::json report = minimal_report();
  report["deltaproof"] = {{"tool", "deltaproof 0.1.0"}, {"fault_catalog", "falsify/"}};
  report.at("files").at(kFile)["sourceSha256"] = std::string(64, '0');
  nlohmann::json& mutant = first_mutant(report);
  mutant["gate"] = "gdn2.fwd.oracle";
  mutant["term"] = "o";
  mutant["margin"] = 12.5;
  mutant["expected"] = "Killed";
  EXPECT_EQ(first_schema_error(report), "")
      << "a report with deltaproof's added fields is refused; the schema must allow them";
}

// A report broken in one field; the schema must refuse it with a first error
// that holds `error_holds` (valijson's wording: "<root>[path]: Missing required
// property 'name'." or the path of the value at fault).
struct Breakage {
  std::string name;
  std::string error_holds;
  std::function<void(nlohmann::json&)> edit;
};

// Named in gtest's output by its name, not a dump of its bytes.
void PrintTo(const Breakage& breakage, std::ostream* out) { *out << breakage.name; }

class StrykerSchemaRefuses : public ::testing::TestWithParam<Breakage> {};

TEST_P(StrykerSchemaRefuses, OneFieldBroken) {
  const Breakage& breakage = GetParam();
  nlohmann::json report = minimal_report();
  breakage.edit(report);
  const std::string error = first_schema_error(report);
  ASSERT_NE(error, "") << "the schema accepted a report with " << breakage.name
                       << "; it is too loose there";
  EXPECT_NE(error.find(breakage.error_holds), std::string::npos)
      << "the schema refused a report with " << breakage.name
      << ", but its first error does not hold " << breakage.error_holds << ": " << error;
}

const Breakage kBreakages[] = {
    {"SchemaVersionMissing", "'schemaVersion'", [](auto& r) { r.erase("schemaVersion"); }},
    {"ThresholdsMissing", "'thresholds'", [](auto& r) { r.erase("thresholds"); }},
    {"ThresholdsHighMissing", "[thresholds]: Missing required property 'high'",
     [](auto& r) { r.at("thresholds").erase("high"); }},
    {"FilesMissing", "'files'", [](auto& r) { r.erase("files"); }},
    {"FileWithoutSource", "'source'", [](auto& r) { r.at("files").at(kFile).erase("source"); }},
    {"FileWithoutMutants", "'mutants'", [](auto& r) { r.at("files").at(kFile).erase("mutants"); }},
    {"MutantWithoutId", "'id'", [](auto& r) { first_mutant(r).erase("id"); }},
    {"MutantWithoutMutatorName", "'mutatorName'",
     [](auto& r) { first_mutant(r).erase("mutatorName"); }},
    {"MutantWithoutLocation", "'location'", [](auto& r) { first_mutant(r).erase("location"); }},
    {"MutantWithoutStatus", "'status'", [](auto& r) { first_mutant(r).erase("status"); }},
    {"StatusNotInEnum", "[status]: Failed to match",
     [](auto& r) { first_mutant(r)["status"] = "Dead"; }},
    {"StartLineZero", "[start][line]",
     [](auto& r) { first_mutant(r).at("location").at("start")["line"] = 0; }},
    {"StartLineMissing", "[start]: Missing required property 'line'",
     [](auto& r) { first_mutant(r).at("location").at("start").erase("line"); }},
    {"KilledByNotAnArray", "[killedBy]",
     [](auto& r) { first_mutant(r)["killedBy"] = "gdn2.fwd.oracle"; }},
};

INSTANTIATE_TEST_SUITE_P(Breakages, StrykerSchemaRefuses, ::testing::ValuesIn(kBreakages),
                         [](const ::testing::TestParamInfo<Breakage>& info) {
                           return info.param.name;
                         });

// What deltaproof writes validates: a campaign report with every status (the
// real catalog, outcomes made by hand) and every falsify report committed
// under reports/.
TEST(StrykerSchema, CampaignReportsValidate) {
  const Catalog catalog = load_catalog(kSourceDir / "falsify/catalog.json");
  CampaignResult result;
  result.source_top = kSourceDir;
  const FaultStatus statuses[] = {
      FaultStatus::killed,       FaultStatus::survived,      FaultStatus::killed_wrong_term,
      FaultStatus::green_broken, FaultStatus::compile_error, FaultStatus::runtime_error,
      FaultStatus::timeout,      FaultStatus::ignored};
  int i = 0;
  for (const auto& fault : catalog.faults) {
    FaultOutcome o(fault.id, fault.cls, fault.injected_at.front().backend);
    o.status = statuses[i++ % 8];
    o.reason = "made by hand";
    o.killed_by = {"gdn2.cpu-chunk.t32-c16.bwd"};
    o.margin = i % 3 == 0 ? std::numeric_limits<double>::infinity() : 12.5;
    result.outcomes.push_back(o);
  }
  CampaignOptions options;
  options.backends = {"cpu-chunk"};
  const nlohmann::json report = campaign_report(result, catalog, options, "test");
  EXPECT_EQ(first_schema_error(report), "");
  EXPECT_TRUE(is_falsify_report(report));
  int mutants = 0;
  for (const auto& [file, entry] : report.at("files").items()) {
    mutants += static_cast<int>(entry.at("mutants").size());
    EXPECT_FALSE(entry.at("source").get<std::string>().empty()) << file;
  }
  EXPECT_EQ(mutants, static_cast<int>(catalog.faults.size()));
}

TEST(StrykerSchema, CommittedFalsifyReportsValidate) {
  int checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kSourceDir / "reports")) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.rfind("falsify", 0) != 0 ||
        entry.path().extension() != ".json")
      continue;
    const nlohmann::json report = read_json(entry.path());
    if (!is_falsify_report(report)) continue;
    ++checked;
    EXPECT_EQ(first_schema_error(report), "") << entry.path();
  }
  std::cout << checked << " committed falsify reports validated\n";
}

}  // namespace
}  // namespace deltaproof::falsify
