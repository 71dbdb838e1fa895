// falsify/mutate.cpp — see mutate.hpp.
#include "falsify/mutate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/names.hpp"
#include "core/parallel.hpp"
#include "core/process.hpp"
#include "falsify/report.hpp"
#include "falsify/tree.hpp"
#include "gates/report.hpp"
#include "gates/report_file.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
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

constexpr int kMaxBuildRounds = 8;

json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::string score_text(double score) {
  return std::isnan(score) ? std::string("-") : fmt::format("{:.1f}%", 100.0 * score);
}

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

// ---- the journal -------------------------------------------------------------

namespace {

constexpr std::pair<JournalPhase, std::string_view> kJournalPhaseNames[] = {
    {JournalPhase::gates, "gates"}, {JournalPhase::sanitize, "sanitize"}};

}  // namespace

json journal_header(const MutateOptions& options) {
  return {{"journal", kMutateJournalFormat},
          {"files", options.files},
          {"backends", options.backends},
          {"gate_globs", options.gate_globs},
          {"first_red", !options.all_gates},
          {"timeout_s", options.timeout_s},
          {"sanitize_globs", options.sanitize_globs}};
}

json journal_line(const MutantOutcome& o, JournalPhase phase) {
  return {{"id", o.mutant.id},
          {"phase", name_of(kJournalPhaseNames, phase)},
          {"file", o.mutant.file},
          {"line", o.mutant.line},
          {"original", o.mutant.original},
          {"replacement", o.mutant.replacement},
          {"status", mutant_status_name(o.status)},
          {"reason", o.reason},
          {"gate", o.killer_gate},
          {"term", o.killer_term},
          {"margin", number(o.margin)},
          {"killedBy", o.killed_by},
          {"gatesRun", o.gates_run},
          {"changedOutputs", o.changed_outputs},
          {"seconds", o.seconds},
          {"sanitizer", o.sanitizer},
          {"sanitizerFinding", o.sanitizer_finding}};
}

Journal read_journal(const fs::path& path, const json& header, const std::vector<Mutant>& all) {
  Journal journal;
  std::error_code missing;
  if (!fs::exists(path, missing)) return journal;
  std::map<int, const Mutant*> by_id;
  for (const auto& m : all) by_id[m.id] = &m;
  const std::string text = read_text(path);
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    const auto where = [&](const std::string& problem) {
      return InputError(fmt::format("journal {}, line {}: {}", path.string(), number, problem));
    };
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error&) {
      if (number == 1) throw where("not JSON");
      ++journal.cut_lines;  // a run ended while it wrote the line
      continue;
    }
    if (number == 1) {
      if (!j.is_object() || j.value("journal", "") != kMutateJournalFormat)
        throw where(fmt::format("not a journal of falsify mutate (no \"journal\": \"{}\")",
                                kMutateJournalFormat));
      for (const auto& [key, ours] : header.items())
        if (key != "journal" && j.value(key, json()) != ours)
          throw where(
              fmt::format("it was written by a run whose {} was {}; this run's is {} (give another "
                          "--journal, or the set-up that wrote it)",
                          key, j.value(key, json()).dump(), ours.dump()));
      continue;
    }
    try {
      const int id = j.at("id").get<int>();
      const auto it = by_id.find(id);
      if (it == by_id.end()) throw where(fmt::format("mutant {} is not in this run's list", id));
      const Mutant& m = *it->second;
      if (j.at("file").get<std::string>() != m.file || j.at("line").get<int>() != m.line ||
          j.at("original").get<std::string>() != m.original ||
          j.at("replacement").get<std::string>() != m.replacement)
        throw where(fmt::format(
            "mutant {} is {}:{} '{}' -> '{}' there but {}:{} '{}' -> '{}' in this run's list "
            "(the journal was written from another list)",
            id, j.at("file").get<std::string>(), j.at("line").get<int>(),
            j.at("original").get<std::string>(), j.at("replacement").get<std::string>(), m.file,
            m.line, m.original, m.replacement));
      MutantOutcome o;
      o.mutant = m;
      o.status = parse_mutant_status(j.at("status").get<std::string>());
      o.reason = j.value("reason", "");
      o.killer_gate = j.value("gate", "");
      o.killer_term = j.value("term", "");
      o.margin = j.contains("margin") && j["margin"].is_number() ? j["margin"].get<double>()
                                                                 : std::nan("");
      o.killed_by = j.value("killedBy", std::vector<std::string>{});
      o.gates_run = j.value("gatesRun", 0);
      o.changed_outputs = j.value("changedOutputs", std::vector<std::string>{});
      o.seconds = j.value("seconds", 0.0);
      o.sanitizer = j.value("sanitizer", "");
      o.sanitizer_finding = j.value("sanitizerFinding", "");
      const JournalPhase phase =
          value_of(kJournalPhaseNames, j.at("phase").get<std::string>(), "journal phase");
      (phase == JournalPhase::gates ? journal.gates : journal.sanitize)[id] = std::move(o);
      ++journal.results;
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw where(fmt::format("not a mutant's result: {}", e.what()));
    }
  }
  return journal;
}

