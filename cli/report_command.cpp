// cli/report_command.cpp — `deltaproof report`. See report_command.hpp.
#include "cli/report_command.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/gate_command.hpp"
#include "core/error.hpp"
#include "falsify/report.hpp"
#include "gates/report.hpp"

namespace deltaproof::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// rel B / rel A above this (a 10% growth) is "worse"; rel A / rel B above it, "better".
constexpr double kWorseRatio = 1.1;

// ---- reading a report: every field show and diff print, checked --------------

enum class Holds { string, number, number_or_null, integer, array, object };

bool holds(const json& value, Holds kind) {
  switch (kind) {
    case Holds::string:
      return value.is_string();
    case Holds::number:
      return value.is_number();
    case Holds::number_or_null:
      return value.is_number() || value.is_null();
    case Holds::integer:
      return value.is_number_integer();
    case Holds::array:
      return value.is_array();
    case Holds::object:
      return value.is_object();
  }
  return false;
}

std::string_view holds_name(Holds kind) {
  switch (kind) {
    case Holds::string:
      return "a string";
    case Holds::number:
      return "a number";
    case Holds::number_or_null:
      return "a number or null";
    case Holds::integer:
      return "an integer";
    case Holds::array:
      return "an array";
    case Holds::object:
      return "an object";
  }
  return "?";
}

// "an array", "a string", "null": a JSON value's type, for a sentence.
std::string type_phrase(const json& value) {
  const std::string name = value.type_name();
  if (value.is_null()) return name;
  return (value.is_object() || value.is_array() ? "an " : "a ") + name;
}

// `object[key]`, which must exist and hold `kind`; `where` names the object in
// the error ("gate 3 ('gdn2.cpu-chunk.t40-c16.bwd')").
const json& field(const json& object, const char* key, Holds kind, const std::string& path,
                  const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end())
    throw InputError(fmt::format(
        "{}: {} has no '{}' field, which every {} report has; was the file edited, or written "
        "by another tool?",
        path, where, key, gates::kReportSchema));
  if (!holds(*it, kind))
    throw InputError(fmt::format("{}: {}: '{}' is {}, but must be {}.", path, where, key,
                                 type_phrase(*it), holds_name(kind)));
  return *it;
}

// A string field that must be one of `allowed`.
void one_of(const json& object, const char* key, const std::vector<std::string>& allowed,
            const std::string& path, const std::string& where) {
  const std::string value = field(object, key, Holds::string, path, where);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
    throw InputError(fmt::format("{}: {}: '{}' is '{}', but must be one of: {}.", path, where, key,
                                 value, fmt::join(allowed, ", ")));
}

void check_term(const json& term, const std::string& path, const std::string& gate_where,
                std::size_t index) {
  std::string where = fmt::format("{}, term {}", gate_where, index + 1);
  if (!term.is_object())
    throw InputError(fmt::format("{}: {} is {}, not an object.", path, where, type_phrase(term)));
  if (auto name = term.find("term"); name != term.end() && name->is_string())
    where = fmt::format("{}, term '{}'", gate_where, name->get<std::string>());
  field(term, "term", Holds::string, path, where);
  one_of(term, "status", {"pass", "fail", "unresolvable", "not-compared", "missing"}, path, where);
  for (const char* key : {"rel", "margin"}) field(term, key, Holds::number_or_null, path, where);
  field(term, "bar", Holds::number, path, where);
  field(term, "non_finite", Holds::integer, path, where);
  field(term, "index_names", Holds::string, path, where);
  field(term, "message", Holds::string, path, where);
  for (const char* key : {"worst_index", "per_chunk_rel"})
    field(term, key, Holds::array, path, where);
  for (const auto& i : term.at("worst_index"))
    if (!i.is_number_integer())
      throw InputError(fmt::format("{}: {}: 'worst_index' holds {}, not only integers.", path,
                                   where, type_phrase(i)));
  for (const auto& c : term.at("per_chunk_rel"))
    if (!holds(c, Holds::number_or_null))
      throw InputError(fmt::format("{}: {}: 'per_chunk_rel' holds {}, not only numbers or null.",
                                   path, where, type_phrase(c)));
}

