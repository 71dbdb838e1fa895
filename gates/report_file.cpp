// gates/report_file.cpp — see report_file.hpp.

// GCC 12 reports a false -Wrestrict in std::string::replace once valijson's
// json_pointer code is inlined here (GCC bug 105651); it is reported against
// libstdc++'s char_traits.h, so it is switched off before any include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "gates/report_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "core/error.hpp"
#include "gates/report.hpp"

namespace deltaproof::gates {

// reports/schema/report-v1.schema.json, as gates/CMakeLists.txt compiled it in.
extern const char* const kReportSchemaText;

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const json& schema_document() {
  static const json document = json::parse(kReportSchemaText);
  return document;
}

// valijson's Schema cannot be copied or moved: parsed once, kept here.
const valijson::Schema& report_schema() {
  static const std::unique_ptr<valijson::Schema> schema = [] {
    auto parsed = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(schema_document());
    parser.populateSchema(adapter, *parsed);
    return parsed;
  }();
  return *schema;
}

// "an array", "a string", "null": a JSON value's type, for a sentence.
std::string type_phrase(const json& value) {
  const std::string name = value.type_name();
  if (value.is_null()) return name;
  return (value.is_object() || value.is_array() ? "an " : "a ") + name;
}

std::string type_name_phrase(const std::string& type) {
  if (type == "null") return type;
  return (type == "object" || type == "array" || type == "integer" ? "an " : "a ") + type;
}

// A schema node with its "$ref" ("#/definitions/term") followed; null for a
// reference outside the definitions.
const json* resolve_ref(const json* node) {
  const std::string prefix = "#/definitions/";
  while (node && node->is_object() && node->contains("$ref")) {
    const std::string ref = node->at("$ref");
    if (ref.rfind(prefix, 0) != 0) return nullptr;
    node = &schema_document().at("definitions").at(ref.substr(prefix.size()));
  }
  return node;
}

// The schema node that describes the value at `steps` (object keys and array
// indices from the root), following $ref, properties, additionalProperties
// and items; null where the schema says nothing about it.
const json* schema_node(const std::vector<std::string>& steps) {
  const json& root = schema_document();
  const json* node = &root;
  for (const auto& step : steps) {
    node = resolve_ref(node);
    if (!node || !node->is_object()) return nullptr;
    if (const auto items = node->find("items");
        items != node->end() && !step.empty() &&
        step.find_first_not_of("0123456789") == std::string::npos) {
      node = &*items;
    } else if (const auto props = node->find("properties");
               props != node->end() && props->contains(step)) {
      node = &props->at(step);
    } else if (const auto extra = node->find("additionalProperties");
               extra != node->end() && extra->is_object()) {
      node = &*extra;
    } else {
      return nullptr;
    }
  }
  return resolve_ref(node);
}

// What the schema allows at a node, for "but must be ...": its types, its
// enum or const, or its oneOf's alternatives; "" when it names none.
std::string expectation(const json* node) {
  if (!node || !node->is_object()) return "";
  if (const auto e = node->find("enum"); e != node->end()) {
    std::vector<std::string> names;
    for (const auto& v : *e) names.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    return fmt::format("one of: {}", fmt::join(names, ", "));
  }
  if (const auto c = node->find("const"); c != node->end()) return c->dump();
  if (const auto type = node->find("type"); type != node->end()) {
    std::vector<std::string> types;
    for (const auto& t : type->is_array() ? *type : json::array({*type}))
      types.push_back(type_name_phrase(t.get<std::string>()));
    return fmt::format("{}", fmt::join(types, " or "));
  }
  if (const auto one_of = node->find("oneOf"); one_of != node->end()) {
    std::vector<std::string> alternatives;
    for (const auto& alternative : *one_of)
      if (std::string text = expectation(resolve_ref(&alternative)); !text.empty())
        alternatives.push_back(text);
    return fmt::format("{}", fmt::join(alternatives, " or "));
  }
  return "";
}

// Whether the node's "type" admits the value (so the error is of another
// constraint: a pattern, a bound, a length).
bool type_allowed(const json* node, const json& value) {
  if (!node || !node->is_object() || !node->contains("type")) return false;
  const json& type = node->at("type");
  for (const auto& t : type.is_array() ? type : json::array({type})) {
    const std::string name = t;
    if (name == value.type_name() || (name == "integer" && value.is_number_integer()) ||
        (name == "number" && value.is_number()))
      return true;
  }
  return false;
}

struct Located {
  std::string where = "the report";  // "gate 3 ('...'), term 'dq'"
  std::string field;                 // the last object key, if the last step was one
  const json* value = nullptr;       // the value the error is about
};

// valijson's context ("<root>", "[gates]", "[2]", "[terms]", "[0]") walked
// through the report: gates and terms named as a reader knows them.
Located locate(const json& report, const std::vector<std::string>& context,
               std::vector<std::string>& steps) {
  Located at;
  const json* node = &report;
  std::string in_gate;
  for (std::size_t i = 1; i < context.size(); ++i) {  // [0] is "<root>"
    if (context[i].size() < 2) break;                 // not "[key]": the walk stops where it is
    const std::string step = context[i].substr(1, context[i].size() - 2);
    steps.push_back(step);
    if (node->is_array()) {
      const std::size_t index = std::stoul(step);
      node = &node->at(index);
      const std::string parent = steps.size() >= 2 ? steps[steps.size() - 2] : "";
      auto name_of = [&](const char* key) -> std::string {
        const auto it = node->is_object() ? node->find(key) : node->end();
        return it != node->end() && it->is_string() ? it->get<std::string>() : "";
      };
      if (parent == "gates" && steps.size() == 2) {
        const std::string name = name_of("name");
        at.where = name.empty() ? fmt::format("gate {}", index + 1)
                                : fmt::format("gate {} ('{}')", index + 1, name);
        in_gate = at.where;
      } else if (parent == "terms" && !in_gate.empty()) {
        const std::string term = name_of("term");
        at.where = term.empty() ? fmt::format("{}, term {}", in_gate, index + 1)
                                : fmt::format("{}, term '{}'", in_gate, term);
      } else {
        at.where = fmt::format("{}: '{}' item {}", at.where, parent, index + 1);
      }
      at.field.clear();
    } else {
      node = &node->at(step);
      if (!at.field.empty()) at.where = fmt::format("{}: '{}'", at.where, at.field);
      at.field = step;
    }
  }
  if (!at.field.empty()) at.value = node;
  return at;
}

// One sentence for valijson's most specific error (the deepest context).
std::string sentence(const json& report, const valijson::ValidationResults::Error& error) {
  std::vector<std::string> steps;
  const Located at = locate(report, error.context, steps);
  const std::string& text = error.description;
  const std::string missing = "Missing required property '";
  if (text.rfind(missing, 0) == 0) {
    const std::string key = text.substr(missing.size(), text.size() - missing.size() - 2);
    const std::string where =
        at.field.empty() ? at.where : fmt::format("{}: '{}'", at.where, at.field);
    return fmt::format(
        "{} has no '{}' field, which every {} report has; was the file edited, or written by "
        "another tool?",
        where, key, kReportSchema);
  }
  if (at.field.empty() || !at.value)
    return fmt::format("{}: {} (reports/schema/report-v1.schema.json)", at.where, text);
  const json* node = schema_node(steps);
  const std::string value = at.value->is_string()
                                ? fmt::format("'{}'", at.value->get<std::string>())
                                : type_phrase(*at.value);
  const std::string must = expectation(node);
  if (must.empty() || type_allowed(node, *at.value))
    return fmt::format("{}: '{}' is {}: {} (reports/schema/report-v1.schema.json)", at.where,
                       at.field, value, text);
  return fmt::format("{}: '{}' is {}, but must be {}.", at.where, at.field, value, must);
}

void check_schema_field(const json& report, const std::string& not_ours) {
  if (!report.is_object())
    throw InputError(
        fmt::format("{}: the JSON is {}, not an object.", not_ours, type_phrase(report)));
  const auto schema = report.find("schema");
  if (schema == report.end())
    throw InputError(fmt::format("{}: it has no 'schema' field.", not_ours));
  if (!schema->is_string() || *schema != kReportSchema)
    throw InputError(fmt::format("{}: its schema is {}; this deltaproof reads only {}.", not_ours,
                                 schema->dump(), kReportSchema));
}

std::map<std::string, const GateResult*> gates_by_name(const ReportFile& report) {
  std::map<std::string, const GateResult*> out;
  for (const auto& gate : report.gates)
    if (!out.emplace(gate.name, &gate).second)
      throw InputError(fmt::format("{}: gate '{}' appears twice; diff matches them by name.",
                                   report.path.string(), gate.name));
  return out;
}

std::map<std::string, const TermComparison*> terms_by_name(const ReportFile& report,
                                                           const GateResult& gate) {
  std::map<std::string, const TermComparison*> out;
  for (const auto& term : gate.terms)
    if (!out.emplace(term.term, &term).second)
      throw InputError(
          fmt::format("{}: in gate '{}' term '{}' appears twice; diff matches them by name.",
                      report.path.string(), gate.name, term.term));
  return out;
}

TermChange compare(const TermComparison& a, const TermComparison& b) {
  const bool was_green = a.status == TermStatus::pass;
  const bool is_green = b.status == TermStatus::pass;
  if (was_green && !is_green) return {&a, &b, Change::worse, true};
  if (!was_green && is_green) return {&a, &b, Change::better, false};
  if (rel_measured(a) && rel_measured(b)) {
    if (b.rel > a.rel * kWorseRatio) return {&a, &b, Change::worse, false};  // also 0 -> anything
    if (a.rel > b.rel * kWorseRatio) return {&a, &b, Change::better, false};
    return {&a, &b, Change::same, false};
  }
  if (rel_measured(a) && rel_infinite(b)) return {&a, &b, Change::worse, false};
  if (rel_infinite(a) && rel_measured(b)) return {&a, &b, Change::better, false};
  return {&a, &b, Change::same, false};
}

}  // namespace