void append_journal(const fs::path& path, const json& header, const json& line) {
  std::error_code missing;
  const bool fresh = !fs::exists(path, missing) || fs::file_size(path, missing) == 0;
  bool needs_newline = false;
  if (!fresh) {  // a line cut short by the end of an earlier run is closed first
    std::ifstream in(path, std::ios::binary);
    in.seekg(-1, std::ios::end);
    needs_newline = in.get() != '\n';
  }
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (fresh) out << header.dump() << '\n';
  if (needs_newline) out << '\n';
  out << line.dump() << '\n';
  out.flush();
  if (!out) throw InputError(fmt::format("cannot append to the journal {}", path.string()));
}

bool MutateResult::passed() const {
  return baseline_ok && !interrupted && tree_changes.empty() && sanitize.problem.empty();
}

namespace {

// One mutation run's scratch worktree, its build and its children.
class Mutator {
 public:
  Mutator(const MutateOptions& options, MutateResult& result) : o_(options), r_(result) {
    if (!o_.working_tree && fs::exists(r_.source_top / ".git")) {
      worktree_.emplace(r_.source_top);
      r_.head = worktree_->head();
    } else {
      copy_working_tree(r_.source_top, copy_.path() / "tree");
      r_.head = o_.working_tree ? "(the working tree, copied)" : "(no git: a copy of the tree)";
    }
  }

  void run() {
    configure();
    const std::vector<Mutant> chosen = list();
    if (chosen.empty()) return;
    if (!o_.journal.empty()) {
      journal_ = read_journal(o_.journal, journal_header(o_), all_);
      o_.progress(fmt::format(
          "journal {}: {} results{}", o_.journal.string(), journal_.results,
          journal_.cut_lines ? fmt::format(" ({} lines cut short, left out)", journal_.cut_lines)
                             : std::string()));
    }
    build();
    if (binary_.empty()) return;
    baseline();
    if (!r_.baseline_ok) return;
    run_mutants();
    if (o_.sanitize) sanitize();
  }

 private:
  const MutateOptions& o_;
  MutateResult& r_;
  ScratchFolder copy_{"deltaproof-mutate"};  // the scratch of a tree without .git
  std::optional<ScratchWorktree> worktree_;  // declared after: it goes first
  std::mutex progress_mutex_;
  std::map<int, json> raw_;  // id -> mutants.py's object
  std::vector<Mutant> in_build_;
  std::string binary_;
  std::set<int> reached_;
  std::map<std::string, std::string> digests_;
  std::vector<Mutant> all_;  // the list, every mutant of the files
  Journal journal_;

  // The journal's result of `m` in `phase`, if it holds one.
  const MutantOutcome* journaled(const Mutant& m, JournalPhase phase) const {
    const auto& results = phase == JournalPhase::gates ? journal_.gates : journal_.sanitize;
    const auto it = results.find(m.id);
    return it == results.end() ? nullptr : &it->second;
  }
  void record(const MutantOutcome& out, JournalPhase phase) {  // under progress_mutex_
    if (!o_.journal.empty())
      append_journal(o_.journal, journal_header(o_), journal_line(out, phase));
  }

