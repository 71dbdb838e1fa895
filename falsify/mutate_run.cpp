// falsify/mutate_run.cpp — `falsify mutate`'s run (see mutate.hpp, steps 1
// to 6): the scratch tree, the schemata's build, the baseline, each mutant's
// child `gate run --mutant ID`, the sanitizer pass, and the tree checked.
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
#include "core/parallel.hpp"
#include "core/process.hpp"
#include "falsify/report.hpp"
#include "falsify/tree.hpp"
#include "gates/report.hpp"
#include "gates/report_file.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using nlohmann::json;

bool MutateResult::passed() const {
  return baseline_ok && !interrupted && tree_changes.empty() && sanitize.problem.empty();
}

namespace {

constexpr int kMaxBuildRounds = 8;

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

}  // namespace deltaproof::falsify
