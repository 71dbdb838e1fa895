// core/process.cpp — see process.hpp.
#include "core/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"

extern char** environ;

namespace deltaproof {
namespace fs = std::filesystem;

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) { g_interrupted = 1; }
}  // namespace

void catch_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

void throw_if_interrupted() {
  if (g_interrupted) throw Interrupted();
}

void clear_interrupt() { g_interrupted = 0; }

std::string ProcessResult::tail(std::size_t lines) const {
  if (log.empty()) return log;  // a child killed before it printed (a timeout)
  std::size_t at = log.size();
  for (std::size_t n = 0; n <= lines && at > 0;) {
    at = log.rfind('\n', at - 1);
    if (at == std::string::npos) return log;
    ++n;
  }
  return log.substr(at + 1);
}

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream folders(path);
  std::string folder;
  while (std::getline(folders, folder, ':'))
    if (!folder.empty() && ::access((fs::path(folder) / name).c_str(), X_OK) == 0) return true;
  return false;
}

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s,
                          const fs::path& cwd, Interrupts interrupts, Capture capture) {
  const bool honoured = interrupts == Interrupts::honoured;
  if (honoured) throw_if_interrupted();
  char log_template[] = "/tmp/deltaproof-child-XXXXXX";
  const int log_fd = ::mkstemp(log_template);
  if (log_fd < 0) throw InputError("cannot create a temporary log file in /tmp");
  const std::string log_path = log_template;

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDOUT_FILENO);
  if (capture == Capture::both)
    posix_spawn_file_actions_adddup2(&actions, log_fd, STDERR_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group: a kill reaches its children too
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const auto start = std::chrono::steady_clock::now();
  const int spawned = argv[0].find('/') == std::string::npos
                          ? posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ)
                          : posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(log_fd);
  if (spawned != 0) {
    ::unlink(log_path.c_str());
    throw InputError(fmt::format("cannot start {}: {}", argv[0], std::strerror(spawned)));
  }

  ProcessResult result;
  int status = 0;
  bool interrupted = false;
  for (auto pause = std::chrono::milliseconds(1);;
       pause = std::min(pause * 2, decltype(pause)(50))) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if ((honoured && g_interrupted) || (timeout_s > 0 && elapsed > timeout_s)) {
      interrupted = honoured && g_interrupted;
      result.timed_out = !interrupted;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(pause);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  std::ifstream log(log_path);
  std::stringstream text;
  text << log.rdbuf();
  result.log = text.str();
  ::unlink(log_path.c_str());
  if (interrupted) throw Interrupted();
  return result;
}

}  // namespace deltaproof