  fs::path tree() const { return worktree_ ? worktree_->tree() : copy_.path() / "tree"; }
  fs::path scratch() const { return worktree_ ? worktree_->scratch() : copy_.path(); }
  fs::path build_dir() const { return scratch() / "build"; }
  // the finder of the deltaproof that runs (its source tree's), so that it and
  // the switch it writes for agree whatever HEAD holds
  fs::path script() const { return r_.source_top / "falsify" / "mutants.py"; }
  bool cuda() const {
    return std::any_of(o_.backends.begin(), o_.backends.end(),
                       [](const std::string& b) { return b.rfind("cuda", 0) == 0; });
  }
  std::vector<std::string> defines() const {
    // a mutant that only draws a warning is no compile error
    return {cuda() ? "-DDELTAPROOF_CUDA=ON" : "-DDELTAPROOF_CUDA=OFF", "-DDELTAPROOF_WERROR=OFF"};
  }

  void configure() {
    std::vector<std::string> argv = {"cmake",
                                     "-S",
                                     tree().string(),
                                     "-B",
                                     build_dir().string(),
                                     "-DCMAKE_BUILD_TYPE=Release",
                                     "-DDELTAPROOF_TESTS=OFF",
                                     "-DDELTAPROOF_BENCH=OFF"};
    for (const auto& d : defines()) argv.push_back(d);
    o_.progress(fmt::format("scratch tree of {} in {}; configuring",
                            worktree_ ? r_.head.substr(0, 12) : r_.head, tree().string()));
    const ProcessResult c = run_process(argv, o_.build_timeout_s);
    if (c.exit_code != 0)
      throw InputError(fmt::format("cmake cannot configure the worktree: {}", c.tail(6)));
  }

  json listed_mutants() {
    if (!o_.mutants_list.empty()) {
      try {
        return json::parse(read_text(o_.mutants_list));
      } catch (const json::parse_error& e) {
        throw InputError(fmt::format("{}: not JSON: {}", o_.mutants_list.string(), e.what()));
      }
    }
    std::vector<std::string> argv = {o_.python, script().string(), "list"};
    argv.insert(argv.end(), o_.files.begin(), o_.files.end());
    argv.push_back("--compile-commands");
    argv.push_back((build_dir() / "compile_commands.json").string());
    if (!o_.operators.empty()) {
      argv.push_back("--operators");
      argv.push_back(fmt::format("{}", fmt::join(o_.operators, ",")));
    }
    const ProcessResult listed =
        run_process(argv, o_.build_timeout_s, tree(), Interrupts::honoured, Capture::stdout_only);
    if (listed.exit_code != 0) {
      const ProcessResult again = run_process(argv, o_.build_timeout_s, tree());
      throw InputError(fmt::format("falsify/mutants.py list failed (exit {}): {}", again.exit_code,
                                   again.tail(6)));
    }
    try {
      return json::parse(listed.log);
    } catch (const json::parse_error& e) {
      throw InputError(fmt::format("falsify/mutants.py list printed no JSON: {}", e.what()));
    }
  }