void check_gate(const json& gate, const std::string& path, std::size_t index) {
  std::string where = fmt::format("gate {}", index + 1);
  if (!gate.is_object())
    throw InputError(fmt::format("{}: {} is {}, not an object.", path, where, type_phrase(gate)));
  if (auto name = gate.find("name"); name != gate.end() && name->is_string())
    where = fmt::format("gate {} ('{}')", index + 1, name->get<std::string>());
  for (const char* key : {"name", "kind", "op", "backend", "phase", "precision"})
    field(gate, key, Holds::string, path, where);
  one_of(gate, "verdict", {"pass", "fail", "skipped"}, path, where);
  field(gate, "seconds", Holds::number, path, where);
  for (const auto& reason : field(gate, "reasons", Holds::array, path, where))
    if (!reason.is_string())
      throw InputError(fmt::format("{}: {}: 'reasons' holds {}, not only sentences.", path, where,
                                   type_phrase(reason)));
  const json& terms = field(gate, "terms", Holds::array, path, where);
  for (std::size_t i = 0; i < terms.size(); ++i) check_term(terms[i], path, where, i);
}

// Reads and checks a report; InputError names the file and the problem.
json load_report(const std::string& path) {
  std::error_code error;
  if (!fs::exists(path, error))
    throw InputError(fmt::format(
        "{}: no such file; pass a report written by `deltaproof gate run --report FILE`.", path));
  if (fs::is_directory(path, error))
    throw InputError(fmt::format("{}: is a folder, not a report file.", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read: {}.", path, std::strerror(errno)));
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
        path, what));
  }
  const std::string not_ours = fmt::format("{}: not a {} report", path, gates::kReportSchema);
  if (!report.is_object())
    throw InputError(
        fmt::format("{}: the JSON is {}, not an object.", not_ours, type_phrase(report)));
  const auto schema = report.find("schema");
  if (schema == report.end())
    throw InputError(fmt::format("{}: it has no 'schema' field.", not_ours));
  if (!schema->is_string() || *schema != gates::kReportSchema)
    throw InputError(fmt::format("{}: its schema is {}; this deltaproof reads only {}.", not_ours,
                                 schema->dump(), gates::kReportSchema));
  const std::string where = "the report";
  for (const char* key : {"tool", "git_commit", "created", "device", "command"})
    field(report, key, Holds::string, path, where);
  const json& host = field(report, "host", Holds::object, path, where);
  for (const char* key : {"name", "system"}) field(host, key, Holds::string, path, "its host");
  field(host, "cpus", Holds::integer, path, "its host");
  one_of(report, "verdict", {"pass", "fail"}, path, where);
  const json& gates = field(report, "gates", Holds::array, path, where);
  for (std::size_t i = 0; i < gates.size(); ++i) check_gate(gates[i], path, i);
  return report;
}

// ---- figures -------------------------------------------------------------

// A metamorphic relation's term, compared bit for bit; split-call's splits
// inside a chunk carry the oracle's bar instead.
bool is_bitwise(const json& gate, const json& term) {
  const std::string kind = gate.at("kind");
  const json& bar = term.value("bar", json());
  return kind != "oracle" && kind != "check" && !(bar.is_number() && bar.get<double>() > 0);
}

// A figure the report may hold as null (NaN, or inf written as null).
std::string figure(const json& x) {
  if (!x.is_number()) return "-";
  const double value = x.get<double>();
  return value == 0.0 ? "0" : fmt::format("{:.2e}", value);
}

// rel: null is inf when the candidate held NaN/inf, else NaN (nothing measured).
std::string rel_text(const json& term) {
  if (term.at("rel").is_null() && term.at("non_finite").get<long>() > 0) return "inf";
  return figure(term.at("rel"));
}

std::string bar_text(const json& gate, const json& term) {
  return is_bitwise(gate, term) ? "bitwise" : fmt::format("{:.1e}", term.at("bar").get<double>());
}

// margin = bar / rel: null is inf when rel is 0. Bitwise relations have no margin.
std::string margin_text(const json& gate, const json& term) {
  if (is_bitwise(gate, term)) return "-";
  const json& margin = term.at("margin");
  if (margin.is_number()) return fmt::format("{:.3g}", margin.get<double>());
  return term.at("rel").is_number() && term.at("rel").get<double>() == 0.0 ? "inf" : "-";
}

// "(b,t,h,i)=(0,15,1,4)", or "-" when nothing differed.
std::string worst_text(const json& term) {
  const json& index = term.at("worst_index");
  if (index.empty()) return "-";
  return fmt::format("({})=({})", term.at("index_names").get<std::string>(),
                     fmt::join(index.get<std::vector<long>>(), ","));
}

