// core/process.hpp — the one way deltaproof runs another process: a gate's
// replays, a campaign's children (each fault in a process of its own: a crash
// or a hang is a RuntimeError or a Timeout of that fault, never the campaign's
// end), builds, git. Each child runs in its own process group so a timeout or
// an interrupt stops everything it started. SIGINT and SIGTERM are caught (once
// catch_interrupts() is called): a campaign stops its child, cleans up
// (removes its scratch worktree) and exits 130, leaving the user's tree as it
// found it.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace deltaproof {

struct ProcessResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  double seconds = 0.0;
  std::string log;  // stdout and stderr together
  std::string tail(std::size_t lines) const;
};

enum class Interrupts { honoured, ignored };
// What the log holds: stdout and stderr together, or stdout alone (stderr to
// /dev/null: output read as data, where a warning must not count as data).
enum class Capture { both, stdout_only };

// Runs argv[0] (found on PATH when it has no slash) with stdout and stderr
// captured; kills the process group after `timeout_s` (0: no limit). Throws
// Interrupted when SIGINT or SIGTERM arrived while it ran, unless interrupts
// are ignored (cleanup that must run during an interrupt). Throws InputError
// when the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s = 0.0,
                          const std::filesystem::path& cwd = {},
                          Interrupts interrupts = Interrupts::honoured,
                          Capture capture = Capture::both);

// Whether an executable of this name is on PATH.
bool on_path(const std::string& name);

// Thrown after SIGINT or SIGTERM, once the running child has been stopped.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted (SIGINT or SIGTERM)") {}
};

// Installs the SIGINT/SIGTERM handlers (idempotent); throw_if_interrupted()
// turns a pending signal into Interrupted at a safe point.
void catch_interrupts();
void throw_if_interrupted();
// After an Interrupted is handled: lets the cleanup and the final tree check
// run their own child processes.
void clear_interrupt();

}  // namespace deltaproof
