// falsify/mutate.cpp — the mutants of `falsify mutate` (see mutate.hpp): their
// statuses and names, mutants.py's list read, each run judged (and judged
// again under a sanitizer), the mutants a run takes, and the score. The run
// itself is mutate_run.cpp, its journal mutate_journal.cpp, its report
// mutate_report.cpp.
#include "falsify/mutate.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/names.hpp"
#include "falsify/mutate_json.hpp"
#include "gates/report.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using detail::number;
using detail::score_text;
using nlohmann::json;

namespace {

constexpr std::pair<MutantStatus, std::string_view> kMutantStatusNames[] = {
    {MutantStatus::killed, "Killed"},
    {MutantStatus::survived, "Survived"},
    {MutantStatus::no_effect, "NoEffect"},
    {MutantStatus::no_coverage, "NoCoverage"},
    {MutantStatus::timeout, "Timeout"},
    {MutantStatus::runtime_error, "RuntimeError"},
    {MutantStatus::compile_error, "CompileError"},
    {MutantStatus::ignored, "Ignored"}};

}  // namespace

std::string_view mutant_status_name(MutantStatus status) {
  return name_of(kMutantStatusNames, status);
}
MutantStatus parse_mutant_status(std::string_view name) {
  return value_of(kMutantStatusNames, name, "mutant status");
}
std::string_view stryker_mutant_status(MutantStatus status) {
  return status == MutantStatus::no_effect ? "Ignored" : mutant_status_name(status);
}

std::vector<Mutant> parse_mutants(const json& list, const std::string& what) {
  if (!list.is_array()) throw InputError(what + ": expected a JSON array of mutants");
  std::vector<Mutant> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& m = list[i];
    try {
      Mutant x;
      x.id = m.at("id").get<int>();
      x.file = m.at("file").get<std::string>();
      x.op = m.at("operator").get<std::string>();
      x.original = m.at("original").get<std::string>();
      x.replacement = m.at("replacement").get<std::string>();
      x.function = m.value("function", "");
      x.line = m.at("line").get<int>();
      x.column = m.at("column").get<int>();
      x.offset = m.at("offset").get<long>();
      x.length = m.at("length").get<long>();
      x.held = !m.at("schema").is_null();
      out.push_back(std::move(x));
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: mutant {} is malformed: {}", what, i, e.what()));
    }
  }
  return out;
}

MutantOutcome judge_mutant(const Mutant& mutant, const MutantRun& run,
                           const std::map<std::string, std::string>& baseline_digests) {
  MutantOutcome o;
  o.mutant = mutant;
  o.seconds = run.seconds;
  if (run.timed_out) {
    o.status = MutantStatus::timeout;
    o.reason = fmt::format("the gates passed the {:.0f} s limit and were stopped (--timeout)",
                           run.timeout_s);
    return o;
  }
  const bool exited = run.signal == 0 && (run.exit_code == 0 || run.exit_code == 1);
  if (!exited || !run.report) {
    o.status = MutantStatus::runtime_error;
    o.reason = fmt::format(
        "the gate run {} and left {}: {}",
        run.signal ? fmt::format("died of signal {}", run.signal)
                   : fmt::format("exited {}", run.exit_code),
        run.report ? "a report" : (run.report_problem.empty() ? "no report" : run.report_problem),
        run.tail);
    return o;
  }
  const std::vector<GateOutcome> gates = gate_outcomes(*run.report);
  o.gates_run = static_cast<int>(gates.size());
  for (const auto& g : gates) {
    if (!g.red) continue;
    o.killed_by.push_back(g.name);
    if (o.killer_gate.empty()) {
      o.killer_gate = g.name;
      o.killer_term = g.worst_term;
      o.margin = g.bar > 0 ? g.error / g.bar : std::numeric_limits<double>::infinity();
    }
  }
  if (!o.killed_by.empty()) {
    o.status = MutantStatus::killed;
    o.reason =
        fmt::format("{} red of {} run; first {} on {} (error {} / bar)", o.killed_by.size(),
                    gates.size(), o.killer_gate, o.killer_term, gates::figure_text(o.margin));
    return o;
  }
  if (run.exit_code != 0) {
    o.status = MutantStatus::runtime_error;
    o.reason = fmt::format("the gate run exited {} with no red gate: {}", run.exit_code, run.tail);
    return o;
  }
  int compared = 0;
  for (const auto& g : run.report->at("gates")) {
    const std::string name = g.value("name", "");
    const auto it = baseline_digests.find(name);
    if (it == baseline_digests.end() || it->second.empty()) continue;
    ++compared;
    if (g.value("outputs_sha256", "") != it->second) o.changed_outputs.push_back(name);
  }
  if (o.changed_outputs.empty()) {
    o.status = MutantStatus::no_effect;
    o.reason = fmt::format(
        "every gate green ({} ran) and the outputs of all {} oracle gates bitwise the "
        "baseline's: a likely equivalent mutant",
        gates.size(), compared);
  } else {
    o.status = MutantStatus::survived;
    o.reason = fmt::format(
        "every gate green ({} ran), yet the outputs of {} of {} oracle gates "
        "differ from the baseline's, first {}",
        gates.size(), o.changed_outputs.size(), compared, o.changed_outputs.front());
  }
  return o;
}