std::string report_schema_problem(const json& report) {
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(report);
  if (validator.validate(report_schema(), adapter, &results)) return "";
  valijson::ValidationResults::Error error, deepest;
  bool any = false;
  while (results.popError(error))
    if (!any || error.context.size() > deepest.context.size()) {
      deepest = error;
      any = true;
    }
  if (!any) return "the report does not validate against reports/schema/report-v1.schema.json";
  return sentence(report, deepest);
}

ReportFile read_report_file(const fs::path& path) {
  const std::string name = path.string();
  std::error_code error;
  if (!fs::exists(path, error))
    throw InputError(fmt::format(
        "{}: no such file; pass a report written by `deltaproof gate run --report FILE`.", name));
  if (fs::is_directory(path, error))
    throw InputError(fmt::format("{}: is a folder, not a report file.", name));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read: {}.", name, std::strerror(errno)));
  json report;
  try {
    report = json::parse(in);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, ...": keep what follows the tag
    std::string what = e.what();
    if (const auto tag_end = what.find("] "); tag_end != std::string::npos)
      what = what.substr(tag_end + 2);
    throw InputError(fmt::format(
        "{}: not JSON ({}); a report is the JSON file `deltaproof gate run --report FILE` "
        "writes.",
        name, what));
  }
  check_schema_field(report, fmt::format("{}: not a {} report", name, kReportSchema));
  if (const std::string problem = report_schema_problem(report); !problem.empty())
    throw InputError(fmt::format("{}: {}", name, problem));

  ReportFile file;
  file.path = path;
  file.schema = report.at("schema");
  file.tool = report.at("tool");
  file.git_commit = report.at("git_commit");
  file.created = report.at("created");
  file.device = report.at("device");
  file.command = report.at("command");
  const json& host = report.at("host");
  file.host_name = host.at("name");
  file.host_system = host.at("system");
  file.host_cpus = host.at("cpus");
  file.verdict = parse_verdict(report.at("verdict").get<std::string>());
  for (const auto& gate : report.at("gates")) file.gates.push_back(read_gate_result(gate));
  return file;
}