  std::vector<Mutant> list() {
    const json list = listed_mutants();
    for (const auto& m : list) raw_[m.value("id", 0)] = m;
    all_ = parse_mutants(
        list, o_.mutants_list.empty() ? "falsify/mutants.py list" : o_.mutants_list.string());
    const std::vector<Mutant>& all = all_;
    for (const auto& m : all)
      if (std::find(o_.files.begin(), o_.files.end(), m.file) == o_.files.end())
        throw InputError(fmt::format("mutant {} is in {}, which is not among the files ({})", m.id,
                                     m.file, fmt::join(o_.files, ", ")));
    r_.mutants_found = static_cast<int>(all.size());
    for (const auto& file : o_.files) r_.sources[file] = read_text(tree() / file);
    for (const auto& m : all) {  // a list made from another version of a file is refused
      const std::string& source = r_.sources.at(m.file);
      if (m.offset < 0 || m.offset + m.length > static_cast<long>(source.size()) ||
          source.compare(static_cast<std::size_t>(m.offset), static_cast<std::size_t>(m.length),
                         m.original) != 0)
        throw InputError(fmt::format(
            "mutant {}: '{}' is not at byte {} of {} (the list was made from another version "
            "of the file: list it again)",
            m.id, m.original, m.offset, m.file));
    }
    const std::vector<Mutant> chosen =
        choose_mutants(all, o_.ids, o_.shard_index, o_.shard_count, o_.max);
    o_.progress(fmt::format("{} mutants in {}; {} chosen", all.size(), fmt::join(o_.files, ", "),
                            chosen.size()));
    for (const auto& m : chosen) {
      if (m.held) {
        in_build_.push_back(m);
      } else {
        add(m, MutantStatus::ignored, "the schemata cannot hold it (mutants.py: schema null)");
      }
    }
    return chosen;
  }

  // The mutants of `from` that `keep` holds; each other one ends in `status`.
  template <class Keep>
  std::vector<Mutant> keep_only(const std::vector<Mutant>& from, Keep keep, MutantStatus status,
                                const std::string& reason) {
    std::vector<Mutant> kept;
    for (const auto& m : from) {
      if (keep(m))
        kept.push_back(m);
      else
        add(m, status, reason);
    }
    return kept;
  }

  void add(const Mutant& m, MutantStatus status, std::string reason) {
    MutantOutcome out;
    out.mutant = m;
    out.status = status;
    out.reason = std::move(reason);
    r_.mutants.push_back(std::move(out));
  }

  // Writes every file with the mutants of in_build_ compiled in; returns each
  // file's lines map (FILE.lines.json).
  std::vector<fs::path> write_schemata(int round) {
    const fs::path list = scratch() / fmt::format("mutants-{}.json", round);
    json chosen = json::array();
    for (const auto& m : in_build_) chosen.push_back(raw_.at(m.id));
    write_text_atomically(list, chosen.dump() + "\n");
    std::vector<fs::path> maps;
    std::set<int> held;
    for (std::size_t i = 0; i < o_.files.size(); ++i) {
      const std::string& file = o_.files[i];
      write_text_atomically(tree() / file, r_.sources.at(file));  // the original, again
      const fs::path out =
          scratch() / fmt::format("schemata-{}-{}", round, i) / fs::path(file).filename();
      fs::create_directories(out.parent_path());
      const ProcessResult s = run_process({o_.python, script().string(), "schema", file,
                                           "--mutants", list.string(), "--out", out.string()},
                                          o_.build_timeout_s, tree());
      if (s.exit_code != 0)
        throw InputError(fmt::format("falsify/mutants.py schema {} failed: {}", file, s.tail(6)));
      fs::copy_file(out, tree() / file, fs::copy_options::overwrite_existing);
      maps.push_back(out.string() + ".lines.json");
      const json lines = json::parse(read_text(maps.back()));
      for (int id : lines.value("held", std::vector<int>{})) held.insert(id);
    }
    // a mutant whose holder overlaps another's without nesting is not in the schemata
    in_build_ = keep_only(
        in_build_, [&](const Mutant& m) { return held.count(m.id) > 0; }, MutantStatus::ignored,
        "the schemata cannot hold it (its holder overlaps another)");
    return maps;
  }

