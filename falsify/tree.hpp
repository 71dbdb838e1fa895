// falsify/tree.hpp — the user's source tree is never edited: a campaign hashes
// every tracked file before and after (and fails naming any file that changed),
// and ad-hoc patches go to a scratch git worktree that is removed afterwards,
// on success, failure and interrupt alike.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/process.hpp"

namespace deltaproof::falsify {

// The top of the git checkout holding `inside`; throws InputError when there
// is none (or git is missing).
std::filesystem::path git_toplevel(const std::filesystem::path& inside);

// SHA-256 of every file `git ls-files` lists (path relative to the top ->
// hex digest; "missing" for a tracked file that is gone). A copy of the tree
// without .git (the GPU machine's) is walked instead, skipping build* and
// hidden folders.
using TreeHashes = std::map<std::string, std::string>;
TreeHashes hash_tracked_files(const std::filesystem::path& top);
// Copies the working tree at `top` into `to` as it is: the tracked files and
// the untracked ones git does not ignore (every file but build* and hidden
// folders where there is no .git: the GPU machine's copy).
void copy_working_tree(const std::filesystem::path& top, const std::filesystem::path& to);
// The git top of `inside`, or `inside` itself when it is no git checkout.
std::filesystem::path source_top(const std::filesystem::path& inside);
// Sentences naming each file whose hash differs: "kernels/cpu/chunk.cpp changed".
std::vector<std::string> tree_differences(const TreeHashes& before, const TreeHashes& after);

// Configures `source` into `build_dir` (Release, no tests or benchmarks, plus
// `defines`: "-DDELTAPROOF_SYNC_FAULT=...") and builds its deltaproof with
// `jobs` jobs, each step stopped after `timeout_s`. The result is the failing
// step's, else the build's, with both steps' seconds; the binary is
// build_dir/bin/deltaproof. keep_going: the build goes on past a failed
// translation unit (a mutation run's schemata: every refused mutant in one round).
struct Build {
  ProcessResult result;
  std::filesystem::path binary;
  bool ok() const { return result.exit_code == 0 && !result.timed_out; }
};
Build build_deltaproof(const std::filesystem::path& source, const std::filesystem::path& build_dir,
                       const std::vector<std::string>& defines, int jobs, double timeout_s,
                       bool keep_going = false);

// A fresh folder /tmp/<prefix>-XXXXXX, removed with everything in it when
// this object goes.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& prefix);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A detached git worktree of HEAD in a fresh folder under /tmp, removed (and
// pruned from the repository's worktree list) when this object goes.
class ScratchWorktree {
 public:
  explicit ScratchWorktree(const std::filesystem::path& top);
  ~ScratchWorktree();
  ScratchWorktree(const ScratchWorktree&) = delete;
  ScratchWorktree& operator=(const ScratchWorktree&) = delete;
  const std::filesystem::path& tree() const { return tree_; }
  const std::filesystem::path& scratch() const { return scratch_.path(); }
  std::string head() const { return head_; }

 private:
  std::filesystem::path top_;
  ScratchFolder scratch_;  // holds tree_; declared first, so it goes after the worktree
  std::filesystem::path tree_;
  std::string head_;
};

}  // namespace deltaproof::falsify