std::string painted_status(const std::string& status) {
  return status == "pass" ? paint(status, "32") : paint(status, "31;1");
}

std::string painted_verdict(const std::string& verdict) {
  if (verdict == "pass") return paint("PASS", "32");
  if (verdict == "skipped") return paint("SKIP", "33");
  return paint("FAIL", "31;1");
}

// "chunks: 5.0e-07 2.2e-07 1.2e-07", eight to a line, then which chunks are
// above the bar: one red chunk points at the intra-chunk stages, a figure that
// grows chunk after chunk at the state carried between them.
constexpr std::size_t kChunksPerLine = 8;

std::vector<std::string> chunk_lines(const json& term) {
  std::vector<std::string> lines;
  std::vector<std::size_t> above;
  const double bar = term.at("bar");
  const json& chunks = term.at("per_chunk_rel");
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    if (c % kChunksPerLine == 0) lines.push_back(c == 0 ? "chunks:" : "       ");
    lines.back() += chunks[c].is_number() ? fmt::format(" {:.1e}", chunks[c].get<double>()) : " -";
    if (chunks[c].is_number() && chunks[c].get<double>() > bar) above.push_back(c);
  }
  if (!above.empty())
    lines.back() += paint(
        fmt::format("  (above the bar: chunk {} of {})", fmt::join(above, ","), chunks.size()),
        "31");
  return lines;
}

// ---- show ----------------------------------------------------------------

constexpr int kFigureWidth = 9;
constexpr int kWorstWidth = 24;

// A falsification campaign's report (Stryker schema + "deltaproof"), or null.
json falsify_report_at(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  try {
    json report = json::parse(in);
    return falsify::is_falsify_report(report) ? report : json(nullptr);
  } catch (const json::parse_error&) {
    return nullptr;
  }
}

int show(const std::string& path, bool all_gates) {
  if (const json campaign = falsify_report_at(path); !campaign.is_null()) {
    falsify::print_falsify_report(campaign, all_gates);
    return 0;
  }
  const json report = load_report(path);
  const json& host = report.at("host");
  fmt::print("report   {} ({})\n", path, report.at("schema").get<std::string>());
  fmt::print("tool     {}\n", report.at("tool").get<std::string>());
  fmt::print("commit   {}\n", report.at("git_commit").get<std::string>());
  fmt::print("host     {} ({}, {} CPUs)\n", host.at("name").get<std::string>(),
             host.at("system").get<std::string>(), host.at("cpus").get<int>());
  fmt::print("device   {}\n", report.at("device").get<std::string>());
  fmt::print("created  {}\n", report.at("created").get<std::string>());
  fmt::print("command  {}\n\n", report.at("command").get<std::string>());

  const json& gates = report.at("gates");
  std::size_t term_width = 6;
  for (const auto& gate : gates)
    for (const auto& term : gate.at("terms"))
      term_width = std::max(term_width, term.at("term").get<std::string>().size());
  fmt::print("{:<{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {}\n", "gate / term", term_width + 2, "rel",
             kFigureWidth, "bar", kFigureWidth, "margin", kFigureWidth, "worst index", kWorstWidth,
             "status");
  int passed = 0, failed = 0, skipped = 0;
  double seconds = 0.0;
  for (const auto& gate : gates) {
    const std::string verdict = gate.at("verdict");
    passed += verdict == "pass";
    failed += verdict == "fail";
    skipped += verdict == "skipped";
    seconds += gate.at("seconds").get<double>();
    fmt::print("{}  {}  ({} {}, {}, {}, {:.3f} s)\n", gate.at("name").get<std::string>(),
               painted_verdict(verdict), gate.at("kind").get<std::string>(),
               gate.at("phase").get<std::string>(), gate.at("backend").get<std::string>(),
               gate.at("precision").get<std::string>(), gate.at("seconds").get<double>());
    for (const auto& term : gate.at("terms")) {
      fmt::print("  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {}\n",
                 term.at("term").get<std::string>(), term_width, rel_text(term), kFigureWidth,
                 bar_text(gate, term), kFigureWidth, margin_text(gate, term), kFigureWidth,
                 worst_text(term), kWorstWidth,
                 painted_status(term.at("status").get<std::string>()));
      for (const auto& line : chunk_lines(term)) fmt::print("  {:<{}}  {}\n", "", term_width, line);
    }
  }
  bool first = true;
  for (const auto& gate : gates) {
    if (gate.at("verdict") == "pass") continue;
    if (first) fmt::print("\nwhy not green:\n");
    first = false;
    fmt::print("  {} {}\n", painted_verdict(gate.at("verdict")),
               gate.at("name").get<std::string>());
    for (const auto& reason : gate.at("reasons"))
      fmt::print("       {}\n", reason.get<std::string>());
  }
  fmt::print("\n{} gates: {} passed, {} failed, {} skipped ({:.3f} s); verdict {}\n", gates.size(),
             passed, failed, skipped, seconds,
             painted_verdict(report.at("verdict").get<std::string>()));
  return 0;
}