  void build() {
    for (int round = 1; round <= kMaxBuildRounds; ++round) {
      r_.build_rounds = round;
      const std::vector<fs::path> maps = write_schemata(round);
      o_.progress(fmt::format("build round {}: {} mutants compiled in", round, in_build_.size()));
      const Build b = build_deltaproof(tree(), build_dir(), defines(), o_.build_jobs,
                                       o_.build_timeout_s, /*keep_going=*/true);
      r_.build_seconds += b.result.seconds;
      if (b.ok()) {
        binary_ = b.binary.string();
        o_.progress(fmt::format("  built in {:.0f} s", b.result.seconds));
        return;
      }
      if (b.result.timed_out)
        throw InputError(fmt::format("the schemata build passed {:.0f} s (round {})",
                                     o_.build_timeout_s, round));
      const fs::path log = scratch() / fmt::format("build-{}.log", round);
      write_text_atomically(log, b.result.log);
      std::set<int> refused;
      for (const auto& map : maps) {
        const ProcessResult e =
            run_process({o_.python, script().string(), "errors", "--lines", map.string(), "--log",
                         log.string()},
                        120, tree(), Interrupts::honoured, Capture::stdout_only);
        if (e.exit_code != 0) continue;
        for (int id : json::parse(e.log).get<std::vector<int>>()) refused.insert(id);
      }
      if (refused.empty()) {
        std::string errors;  // the compiler's error lines, not make's noise
        std::istringstream in(b.result.log);
        int shown = 0;
        for (std::string line; std::getline(in, line) && shown < 12;)
          if (line.find("error") != std::string::npos && line.find("make") == std::string::npos) {
            errors += "\n  " + line;
            ++shown;
          }
        throw InputError(fmt::format("the schemata build failed outside every mutant (round {}):{}",
                                     round, errors.empty() ? "\n" + b.result.tail(12) : errors));
      }
      in_build_ = keep_only(
          in_build_, [&](const Mutant& m) { return refused.count(m.id) == 0; },
          MutantStatus::compile_error,
          fmt::format("the compiler refused it (schemata build round {})", round));
      o_.progress(fmt::format("  {} mutants refused by the compiler ({:.0f} s)", refused.size(),
                              b.result.seconds));
    }
    throw InputError(
        fmt::format("the schemata still do not build after {} rounds", kMaxBuildRounds));
  }

  // `gate run` of the schemata build (or of `binary`), its report to `report`
  std::vector<std::string> gate_run(const fs::path& report, const std::string& binary = {}) const {
    return {binary.empty() ? binary_ : binary, "gate",     "run",          "--fixtures",
            o_.fixtures_dir.string(),          "--report", report.string()};
  }

  void baseline() {
    std::vector<std::string> names;
    for (const auto& backend : o_.backends)
      for (const auto& g : campaign_gates(o_.fixtures_dir, backend, o_.gate_globs))
        names.push_back(g.name);
    const fs::path report = scratch() / "baseline.json", coverage = scratch() / "coverage.json";
    std::vector<std::string> argv = gate_run(report);
    argv.insert(argv.end(), {"--mutant-coverage", coverage.string()});
    argv.insert(argv.end(), names.begin(), names.end());
    o_.progress(fmt::format("baseline: {} gates of {}, no mutant on", names.size(),
                            fmt::join(o_.backends, ", ")));
    const ProcessResult b = run_process(argv, o_.build_timeout_s);
    r_.baseline_seconds = b.seconds;
    BaselineOutcome outcome;
    outcome.backend = fmt::format("{}", fmt::join(o_.backends, "+"));
    outcome.gates = static_cast<int>(names.size());
    if (b.timed_out || b.exit_code != 0 || !fs::exists(report)) {
      outcome.problems.push_back(fmt::format(
          "the baseline gate run {}: {}",
          b.timed_out ? "timed out" : fmt::format("exited {}", b.exit_code), b.tail(8)));
    } else {
      const json parsed = json::parse(read_text(report));
      std::vector<std::pair<double, std::string>> order;
      for (const auto& g : parsed.at("gates")) {
        const std::string name = g.value("name", "");
        order.emplace_back(g.value("seconds", 0.0), name);
        digests_[name] = g.value("outputs_sha256", "");
        const bool green = g.value("verdict", "") != "fail";
        outcome.clean_green += green;
        if (!green) outcome.problems.push_back(fmt::format("clean: {} is red", name));
      }
      // cheapest first: a killed mutant stops at its first red gate
      std::stable_sort(order.begin(), order.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [seconds, name] : order) r_.gates.push_back(name);
      for (int id : json::parse(read_text(coverage)).get<std::vector<int>>()) reached_.insert(id);
    }
    for (const auto& m : in_build_) r_.points_reached += reached_.count(m.id) > 0;
    r_.baseline_ok = outcome.ok();
    r_.baselines.push_back(outcome);
    o_.progress(fmt::format("  {} in {:.0f} s; {} of {} mutant points reached",
                            outcome.ok() ? "green" : "FAILED", b.seconds, r_.points_reached,
                            in_build_.size()));
    for (std::size_t i = 0; i < outcome.problems.size() && i < 5; ++i)
      o_.progress("    " + outcome.problems[i]);
  }

