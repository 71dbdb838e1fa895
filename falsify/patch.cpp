// falsify/patch.cpp — see patch.hpp.
#include "falsify/patch.hpp"

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/process.hpp"
#include "falsify/tree.hpp"
#include "gates/report.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using nlohmann::json;

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
  PatchResult result;
  const fs::path patch = fs::absolute(options.patch);
  if (!fs::is_regular_file(patch))
    throw InputError(fmt::format("{}: no such patch file", options.patch.string()));
  const std::string diff = read_text(patch);
  result.site = first_hunk(diff);
  if (result.site.file.empty())
    throw InputError(fmt::format(
        "{}: not a unified diff (no '+++ b/FILE' line); make one with git diff", patch.string()));
  result.source_top = git_toplevel(options.source_dir);

  CatalogFault hypothesis;
  hypothesis.id = patch.filename().string();
  hypothesis.cls = "patch";
  for (const auto& g : options.expect_red) hypothesis.red.push_back({g, "", "any", {}});
  for (const auto& g : options.expect_green) hypothesis.green.push_back({g, "", "any", {}});

  run_tree_checked(result, [&] {
    // the baselines run with this (unpatched) build
    auto gates_of = run_baselines(options.backends, options.fixtures_dir, options.gate_globs,
                                  options.progress, result);
    if (!result.baseline_ok) return;
    ScratchWorktree worktree(result.source_top);
    result.head = worktree.head();
    const fs::path tree = worktree.tree();
    options.progress(
        fmt::format("scratch worktree of HEAD {} at {}", result.head.substr(0, 12), tree.string()));
    FaultOutcome failed{hypothesis.id, "patch", "-"};
    const ProcessResult apply = run_process(
        {"git", "-C", tree.string(), "apply", "--whitespace=nowarn", patch.string()}, 120);
    if (apply.exit_code != 0) {
      failed.status = FaultStatus::compile_error;
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
      const Build built =
          build_deltaproof(tree, build, {std::string("-DDELTAPROOF_CUDA=") + (cuda ? "ON" : "OFF")},
                           options.build_jobs, options.timeout_s);
      if (!built.ok()) {
        failed.status = built.result.timed_out ? FaultStatus::timeout : FaultStatus::compile_error;
        failed.reason = fmt::format("the patched tree does not build: {}", built.result.tail(8));
        result.outcomes.push_back(failed);
      } else {
        const std::string binary = built.binary.string();
        for (const auto& backend : options.backends) {
          FaultOutcome o{hypothesis.id, "patch", backend};
          options.progress(fmt::format("running {} gates of {} with the patched build",
                                       gates_of[backend].size(), backend));
          if (run_gates_in_child(binary, tree / "fixtures", "", gates_of[backend],
                                 worktree.scratch() / ("gates-" + backend + ".json"),
                                 options.timeout_s, o))
            judge(hypothesis, o);
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
  });
  return result;
}

json patch_report(const PatchResult& result, const PatchOptions& options,
                  const std::string& command) {
  const json header =
      report_header(result, command, "patch " + options.patch.string() + " on HEAD " + result.head,
                    options.backends, "1/1", {}, result.killed());
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