std::string sanitizer_finding(const std::string& log, int exit_code, int signal) {
  // the marker of each tool's first error line, and the kind it names
  static const std::pair<const char*, const char*> kMarkers[] = {
      {"ERROR: AddressSanitizer: ", "AddressSanitizer"},
      {"runtime error: ", "UndefinedBehaviorSanitizer"},
      {"Assertion `", "assertion"},
      {"========= Invalid ", "memcheck"},
      {"========= Program hit ", "memcheck"},
      {"========= Error: Race reported", "racecheck"},
      {"========= Race reported", "racecheck"},
      {"========= Barrier error", "synccheck"},
      {"========= Divergent thread", "synccheck"},
  };
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    for (const auto& [marker, kind] : kMarkers)
      if (const std::size_t at = line.find(marker); at != std::string::npos) {
        // from the marker where it opens the message (ASan's "==PID==", the
        // sanitizer's "========= "), else the whole line: UBSan's and
        // assert's start with the place
        const std::string_view m = marker;
        std::size_t from = 0;
        if (m.rfind("ERROR", 0) == 0) from = at;
        if (m.rfind("=========", 0) == 0) from = at + 10;
        std::string text = line.substr(from);
        if (text.size() > 240) text = text.substr(0, 240) + "...";
        return fmt::format("{}: {}", kind, text);
      }
  if (exit_code == kSanitizerExitCode && signal == 0)
    return fmt::format("sanitizer: exited {} (its error exit code) with no error line known here",
                       kSanitizerExitCode);
  return {};
}

MutantOutcome judge_sanitized(const MutantOutcome& before, const MutantRun& run,
                              const std::string& tool) {
  MutantOutcome o = before;
  o.sanitizer = tool;
  o.seconds += run.seconds;
  if (!run.finding.empty()) {
    o.status = MutantStatus::killed;
    o.sanitizer_finding = run.finding;
    o.killer_gate = tool;
    o.killer_term = run.finding.substr(0, run.finding.find(':'));
    o.margin = std::numeric_limits<double>::infinity();
    o.killed_by = {tool};
    o.reason = fmt::format("killed by {} ({} on the outputs alone): {}", tool,
                           mutant_status_name(before.status), run.finding);
    return o;
  }
  const MutantOutcome again = judge_mutant(before.mutant, run, {});
  if (again.status == MutantStatus::killed) {
    o.status = MutantStatus::killed;
    o.killer_gate = again.killer_gate;
    o.killer_term = again.killer_term;
    o.margin = again.margin;
    o.killed_by = again.killed_by;
    o.reason = fmt::format("killed under {} (outputs alone: {}): {}", tool,
                           mutant_status_name(before.status), again.reason);
    return o;
  }
  o.reason = fmt::format(
      "{}; clean under {}{}", before.reason, tool,
      again.status == MutantStatus::runtime_error || again.status == MutantStatus::timeout
          ? fmt::format(" (but the run there: {})", again.reason)
          : "");
  return o;
}

std::vector<Mutant> choose_mutants(const std::vector<Mutant>& all, const std::vector<int>& ids,
                                   int shard_index, int shard_count, int max) {
  std::vector<Mutant> chosen;
  for (int id : ids)
    if (std::none_of(all.begin(), all.end(), [&](const Mutant& m) { return m.id == id; }))
      throw InputError(fmt::format("--ids: no mutant {} (the files hold mutants 1 to {})", id,
                                   all.empty() ? 0 : all.back().id));
  for (const auto& m : all)
    if (ids.empty() || std::find(ids.begin(), ids.end(), m.id) != ids.end()) chosen.push_back(m);
  std::vector<Mutant> shard;
  for (std::size_t i = 0; i < chosen.size(); ++i)
    if (static_cast<int>(i % shard_count) == shard_index - 1) shard.push_back(chosen[i]);
  if (max <= 0 || static_cast<std::size_t>(max) >= shard.size()) return shard;
  std::vector<Mutant> spread;
  for (int j = 0; j < max; ++j) spread.push_back(shard[j * shard.size() / max]);
  return spread;
}

int Score::operator[](MutantStatus status) const {
  const auto it = counts.find(status);
  return it == counts.end() ? 0 : it->second;
}

double Score::score() const {
  const int killed = (*this)[MutantStatus::killed], survived = (*this)[MutantStatus::survived];
  return killed + survived == 0
             ? std::nan("")
             : static_cast<double>(killed) / static_cast<double>(killed + survived);
}

json Score::to_json() const {
  json out = json::object();
  for (const auto& [status, name] : kMutantStatusNames) out[std::string(name)] = (*this)[status];
  out["score"] = number(score());
  out["score_text"] = score_text(score());
  return out;
}

Score score_of(const std::vector<MutantOutcome>& outcomes) {
  Score s;
  for (const auto& o : outcomes) ++s.counts[o.status];
  return s;
}

}  // namespace deltaproof::falsify