  void run_mutants() {
    const std::vector<Mutant> reached = keep_only(
        in_build_, [&](const Mutant& m) { return reached_.count(m.id) > 0; },
        MutantStatus::no_coverage, "no gate reaches it (the baseline's coverage)");
    std::vector<Mutant> to_run;
    for (const auto& m : reached) {
      if (const MutantOutcome* known = journaled(m, JournalPhase::gates)) {
        r_.mutants.push_back(*known);
        ++r_.from_journal;
      } else {
        to_run.push_back(m);
      }
    }
    o_.progress(fmt::format("{} mutants to run, {} at once; {} NoCoverage{}", to_run.size(),
                            o_.parallel, in_build_.size() - reached.size(),
                            r_.from_journal
                                ? fmt::format("; {} done already (the journal)", r_.from_journal)
                                : std::string()));
    std::vector<MutantOutcome> outcomes(to_run.size());
    std::size_t done = 0;
    parallel_for(static_cast<int>(to_run.size()), o_.parallel, [&](int i) {
      throw_if_interrupted();
      const Mutant& m = to_run[static_cast<std::size_t>(i)];
      MutantOutcome out = judge_mutant(m, run_child(m), digests_);
      const std::lock_guard<std::mutex> lock(progress_mutex_);
      record(out, JournalPhase::gates);
      o_.progress(fmt::format(
          "[{}/{}] m{:<4} {}:{} {:<10} {:<12} {}", ++done, to_run.size(), m.id, m.file, m.line,
          m.op, mutant_status_name(out.status),
          out.status == MutantStatus::killed
              ? fmt::format("{} {} ({:.1f} s)", out.killer_gate, out.killer_term, out.seconds)
              : fmt::format("{} ({:.1f} s)", out.reason, out.seconds)));
      outcomes[static_cast<std::size_t>(i)] = std::move(out);
    });
    for (auto& out : outcomes) r_.mutants.push_back(std::move(out));
  }