// ---- diff ----------------------------------------------------------------

enum class Change { same, better, worse };

struct TermChange {
  Change change = Change::same;
  bool turned_red = false;  // passed in A, does not pass in B
};

// A null rel is inf when the candidate held NaN/inf, otherwise nothing was measured.
bool infinite_rel(const json& term) {
  return term.at("rel").is_null() && term.at("non_finite").get<long>() > 0;
}

TermChange compare_terms(const json& a, const json& b) {
  const bool was_green = a.at("status") == "pass";
  const bool is_green = b.at("status") == "pass";
  if (was_green && !is_green) return {Change::worse, true};
  if (!was_green && is_green) return {Change::better, false};
  const json& rel_a = a.at("rel");
  const json& rel_b = b.at("rel");
  if (rel_a.is_number() && rel_b.is_number()) {
    const double x = rel_a, y = rel_b;
    if (y > x * kWorseRatio) return {Change::worse, false};  // also 0 -> anything
    if (x > y * kWorseRatio) return {Change::better, false};
    return {};
  }
  if (rel_a.is_number() && infinite_rel(b)) return {Change::worse, false};
  if (infinite_rel(a) && rel_b.is_number()) return {Change::better, false};
  return {};
}

std::string ratio_text(const json& a, const json& b) {
  const json& rel_a = a.at("rel");
  const json& rel_b = b.at("rel");
  if (!rel_a.is_number() || !rel_b.is_number()) return "-";
  const double x = rel_a, y = rel_b;
  if (x == 0.0) return y == 0.0 ? "1" : "inf";
  return fmt::format("{:.3g}", y / x);
}

std::map<std::string, const json*> by_name(const json& items, const char* key,
                                           const std::string& path, const std::string& what) {
  std::map<std::string, const json*> out;
  for (const auto& item : items)
    if (!out.emplace(item.at(key).get<std::string>(), &item).second)
      throw InputError(fmt::format("{}: {} '{}' appears twice; diff matches them by name.", path,
                                   what, item.at(key).get<std::string>()));
  return out;
}

