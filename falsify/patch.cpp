// falsify/patch.cpp — see patch.hpp.
#include "falsify/patch.hpp"

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "falsify/process.hpp"
#include "falsify/tree.hpp"
#include "gates/report.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

MutantSite first_hunk(const std::string& diff) {
  MutantSite site;
  std::istringstream lines(diff);
  std::string line;
  const std::regex hunk(R"(^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@)");
  while (std::getline(lines, line)) {
    if (site.file.empty() && line.rfind("+++ ", 0) == 0) {
      std::string name = line.substr(4);
      if (name.rfind("b/", 0) == 0) name = name.substr(2);
      site.file = name.substr(0, name.find('\t'));
      continue;
    }
    std::smatch match;
    if (!site.file.empty() && std::regex_search(line, match, hunk)) {
      site.line = site.end_line = std::stoi(match[1].str());
      site.column = 1;
      site.end_column = 2;
      site.found = true;
      break;
    }
  }
  return site;
}

bool PatchResult::killed() const {
  return baseline_ok && !interrupted && tree_changes.empty() && !outcomes.empty() &&
         std::all_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return o.ok(); });
}

PatchResult run_patch(const PatchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PatchResult result;
  catch_interrupts();
  const fs::path patch = fs::absolute(options.patch);
  if (!fs::is_regular_file(patch))
    throw InputError(fmt::format("{}: no such patch file", options.patch.string()));
  const std::string diff = read_text(patch);
  result.site = first_hunk(diff);
  if (result.site.file.empty())
    throw InputError(fmt::format(
        "{}: not a unified diff (no '+++ b/FILE' line); make one with git diff", patch.string()));
  result.source_top = git_toplevel(options.source_dir);
  const TreeHashes before = hash_tracked_files(result.source_top);
  result.tracked_files = before.size();

  CatalogFault hypothesis;
  hypothesis.id = patch.filename().string();
  hypothesis.cls = "patch";
  for (const auto& g : options.expect_red) hypothesis.red.push_back({g, "", "any", {}});
  for (const auto& g : options.expect_green) hypothesis.green.push_back({g, "", "any", {}});

  try {
    std::map<std::string, std::vector<gates::Gate>> gates_of;
    for (const auto& backend : options.backends) {
      gates_of[backend] = campaign_gates(options.fixtures_dir, backend, options.gate_globs);
      options.progress(fmt::format("baseline {}: {} gates clean, then poisoned (this build)",
                                   backend, gates_of[backend].size()));
      result.baselines.push_back(run_baseline(backend, gates_of[backend], options.fixtures_dir));
      const auto& b = result.baselines.back();
      options.progress(fmt::format("  clean {}/{} green, poison {}/{} red{}", b.clean_green,
                                   b.gates, b.poison_red, b.gates, b.ok() ? "" : ": FAILED"));
      result.baseline_ok = result.baseline_ok && b.ok();
    }
    if (result.baseline_ok) {
      ScratchWorktree worktree(result.source_top);
      result.head = worktree.head();
      const fs::path tree = worktree.tree();
      options.progress(fmt::format("scratch worktree of HEAD {} at {}", result.head.substr(0, 12),
                                   tree.string()));
      FaultOutcome failed{hypothesis.id, "patch", "-"};
      const ProcessResult apply = run_process(
          {"git", "-C", tree.string(), "apply", "--whitespace=nowarn", patch.string()}, 120);
      if (apply.exit_code != 0) {
        failed.status = "CompileError";
        failed.reason = fmt::format("the patch does not apply to HEAD {}: {}",
                                    result.head.substr(0, 12), apply.tail(3));
        result.outcomes.push_back(failed);
      } else {
        result.patched_source = read_text(tree / result.site.file);
        const fs::path build = tree / "build-patch";
        bool cuda = false;
        for (const auto& b : options.backends) cuda = cuda || b.rfind("cuda", 0) == 0;
        options.progress(fmt::format("building the patched tree ({} jobs, CUDA {}) ...",
                                     options.build_jobs, cuda ? "on" : "off"));
        ProcessResult built = run_process(
            {"cmake", "-S", tree.string(), "-B", build.string(), "-DCMAKE_BUILD_TYPE=Release",
             "-DDELTAPROOF_TESTS=OFF", "-DDELTAPROOF_BENCH=OFF",
             std::string("-DDELTAPROOF_CUDA=") + (cuda ? "ON" : "OFF")},
            options.timeout_s);
        if (built.exit_code == 0)
          built = run_process({"cmake", "--build", build.string(), "--target", "deltaproof", "-j",
                               std::to_string(options.build_jobs)},
                              options.timeout_s);
        if (built.exit_code != 0) {
          failed.status = built.timed_out ? "Timeout" : "CompileError";
          failed.reason = fmt::format("the patched tree does not build: {}", built.tail(8));
          result.outcomes.push_back(failed);
        } else {
          const std::string binary = (build / "bin" / "deltaproof").string();
          for (const auto& backend : options.backends) {
            FaultOutcome o{hypothesis.id, "patch", backend};
            const fs::path report = worktree.scratch() / ("gates-" + backend + ".json");
            std::vector<std::string> argv = {
                binary,     "gate",         "run", "--fixtures", (tree / "fixtures").string(),
                "--report", report.string()};
            for (const auto& g : gates_of[backend]) argv.push_back(g.name);
            options.progress(fmt::format("running {} gates of {} with the patched build",
                                         gates_of[backend].size(), backend));
            const ProcessResult r = run_process(argv, options.timeout_s);
            o.seconds = r.seconds;
            std::ifstream in(report);
            if (r.timed_out) {
              o.status = "Timeout";
              o.reason = "the gate run passed the time limit";
            } else if ((r.exit_code != 0 && r.exit_code != 1) || !in) {
              o.status = "RuntimeError";
              o.reason = fmt::format("the gate run exited {} (signal {}): {}", r.exit_code,
                                     r.signal, r.tail(4));
            } else {
              o.outcomes = gate_outcomes(json::parse(in));
              judge(hypothesis, o);
            }
            result.outcomes.push_back(o);
          }
        }
      }
      if (options.keep) {
        const fs::path kept = fs::path("/tmp") / ("deltaproof-kept-" + result.head.substr(0, 12));
        std::error_code error;
        fs::remove_all(kept, error);
        fs::rename(tree, kept, error);
        options.progress(error ? "could not keep the worktree: " + error.message()
                               : "kept the patched tree at " + kept.string());
      }
    }
  } catch (const Interrupted&) {
    result.interrupted = true;
    clear_interrupt();  // the tree check below runs git
  }
  result.tree_changes = tree_differences(before, hash_tracked_files(result.source_top));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

json patch_report(const PatchResult& result, const PatchOptions& options,
                  const std::string& command) {
  json header = gates::make_report({}, command);
  header.erase("gates");
  header.erase("summary");
  header.erase("verdict");
  header["schema"] = kFalsifyReportFormat;
  header["catalog"] = "patch " + options.patch.string() + " on HEAD " + result.head;
  header["backends"] = options.backends;
  header["shard"] = "1/1";
  json baselines = json::array();
  for (const auto& b : result.baselines)
    baselines.push_back({{"backend", b.backend},
                         {"gates", b.gates},
                         {"clean_green", b.clean_green},
                         {"poison_red", b.poison_red},
                         {"ok", b.ok()},
                         {"problems", b.problems}});
  header["baseline"] = {{"ok", result.baseline_ok}, {"backends", baselines}};
  header["tree"] = {{"top", result.source_top.string()},
                    {"tracked_files", result.tracked_files},
                    {"unchanged", result.tree_changes.empty()},
                    {"changes", result.tree_changes}};
  header["separation"] = json::array();
  std::map<std::string, int> counts;
  for (const auto& o : result.outcomes) ++counts[o.status];
  header["summary"] = {{"faults", result.outcomes.size()},
                       {"statuses", counts},
                       {"weak_gates", 0},
                       {"unfalsified_gates", 0},
                       {"interrupted", result.interrupted},
                       {"seconds", result.seconds}};
  header["verdict"] = result.killed() ? "pass" : "fail";
  json expected = {{"red", options.expect_red.empty() ? std::vector<std::string>{"any gate"}
                                                      : options.expect_red},
                   {"green", options.expect_green}};
  std::vector<ReportMutant> mutants;
  for (const auto& o : result.outcomes)
    mutants.push_back({o, "patch " + options.patch.filename().string(), expected, result.site,
                       result.patched_source});
  return stryker_report(result.source_top, mutants, header);
}

}  // namespace deltaproof::falsify
