// falsify/tree.cpp — see tree.hpp.
#include "falsify/tree.hpp"

#include <cstdlib>
#include <system_error>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/process.hpp"
#include "core/sha256.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;

namespace {
std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}
}  // namespace

fs::path git_toplevel(const fs::path& inside) {
  if (!on_path("git")) throw InputError("git is not on PATH: the restore check needs it");
  const auto r = run_process({"git", "-C", inside.string(), "rev-parse", "--show-toplevel"}, 60);
  if (r.exit_code != 0)
    throw InputError(
        fmt::format("{} is not inside a git checkout: {}", inside.string(), trimmed(r.tail(2))));
  return trimmed(r.log);
}

fs::path source_top(const fs::path& inside) {
  try {
    return git_toplevel(inside);
  } catch (const InputError&) {
    return fs::absolute(inside);
  }
}

namespace {
// Every regular file under `top` but build* and hidden folders, for a tree
// copied without its .git.
TreeHashes hash_walked_files(const fs::path& top) {
  TreeHashes hashes;
  for (auto it = fs::recursive_directory_iterator(top); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name.rfind(".", 0) == 0)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file())
      hashes[fs::relative(it->path(), top).string()] = sha256_hex(read_file_bytes(it->path()));
  }
  return hashes;
}
}  // namespace

TreeHashes hash_tracked_files(const fs::path& top) {
  if (!fs::exists(top / ".git")) return hash_walked_files(top);
  const auto r = run_process({"git", "-C", top.string(), "ls-files", "-z"}, 120);
  if (r.exit_code != 0)
    throw InputError(fmt::format("git ls-files failed in {}: {}", top.string(), r.tail(3)));
  TreeHashes hashes;
  std::size_t at = 0;
  while (at < r.log.size()) {
    const std::size_t end = r.log.find('\0', at);
    const std::string name = r.log.substr(at, end - at);
    at = end == std::string::npos ? r.log.size() : end + 1;
    if (name.empty()) continue;
    const fs::path file = top / name;
    std::error_code error;
    if (fs::is_symlink(file, error)) {
      hashes[name] = "link:" + fs::read_symlink(file, error).string();
    } else if (!fs::is_regular_file(file, error)) {
      hashes[name] = "missing";
    } else {
      hashes[name] = sha256_hex(read_file_bytes(file));
    }
  }
  return hashes;
}

void copy_working_tree(const fs::path& top, const fs::path& to) {
  std::vector<std::string> names;
  if (fs::exists(top / ".git")) {
    const auto r = run_process(
        {"git", "-C", top.string(), "ls-files", "-z", "--cached", "--others", "--exclude-standard"},
        120);
    if (r.exit_code != 0)
      throw InputError(fmt::format("git ls-files failed in {}: {}", top.string(), r.tail(3)));
    for (std::size_t at = 0, end; at < r.log.size(); at = end + 1) {
      end = r.log.find('\0', at);
      if (end == std::string::npos) end = r.log.size();
      if (end > at) names.push_back(r.log.substr(at, end - at));
    }
  } else {
    for (const auto& [name, hash] : hash_walked_files(top)) names.push_back(name);
  }
  for (const auto& name : names) {
    std::error_code error;
    if (!fs::is_regular_file(top / name, error) || fs::is_symlink(top / name, error)) continue;
    fs::create_directories((to / name).parent_path());
    fs::copy_file(top / name, to / name, fs::copy_options::overwrite_existing);
  }
}

std::vector<std::string> tree_differences(const TreeHashes& before, const TreeHashes& after) {
  std::vector<std::string> out;
  for (const auto& [name, hash] : before) {
    auto it = after.find(name);
    if (it == after.end())
      out.push_back(name + " is no longer tracked");
    else if (it->second != hash)
      out.push_back(name + (it->second == "missing" ? " was deleted" : " changed"));
  }
  for (const auto& [name, hash] : after)
    if (!before.count(name)) out.push_back(name + " is newly tracked");
  return out;
}

ScratchFolder::ScratchFolder(const std::string& prefix) {
  std::string pattern = "/tmp/" + prefix + "-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw InputError("cannot create a scratch folder under /tmp (" + pattern + ")");
  path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code error;
  fs::remove_all(path_, error);
}

ScratchWorktree::ScratchWorktree(const fs::path& top)
    : top_(top), scratch_("deltaproof-patch"), tree_(scratch_.path() / "tree") {
  const auto head = run_process({"git", "-C", top_.string(), "rev-parse", "HEAD"}, 60);
  head_ = trimmed(head.log);
  const auto r = run_process(
      {"git", "-C", top_.string(), "worktree", "add", "--detach", tree_.string(), "HEAD"}, 600);
  if (r.exit_code != 0)
    throw InputError(fmt::format("git worktree add failed in {}: {}", top_.string(), r.tail(3)));
}

ScratchWorktree::~ScratchWorktree() {
  // Runs during an interrupt too: these two must not throw Interrupted, so
  // they ignore a pending one. The scratch folder goes after this body.
  try {
    const std::string top = top_.string();
    run_process({"git", "-C", top, "worktree", "remove", "--force", tree_.string()}, 120, {},
                Interrupts::ignored);
    run_process({"git", "-C", top, "worktree", "prune"}, 120, {}, Interrupts::ignored);
  } catch (...) {
  }
}

Build build_deltaproof(const fs::path& source, const fs::path& build_dir,
                       const std::vector<std::string>& defines, int jobs, double timeout_s,
                       bool keep_going) {
  std::vector<std::string> configure = {"cmake",
                                        "-S",
                                        source.string(),
                                        "-B",
                                        build_dir.string(),
                                        "-DCMAKE_BUILD_TYPE=Release",
                                        "-DDELTAPROOF_TESTS=OFF",
                                        "-DDELTAPROOF_BENCH=OFF"};
  configure.insert(configure.end(), defines.begin(), defines.end());
  Build b;
  b.binary = build_dir / "bin" / "deltaproof";
  b.result = run_process(configure, timeout_s);
  if (b.result.exit_code != 0) return b;
  const double configured = b.result.seconds;
  std::vector<std::string> build = {"cmake",      "--build", build_dir.string(),  "--target",
                                    "deltaproof", "-j",      std::to_string(jobs)};
  if (keep_going) build.insert(build.end(), {"--", "-k"});
  b.result = run_process(build, timeout_s);
  b.result.seconds += configured;
  return b;
}

}  // namespace deltaproof::falsify
