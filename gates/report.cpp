// gates/report.cpp — see report.hpp.
#include "gates/report.hpp"

#include <cstdlib>

#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

namespace deltaproof::gates {
namespace {

std::string run_and_read(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 256> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) out += buffer.data();
  ::pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

std::string git_commit() {
  // A copied working tree (the GPU machine) has no .git: the caller names the commit.
  if (const char* named = std::getenv("DELTAPROOF_GIT_COMMIT"); named && *named) {
    const std::string hash = named;
    const bool valid =
        hash.size() == 40 && hash.find_first_not_of("0123456789abcdef") == std::string::npos;
    return valid ? hash + " (from DELTAPROOF_GIT_COMMIT)" : "unknown";
  }
  const std::string dir = DELTAPROOF_SOURCE_DIR;
  const std::string head = run_and_read("git -C '" + dir + "' rev-parse HEAD 2>/dev/null");
  if (head.size() != 40) return "unknown";
  const std::string dirty =
      run_and_read("git -C '" + dir + "' status --porcelain --untracked-files=no 2>/dev/null");
  return dirty.empty() ? head : head + "+dirty";
}

nlohmann::json make_report(const std::vector<GateResult>& results, const std::string& command) {
  char hostname[256] = "unknown";
  ::gethostname(hostname, sizeof hostname - 1);
  struct utsname system {};
  ::uname(&system);
  nlohmann::json gates = nlohmann::json::array();
  int passed = 0, failed = 0, skipped = 0;
  double seconds = 0.0;
  for (const auto& r : results) {
    gates.push_back(r.to_json());
    passed += r.verdict == "pass";
    failed += r.verdict == "fail";
    skipped += r.verdict == "skipped";
    seconds += r.seconds;
  }
  return {{"schema", kReportSchema},
          {"tool", kToolVersion},
          {"git_commit", git_commit()},
          {"created", utc_now()},
          {"host",
           {{"name", hostname},
            {"system", fmt::format("{} {} {}", system.sysname, system.release, system.machine)},
            {"cpus", static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))}}},
          {"device", kernels::device_name()},
          {"command", command},
          {"summary",
           {{"gates", results.size()},
            {"passed", passed},
            {"failed", failed},
            {"skipped", skipped},
            {"seconds", seconds}}},
          {"verdict", failed > 0 ? "fail" : "pass"},
          {"gates", gates}};
}

}  // namespace deltaproof::gates
