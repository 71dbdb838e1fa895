// falsify/patch.hpp — `deltaproof falsify patch FILE.patch`: an ad-hoc
// hypothesis ("would the gates catch this bug?") tried without touching the
// user's tree. A scratch git worktree of HEAD is made under /tmp, the patch is
// applied there, deltaproof is built there, and the gates run with that
// binary; the worktree is removed afterwards (also on failure and on SIGINT or
// SIGTERM), and the tree's tracked files are hashed before and after.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "falsify/campaign.hpp"
#include "falsify/report.hpp"

namespace deltaproof::falsify {

struct PatchOptions {
  std::filesystem::path patch;
  std::filesystem::path fixtures_dir = "fixtures";  // the baseline's (this build's)
  std::filesystem::path source_dir;
  std::vector<std::string> backends = {"cpu-chunk"};
  std::vector<std::string> gate_globs;    // narrows the gates
  std::vector<std::string> expect_red;    // gate globs that must go red (default: any gate)
  std::vector<std::string> expect_green;  // gate globs that must stay green
  double timeout_s = 1800.0;              // per child (the build included)
  int build_jobs = 2;
  bool keep = false;  // keep the scratch worktree (for a post-mortem); still never the user's tree
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

struct PatchResult : RunRecord {  // outcomes: one per backend (or one CompileError)
  std::string head;
  MutantSite site;             // the first hunk of the patch
  std::string patched_source;  // that file after the patch
  bool killed() const;
};

PatchResult run_patch(const PatchOptions& options);

nlohmann::json patch_report(const PatchResult& result, const PatchOptions& options,
                            const std::string& command);

// The first file a unified diff changes and the first line of its first hunk.
MutantSite first_hunk(const std::string& diff);

}  // namespace deltaproof::falsify