  // The sanitizer pass: every undetected mutant (Survived, NoEffect) again,
  // under a sanitizer that sees what the numbers cannot: a read or write past
  // a matrix or an array, a race. The sanitized baseline (no mutant) must be
  // clean first, or the pass stops with the problem.
  void sanitize() {
    MutateResult::SanitizePass& pass = r_.sanitize;
    pass.ran = true;
    std::vector<std::size_t> undetected;
    for (std::size_t i = 0; i < r_.mutants.size(); ++i)
      if (r_.mutants[i].status == MutantStatus::survived ||
          r_.mutants[i].status == MutantStatus::no_effect)
        undetected.push_back(i);
    for (const auto& backend : o_.backends)
      for (const auto& g : campaign_gates(o_.fixtures_dir, backend, o_.sanitize_globs))
        if (std::find(r_.gates.begin(), r_.gates.end(), g.name) != r_.gates.end())
          pass.gates.push_back(g.name);
    if (pass.gates.empty()) {
      pass.problem = "--sanitize-gates: no gate of the run matches";
      o_.progress("sanitizer pass: " + pass.problem);
      return;
    }
    Sanitizer memory, barrier;
    const auto started = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    if (cuda()) {
      pass.tools = "compute-sanitizer memcheck; racecheck on barrier deletions";
      memory = {"memcheck",
                {o_.compute_sanitizer, "--tool", "memcheck", "--error-exitcode",
                 std::to_string(kSanitizerExitCode), "--print-limit", "4"},
                binary_,
                pass.gates,
                o_.timeout_s * 40};
      barrier = memory;
      barrier.tool = "racecheck";
      barrier.prefix[2] = "racecheck";
    } else {
      pass.tools = "AddressSanitizer + UndefinedBehaviorSanitizer, Eigen's asserts on";
      o_.progress(fmt::format("sanitizer pass: building under {}", pass.tools));
      std::vector<std::string> defines = this->defines();
      defines.insert(defines.end(),
                     {"-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=all "
                      "-fno-omit-frame-pointer",
                      "-DCMAKE_CXX_FLAGS_RELEASE=-O3",  // no NDEBUG: Eigen checks its bounds
                      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"});
      const Build b = build_deltaproof(tree(), scratch() / "build-sanitize", defines, o_.build_jobs,
                                       o_.build_timeout_s);
      pass.build_seconds = b.result.seconds;
      if (!b.ok()) {
        pass.problem = fmt::format("the sanitizer build failed: {}", b.result.tail(8));
        o_.progress("  " + pass.problem);
        return;
      }
      memory = {"asan",
                {fmt::format("ASAN_OPTIONS=detect_leaks=0:exitcode={}", kSanitizerExitCode),
                 fmt::format("UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode={}",
                             kSanitizerExitCode)},
                b.binary.string(),
                pass.gates,
                o_.timeout_s * 10};
    }
    // the baseline under each tool the pass uses
    bool barriers = false;
    for (std::size_t i : undetected) barriers |= deletes_barrier(r_.mutants[i].mutant);
    for (const Sanitizer* s : {&memory, cuda() && barriers ? &barrier : nullptr}) {
      if (!s) continue;
      o_.progress(
          fmt::format("sanitizer pass: baseline under {}, {} gates", s->tool, s->gates.size()));
      const MutantRun clean = run_child(Mutant{}, s);
      const MutantOutcome judged = judge_mutant(Mutant{}, clean, {});
      if (!clean.finding.empty() || judged.status != MutantStatus::no_effect) {
        pass.problem = fmt::format("the baseline under {} is not clean: {}", s->tool,
                                   clean.finding.empty() ? judged.reason : clean.finding);
        o_.progress("  " + pass.problem);
        pass.seconds = elapsed();
        return;
      }
    }
    pass.baseline_clean = true;
    o_.progress(fmt::format("sanitizer pass: {} undetected mutants again, under {}",
                            undetected.size(), pass.tools));
    std::size_t done = 0;
    std::vector<std::size_t> to_run;
    for (std::size_t i : undetected) {
      if (const MutantOutcome* known = journaled(r_.mutants[i].mutant, JournalPhase::sanitize))
        r_.mutants[i] = *known;
      else
        to_run.push_back(i);
    }
    if (to_run.size() < undetected.size())
      o_.progress(
          fmt::format("  {} done already (the journal)", undetected.size() - to_run.size()));
    parallel_for(static_cast<int>(to_run.size()), o_.parallel, [&](int k) {
      throw_if_interrupted();
      MutantOutcome& out = r_.mutants[to_run[static_cast<std::size_t>(k)]];
      MutantOutcome judged = judge_sanitized(out, run_child(out.mutant, &memory), memory.tool);
      if (judged.status != MutantStatus::killed && cuda() && deletes_barrier(out.mutant))
        judged = judge_sanitized(judged, run_child(out.mutant, &barrier), barrier.tool);
      const std::lock_guard<std::mutex> lock(progress_mutex_);
      record(judged, JournalPhase::sanitize);
      o_.progress(
          fmt::format("[{}/{}] m{:<4} {}:{} {:<12} {}", ++done, to_run.size(), out.mutant.id,
                      out.mutant.file, out.mutant.line, mutant_status_name(judged.status),
                      judged.sanitizer_finding.empty() ? "clean" : judged.sanitizer_finding));
      out = std::move(judged);
    });
    for (std::size_t i : undetected) pass.killed += r_.mutants[i].status == MutantStatus::killed;
    pass.rerun = static_cast<int>(undetected.size());
    pass.seconds = elapsed();
    o_.progress(fmt::format("sanitizer pass: {} of {} killed ({:.0f} s)", pass.killed, pass.rerun,
                            pass.seconds));
  }

  static bool deletes_barrier(const Mutant& m) {
    return m.op == "delete" && (m.original.find("__syncthreads") != std::string::npos ||
                                m.original.find("__syncwarp") != std::string::npos ||
                                m.original.find("sync(") != std::string::npos);
  }

  // How a child runs under a sanitizer: its tool's name, the words before
  // the binary (environment, compute-sanitizer), the binary, the gates.
  struct Sanitizer {
    std::string tool;
    std::vector<std::string> prefix;
    std::string binary;
    std::vector<std::string> gates;
    double timeout_s = 0.0;
  };

  // The child `gate run` of mutant `m` (0: none), under `sanitizer` when given.
  MutantRun run_child(const Mutant& m, const Sanitizer* sanitizer = nullptr) {
    const fs::path report =
        scratch() / fmt::format("m{}{}.json", m.id, sanitizer ? "-" + sanitizer->tool : "");
    // the children share the cores
    const int threads = std::max(1, resolve_threads(0) / std::max(1, o_.parallel));
    std::vector<std::string> argv = {"env", fmt::format("DELTAPROOF_THREADS={}", threads)};
    if (sanitizer) argv.insert(argv.end(), sanitizer->prefix.begin(), sanitizer->prefix.end());
    for (auto& word : gate_run(report, sanitizer ? sanitizer->binary : std::string()))
      argv.push_back(std::move(word));
    if (m.id > 0) argv.insert(argv.end(), {"--mutant", std::to_string(m.id)});
    if (!o_.all_gates && m.id > 0) argv.push_back("--first-red");
    const std::vector<std::string>& gates = sanitizer ? sanitizer->gates : r_.gates;
    argv.insert(argv.end(), gates.begin(), gates.end());
    const double timeout_s = sanitizer ? sanitizer->timeout_s : o_.timeout_s;
    const ProcessResult p = run_process(argv, timeout_s);
    MutantRun run;
    if (sanitizer) run.finding = sanitizer_finding(p.log, p.exit_code, p.signal);
    run.exit_code = p.exit_code;
    run.signal = p.signal;
    run.timed_out = p.timed_out;
    run.seconds = p.seconds;
    run.timeout_s = timeout_s;
    run.tail = p.tail(4);
    std::error_code missing;
    if (!p.timed_out && fs::exists(report, missing)) {
      const std::string problem = [&] {
        try {
          gates::read_report_file(report);  // validated as `report show` reads it
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      }();
      if (problem.empty())
        run.report = json::parse(read_text(report));
      else
        run.report_problem = "an unreadable report (" + problem + ")";
      fs::remove(report, missing);
    }
    return run;
  }
};

}  // namespace

MutateResult run_mutate(const MutateOptions& options) {
  MutateResult result;
  result.source_top = source_top(options.source_dir);
  if (!fs::exists(result.source_top / ".git"))
    throw InputError(fmt::format(
        "falsify mutate needs a git checkout (it mutates a scratch worktree of HEAD); {} is none",
        result.source_top.string()));
  for (const auto& file : options.files)
    if (!fs::is_regular_file(result.source_top / file))
      throw InputError(fmt::format("falsify mutate: {} is not a file under {}", file,
                                   result.source_top.string()));
  if (options.files.empty()) throw InputError("falsify mutate: no file to mutate");
  run_tree_checked(result, [&] {
    Mutator mutator(options, result);
    mutator.run();
  });
  return result;
}

// ---- the report -------------------------------------------------------------

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