bool rel_infinite(const TermComparison& term) {
  return !std::isfinite(term.rel) && term.non_finite > 0;
}
bool rel_measured(const TermComparison& term) { return std::isfinite(term.rel); }

bool is_bitwise(const GateResult& gate, const TermComparison& term) {
  return gate.kind != "oracle" && gate.kind != "check" && !(term.bar > 0);
}

GateCounts count_gates(const ReportFile& report) {
  GateCounts counts;
  for (const auto& gate : report.gates) {
    counts.passed += gate.verdict == Verdict::pass;
    counts.failed += gate.verdict == Verdict::fail;
    counts.skipped += gate.verdict == Verdict::skipped;
    counts.seconds += gate.seconds;
  }
  return counts;
}

ReportDiff diff_reports(const ReportFile& a, const ReportFile& b) {
  ReportDiff diff;
  const auto gates_a = gates_by_name(a);
  const auto gates_b = gates_by_name(b);
  for (const auto& gate_a : a.gates) {
    const auto found = gates_b.find(gate_a.name);
    if (found == gates_b.end()) {
      diff.only_a.push_back(&gate_a);
      continue;
    }
    const GateResult& gate_b = *found->second;
    GateChange change{&gate_a, &gate_b, {}};
    if (gate_a.verdict != gate_b.verdict) {
      ++diff.verdicts_changed;
      if (gate_a.verdict == Verdict::pass && gate_b.verdict == Verdict::fail)
        diff.turned_red.push_back("gate " + gate_a.name);
    }
    const auto terms_b = terms_by_name(b, gate_b);
    const auto terms_a = terms_by_name(a, gate_a);
    for (const auto& term_a : gate_a.terms) {
      const auto other = terms_b.find(term_a.term);
      if (other == terms_b.end()) {
        change.terms.push_back({&term_a, nullptr, Change::same, false});
        continue;
      }
      const TermChange t = compare(term_a, *other->second);
      diff.worse += t.change == Change::worse;
      diff.better += t.change == Change::better;
      diff.same += t.change == Change::same;
      if (t.turned_red)
        diff.turned_red.push_back(fmt::format("{} term {}", gate_a.name, term_a.term));
      change.terms.push_back(t);
    }
    for (const auto& term_b : gate_b.terms)
      if (!terms_a.count(term_b.term))
        change.terms.push_back({nullptr, &term_b, Change::same, false});
    diff.gates.push_back(std::move(change));
  }
  for (const auto& gate_b : b.gates)
    if (!gates_a.count(gate_b.name)) diff.only_b.push_back(&gate_b);
  return diff;
}

}  // namespace deltaproof::gates