int diff(const std::string& path_a, const std::string& path_b) {
  const json a = load_report(path_a);
  const json b = load_report(path_b);
  auto print_source = [](const char* label, const std::string& path, const json& report) {
    fmt::print("{}  {}  (commit {}, {}, {} gates)\n", label, path,
               report.at("git_commit").get<std::string>(), report.at("created").get<std::string>(),
               report.at("gates").size());
  };
  print_source("A", path_a, a);
  print_source("B", path_b, b);
  const auto gates_a = by_name(a.at("gates"), "name", path_a, "gate");
  const auto gates_b = by_name(b.at("gates"), "name", path_b, "gate");

  std::size_t term_width = 6;
  for (const json* report : {&a, &b})
    for (const auto& gate : report->at("gates"))
      for (const auto& term : gate.at("terms"))
        term_width = std::max(term_width, term.at("term").get<std::string>().size());
  auto row = [&](const std::string& term, const std::string& rel_a, const std::string& rel_b,
                 const std::string& ratio, const std::string& change) {
    fmt::print("  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", term, term_width, rel_a, kFigureWidth,
               rel_b, kFigureWidth, ratio, kFigureWidth, change);
  };
  fmt::print("\n{:<{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", "gate / term", term_width + 2, "rel A",
             kFigureWidth, "rel B", kFigureWidth, "ratio", kFigureWidth, "change");

  int worse = 0, better = 0, same = 0, verdicts_changed = 0;
  std::vector<std::string> turned_red;  // gates and terms that passed in A and do not in B
  std::vector<std::string> only_a, only_b;
  for (const auto& gate_a : a.at("gates")) {
    const std::string name = gate_a.at("name");
    const auto found = gates_b.find(name);
    if (found == gates_b.end()) {
      only_a.push_back(fmt::format("{} ({})", name, gate_a.at("verdict").get<std::string>()));
      continue;
    }
    const json& gate_b = *found->second;
    const std::string verdict_a = gate_a.at("verdict"), verdict_b = gate_b.at("verdict");
    std::string verdict = verdict_a;
    if (verdict_a != verdict_b) {
      ++verdicts_changed;
      const bool red = verdict_a == "pass" && verdict_b == "fail";
      if (red) turned_red.push_back("gate " + name);
      const std::string text = fmt::format("VERDICT {} -> {}", verdict_a, verdict_b);
      verdict = red                   ? paint(text, "31;1")
                : verdict_b == "pass" ? paint(text, "32;1")
                                      : paint(text, "33;1");
    }
    fmt::print("{}  {}\n", name, verdict);
    const auto terms_b = by_name(gate_b.at("terms"), "term", path_b, "in gate '" + name + "' term");
    const auto terms_a = by_name(gate_a.at("terms"), "term", path_a, "in gate '" + name + "' term");
    for (const auto& term_a : gate_a.at("terms")) {
      const std::string term = term_a.at("term");
      const auto other = terms_b.find(term);
      if (other == terms_b.end()) {
        row(term, rel_text(term_a), "-", "-", paint("only in A", "33"));
        continue;
      }
      const json& term_b = *other->second;
      const TermChange change = compare_terms(term_a, term_b);
      std::string text = change.change == Change::worse    ? paint("worse", "31;1")
                         : change.change == Change::better ? paint("better", "32")
                                                           : "same";
      if (term_a.at("status") != term_b.at("status"))
        text += fmt::format(" ({} -> {})", term_a.at("status").get<std::string>(),
                            term_b.at("status").get<std::string>());
      row(term, rel_text(term_a), rel_text(term_b), ratio_text(term_a, term_b), text);
      worse += change.change == Change::worse;
      better += change.change == Change::better;
      same += change.change == Change::same;
      if (change.turned_red) turned_red.push_back(fmt::format("{} term {}", name, term));
    }
    for (const auto& term_b : gate_b.at("terms"))
      if (!terms_a.count(term_b.at("term")))
        row(term_b.at("term"), "-", rel_text(term_b), "-", paint("only in B", "33"));
  }
  for (const auto& gate_b : b.at("gates"))
    if (!gates_a.count(gate_b.at("name")))
      only_b.push_back(fmt::format("{} ({})", gate_b.at("name").get<std::string>(),
                                   gate_b.at("verdict").get<std::string>()));
  if (!only_a.empty() || !only_b.empty()) fmt::print("\n");
  for (const auto& name : only_a) fmt::print("only in A: {}\n", name);
  for (const auto& name : only_b) fmt::print("only in B: {}\n", name);

  const std::size_t both = a.at("gates").size() - only_a.size();
  fmt::print(
      "\n{} gates in both, {} with a changed verdict; {} only in A, {} only in B; terms: {} "
      "worse, {} better, {} same\n",
      both, verdicts_changed, only_a.size(), only_b.size(), worse, better, same);
  if (!turned_red.empty()) {
    fmt::print("{}\n", paint(fmt::format("passed in A, not in B: {}", fmt::join(turned_red, "; ")),
                             "31;1"));
    return 1;
  }
  fmt::print("nothing that passed in A fails in B\n");
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, ReportArguments& a) {
  CLI::App* report = app.add_subcommand("report", "Show or compare JSON reports of gate runs");
  report->require_subcommand(1);
  a.show = report->add_subcommand(
      "show", "Print a report: header, every gate and term, per-chunk figures, reasons");
  a.show->add_option("file", a.file, "a report written by `deltaproof gate run --report FILE`")
      ->required();
  a.show->add_flag("--all-gates", a.all_gates,
                   "falsify report: every gate's separation, not only the weak ones");
  a.diff = report->add_subcommand(
      "diff", "Compare two reports gate by gate and term by term (exit 1 if anything turned red)");
  a.diff->add_option("A", a.before, "the report before")->required();
  a.diff->add_option("B", a.after, "the report after")->required();
}

int run_report_command(const ReportArguments& a) {
  if (a.show->parsed()) return show(a.file, a.all_gates);
  return diff(a.before, a.after);
}

}  // namespace deltaproof::cli
