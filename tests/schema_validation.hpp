// tests/schema_validation.hpp — JSON Schema checks for the tests (valijson,
// draft-07): read a JSON file, load a committed schema, list the validator's
// errors. Shared by tests/gates/report_schema_test.cpp (deltaproof-report/1)
// and tests/falsify/stryker_schema_test.cpp (Stryker's schemaVersion 2).
#pragma once

// GCC 12's false -Wrestrict in valijson's inlined code (bug 105651) is
// reported against libstdc++'s char_traits.h: an including test switches it
// off before its first include.

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace deltaproof::testing {

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + " cannot be read");
  return nlohmann::json::parse(in);
}

// A committed draft-07 schema (valijson's Schema cannot be copied or moved:
// callers keep the pointer, e.g. in a function-local static).
inline std::unique_ptr<valijson::Schema> load_schema(const std::filesystem::path& path) {
  auto schema = std::make_unique<valijson::Schema>();
  const nlohmann::json document = read_json(path);
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter adapter(document);
  parser.populateSchema(adapter, *schema);
  return schema;
}

// Every error the validator reports, innermost first, as "context:
// description"; empty when `document` validates.
inline std::vector<std::string> schema_errors(const valijson::Schema& schema,
                                              const nlohmann::json& document) {
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(document);
  std::vector<std::string> errors;
  if (validator.validate(schema, adapter, &results)) return errors;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string context;
    for (const auto& part : error.context) context += part;
    errors.push_back(context + ": " + error.description);
  }
  if (errors.empty()) errors.push_back("invalid, with no error given");
  return errors;
}

}  // namespace deltaproof::testing
