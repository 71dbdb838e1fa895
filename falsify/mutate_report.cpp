// falsify/mutate_report.cpp — `falsify mutate`'s report (see mutate.hpp):
// Stryker's schemaVersion 2 with a "deltaproof" object, the diff of a
// mutant, and `report show`'s text of one.
#include "falsify/mutate.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "falsify/mutate_json.hpp"
#include "falsify/report.hpp"
#include "gates/report.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using detail::number;
using detail::score_text;
using nlohmann::json;

namespace {

// The line and column (1-based) just past `length` bytes from `offset`.
std::pair<int, int> end_of(const std::string& source, long offset, long length) {
  int line = 1, column = 1;
  const long end = std::min<long>(offset + length, static_cast<long>(source.size()));
  for (long i = 0; i < end; ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(source[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

json score_table(const std::map<std::string, std::vector<MutantOutcome>>& groups) {
  json out = json::object();
  for (const auto& [key, outcomes] : groups) out[key] = score_of(outcomes).to_json();
  return out;
}

}  // namespace

json mutate_report(const MutateResult& result, const MutateOptions& options,
                   const std::string& command) {
  json header = gates::make_report({}, command);
  header.erase("gates");
  header.erase("summary");
  header.erase("verdict");
  header["schema"] = kMutateReportFormat;
  header["mutated_commit"] = result.head;
  header["mutated_files"] = options.files;
  header["operators"] = options.operators;
  header["backends"] = options.backends;
  header["gate_globs"] = options.gate_globs;
  header["shard"] = fmt::format("{}/{}", options.shard_index, options.shard_count);
  header["max"] = options.max;
  header["ids"] = options.ids;
  header["timeout_s"] = options.timeout_s;
  header["first_red"] = !options.all_gates;
  header["journal"] = {{"path", options.journal.string()}, {"results_taken", result.from_journal}};
  header["build"] = {{"rounds", result.build_rounds},
                     {"seconds", result.build_seconds},
                     {"jobs", options.build_jobs}};
  const BaselineOutcome* b = result.baselines.empty() ? nullptr : &result.baselines.front();
  header["baseline"] = {{"ok", result.baseline_ok},
                        {"gates", b ? b->gates : 0},
                        {"clean_green", b ? b->clean_green : 0},
                        {"seconds", result.baseline_seconds},
                        {"points_reached", result.points_reached},
                        {"problems", b ? b->problems : std::vector<std::string>{}},
                        {"gate_order", result.gates}};
  const MutateResult::SanitizePass& sp = result.sanitize;
  header["sanitize"] = {{"ran", sp.ran},         {"tools", sp.tools},
                        {"gates", sp.gates},     {"baseline_clean", sp.baseline_clean},
                        {"problem", sp.problem}, {"rerun", sp.rerun},
                        {"killed", sp.killed},   {"build_seconds", sp.build_seconds},
                        {"seconds", sp.seconds}};
  header["tree"] = {{"top", result.source_top.string()},
                    {"tracked_files", result.tracked_files},
                    {"unchanged", result.tree_changes.empty()},
                    {"changes", result.tree_changes}};
  std::map<std::string, std::vector<MutantOutcome>> by_file, by_operator;
  for (const auto& o : result.mutants) {
    by_file[o.mutant.file].push_back(o);
    by_operator[o.mutant.op].push_back(o);
  }
  const Score all = score_of(result.mutants);
  header["summary"] = {{"mutants_found", result.mutants_found},
                       {"mutants", result.mutants.size()},
                       {"statuses", all.to_json()},
                       {"score", number(all.score())},
                       {"score_text", score_text(all.score())},
                       {"score_by_file", score_table(by_file)},
                       {"score_by_operator", score_table(by_operator)},
                       {"interrupted", result.interrupted},
                       {"seconds", result.seconds}};
  header["verdict"] = result.passed() ? "pass" : "fail";

  json files = json::object();
  for (const auto& [file, source] : result.sources) files[file] = stryker_file(file, source);
  std::vector<MutantOutcome> ordered = result.mutants;
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.mutant.id < b.mutant.id; });
  for (const auto& o : ordered) {
    const Mutant& m = o.mutant;
    if (!files.contains(m.file)) continue;
    const auto [end_line, end_column] = end_of(result.sources.at(m.file), m.offset, m.length);
    files[m.file]["mutants"].push_back(
        {{"id", std::to_string(m.id)},
         {"mutatorName", m.op},
         {"replacement", m.replacement},
         {"description", fmt::format("{} -> {} in {}", m.original, m.replacement, m.function)},
         {"location",
          {{"start", {{"line", m.line}, {"column", m.column}}},
           {"end", {{"line", end_line}, {"column", end_column}}}}},
         {"status", stryker_mutant_status(o.status)},
         {"statusReason", o.reason},
         {"killedBy", o.killed_by},
         {"deltaproofStatus", mutant_status_name(o.status)},
         {"original", m.original},
         {"function", m.function},
         {"offset", m.offset},
         {"length", m.length},
         {"gate", o.killer_gate},
         {"term", o.killer_term},
         {"margin", number(o.margin)},
         {"gatesRun", o.gates_run},
         {"changedOutputs", o.changed_outputs},
         {"sanitizer", o.sanitizer},
         {"sanitizerFinding", o.sanitizer_finding},
         {"seconds", o.seconds}});
  }
  return stryker_envelope(result.source_top, std::move(files), std::move(header), 95, 80);
}

bool is_mutate_report(const json& report) {
  return report.is_object() && report.contains("schemaVersion") && report.contains("deltaproof") &&
         report["deltaproof"].value("schema", "") == kMutateReportFormat;
}

MutantDiff mutant_diff(const std::string& source, const json& m) {
  const long offset = m.value("offset", 0L), length = m.value("length", 0L);
  if (offset < 0 || length < 0 || offset + length > static_cast<long>(source.size())) return {};
  const std::size_t at = static_cast<std::size_t>(offset), n = static_cast<std::size_t>(length);
  const std::size_t newline = at == 0 ? std::string::npos : source.rfind('\n', at - 1);
  const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
  std::size_t end = source.find('\n', at + n);
  if (end == std::string::npos) end = source.size();
  const std::string before = source.substr(begin, end - begin);
  const std::string after = source.substr(begin, at - begin) + m.value("replacement", "") +
                            source.substr(at + n, end - at - n);
  auto split = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  return {split(before), split(after)};
}

namespace {

void print_score_table(const char* what, const json& table) {
  fmt::print("{:<28} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8}  {:>7}\n", what, "Killed", "Surv.",
             "NoEff.", "NoCov.", "Timeout", "RunErr", "CompErr", "score");
  for (const auto& [key, s] : table.items())
    fmt::print("{:<28} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8}  {:>7}\n", key,
               s.value("Killed", 0), s.value("Survived", 0), s.value("NoEffect", 0),
               s.value("NoCoverage", 0), s.value("Timeout", 0), s.value("RuntimeError", 0),
               s.value("CompileError", 0), s.value("score_text", "-"));
}

}  // namespace

void print_mutate_report(const json& report, bool all_mutants) {
  const json& d = report["deltaproof"];
  fmt::print("report   mutation run ({}; Stryker schemaVersion {})\n", d.value("schema", "?"),
             report.value("schemaVersion", "?"));
  fmt::print("tool     {}\ncommit   {} (mutated: {})\ndevice   {}\ncreated  {}\ncommand  {}\n",
             d.value("tool", "?"), d.value("git_commit", "?"), d.value("mutated_commit", "?"),
             d.value("device", "?"), d.value("created", "?"), d.value("command", "?"));
  const json& build = d["build"];
  const json& base = d["baseline"];
  fmt::print("files    {}   shard {}   backends {}\n",
             fmt::join(d.value("mutated_files", std::vector<std::string>{}), ", "),
             d.value("shard", "?"),
             fmt::join(d.value("backends", std::vector<std::string>{}), ", "));
  fmt::print("build    {} rounds, {:.0f} s\n", build.value("rounds", 0),
             build.value("seconds", 0.0));
  fmt::print("baseline {} gates, {} green, {:.0f} s, {} mutant points reached  {}\n",
             base.value("gates", 0), base.value("clean_green", 0), base.value("seconds", 0.0),
             base.value("points_reached", 0), base.value("ok", false) ? "ok" : "FAILED");
  const json& sanitize = d.value("sanitize", json::object());
  if (sanitize.value("ran", false))
    fmt::print("sanitize {} undetected mutants again under {}, on {} gates: {} killed{}\n",
               sanitize.value("rerun", 0), sanitize.value("tools", "?"),
               sanitize.value("gates", json::array()).size(), sanitize.value("killed", 0),
               sanitize.value("problem", "").empty()
                   ? ""
                   : fmt::format("  FAILED: {}", sanitize.value("problem", "")));
  fmt::print(
      "tree     {} tracked files {}\n\n", d["tree"].value("tracked_files", 0),
      d["tree"].value("unchanged", false) ? "unchanged (hashed before and after)" : "CHANGED");
  const json& summary = d["summary"];
  print_score_table("file", summary["score_by_file"]);
  fmt::print("\n");
  print_score_table("operator", summary["score_by_operator"]);
  fmt::print("\n");
  print_score_table("all", json{{"all", summary["statuses"]}});

  int shown = 0;
  for (const auto& [file, f] : report["files"].items()) {
    const std::string source = f.value("source", "");
    for (const auto& m : f.value("mutants", json::array())) {
      const std::string status = m.value("deltaproofStatus", m.value("status", ""));
      if (!all_mutants && status != "Survived") continue;
      ++shown;
      fmt::print("\n{} m{} {}:{}:{} {} in {}\n    {}\n", status, m.value("id", ""), file,
                 m["location"]["start"].value("line", 0), m["location"]["start"].value("column", 0),
                 m.value("mutatorName", ""), m.value("function", ""), m.value("statusReason", ""));
      const MutantDiff diff = mutant_diff(source, m);
      for (const auto& line : diff.before) fmt::print("  - {}\n", line);
      for (const auto& line : diff.after) fmt::print("  + {}\n", line);
    }
  }
  fmt::print(
      "\n{} mutants{} shown; score {} = killed / (killed + survived), NoEffect set aside; "
      "verdict {}\n",
      shown, all_mutants ? "" : " (the survivors; --all-gates lists every mutant)",
      summary.value("score_text", "-"), d.value("verdict", "?"));
}

}  // namespace deltaproof::falsify
