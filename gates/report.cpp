// gates/report.cpp — see report.hpp.
#include "gates/report.hpp"

#include <cstdlib>

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/process.hpp"

namespace deltaproof::gates {
namespace {

// A program's standard output, trimmed (what it says on stderr is not read);
// "" when it cannot run or exits other than 0.
std::string run_and_read(const std::vector<std::string>& argv) {
  ProcessResult r;
  try {
    r = run_process(argv, 60, {}, Interrupts::honoured, Capture::stdout_only);
  } catch (const InputError&) {
    return "";
  }
  if (r.exit_code != 0) return "";
  std::string out = r.log;
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

namespace {

// A number as to_json wrote it: null stands for NaN or inf (read as inf); a
// field left out reads as `absent`.
double figure(const nlohmann::json& row, const char* key, double absent = 0.0) {
  const auto it = row.find(key);
  if (it == row.end()) return absent;
  if (it->is_null()) return std::numeric_limits<double>::infinity();
  return it->get<double>();
}

std::vector<double> figures(const nlohmann::json& row, const char* key) {
  std::vector<double> out;
  for (const auto& x : row.value(key, nlohmann::json::array()))
    out.push_back(x.is_null() ? std::numeric_limits<double>::infinity() : x.get<double>());
  return out;
}

// The noise model as compare.cpp's to_json wrote it (null: NaN, not judged).
void read_noise(const nlohmann::json& n, TermComparison::Noise& noise) {
  auto value = [](const nlohmann::json& x) { return x.is_number() ? x.get<double>() : NAN; };
  auto scalar = [&](const char* key) {
    const auto it = n.find(key);
    return it == n.end() ? NAN : value(*it);
  };
  auto list = [&](const char* key) {
    std::vector<double> out;
    for (const auto& x : n.value(key, nlohmann::json::array())) out.push_back(value(x));
    return out;
  };
  auto bands = [&](const char* key) {
    std::vector<std::array<double, 2>> out;
    for (const auto& band : n.value(key, nlohmann::json::array()))
      if (band.is_array() && band.size() == 2) out.push_back({value(band[0]), value(band[1])});
    return out;
  };
  noise.measured = true;
  noise.baseline_rel = scalar("baseline_rel");
  noise.worst_rel = scalar("ensemble_worst_rel");
  noise.alpha = scalar("alpha");
  const nlohmann::json band = n.value("alpha_band", nlohmann::json::array());
  noise.alpha_lo = band.size() == 2 ? value(band[0]) : NAN;
  noise.alpha_hi = band.size() == 2 ? value(band[1]) : NAN;
  noise.alpha_z = scalar("alpha_z");
  noise.correlation = scalar("correlation");
  noise.bias_where = n.value("bias_where", "");
  noise.bias_excess = scalar("bias_excess");
  noise.mde = scalar("min_detectable_scaling");
  noise.member_rel = list("ensemble_rel");
  noise.member_alpha = list("ensemble_alpha");
  noise.chunk_worst_rel = list("per_chunk_ensemble_worst_rel");
  noise.chunk_alpha = list("per_chunk_alpha");
  noise.chunk_band = bands("per_chunk_alpha_band");
  noise.head_alpha = list("per_head_alpha");
  noise.head_band = bands("per_head_alpha_band");
}

TermComparison read_term(const nlohmann::json& row) {
  TermComparison t;
  t.term = row.value("term", "");
  t.status = parse_term_status(row.value("status", ""));
  t.rel = figure(row, "rel", std::numeric_limits<double>::infinity());
  t.rms_rel = figure(row, "rms_rel");
  t.abs_max = figure(row, "abs_max");
  t.ref_amax = figure(row, "ref_amax");
  t.worst_index = row.value("worst_index", std::vector<std::int64_t>{});
  t.index_names = row.value("index_names", "");
  t.chunk_rel = figures(row, "per_chunk_rel");
  t.non_finite = row.value("non_finite", 0L);
  t.bar = figure(row, "bar");
  t.margin = figure(row, "margin");
  t.message = row.value("message", "");
  if (const auto d = row.find("diagnosis"); d != row.end() && d->is_object()) {
    t.diagnosis.made = true;
    t.diagnosis.status = parse_term_status(d->value("status", ""));
    t.diagnosis.rel = figure(*d, "rel");
    t.diagnosis.bar = figure(*d, "bar");
    t.diagnosis.margin = figure(*d, "margin");
    t.diagnosis.worst_index = d->value("worst_index", std::vector<std::int64_t>{});
    t.diagnosis.chunk_rel = figures(*d, "per_chunk_rel");
    t.diagnosis.non_finite = d->value("non_finite", 0L);
  }
  if (const auto n = row.find("noise"); n != row.end() && n->is_object()) read_noise(*n, t.noise);
  return t;
}

}  // namespace

GateResult read_gate_result(const nlohmann::json& gate) {
  GateResult r;
  r.name = gate.value("name", "");
  try {
    r.kind = gate.value("kind", "");
    r.op = gate.value("op", "");
    r.backend = gate.value("backend", "");
    r.phase = gate.value("phase", "");
    r.precision = gate.value("precision", "");
    r.verdict = parse_verdict(gate.value("verdict", ""));
    r.reasons = gate.value("reasons", std::vector<std::string>{});
    r.fixture = gate.value("fixture", nlohmann::json::object());
    r.bars = gate.value("bars", nlohmann::json::object());
    r.record.stages = gate.value("execution_record", std::map<std::string, long>{});
    r.required_stages = gate.value("required_stages", std::vector<std::string>{});
    const auto det = gate.value("determinism", nlohmann::json::object());
    r.determinism.repeats = det.value("repeats", 1);
    r.determinism.replays = det.value("replays", 0);
    r.determinism.identical = det.value("identical", true);
    r.determinism.first_difference = det.value("first_difference", "");
    for (const auto& row : gate.value("terms", nlohmann::json::array()))
      r.terms.push_back(read_term(row));
    r.gradients_compared = gate.value("gradients_compared", true);
    r.seconds = figure(gate, "seconds");
    r.outputs_sha256 = gate.value("outputs_sha256", "");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("gate {}: a field of the wrong type: {}", r.name, e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("gate {}: {}", r.name, e.what()));
  }
  return r;
}

std::string git_commit() {
  // A copied working tree (the GPU machine) has no .git: the caller names the commit.
  if (const char* named = std::getenv("DELTAPROOF_GIT_COMMIT"); named && *named) {
    const std::string hash = named;
    const bool valid =
        hash.size() == 40 && hash.find_first_not_of("0123456789abcdef") == std::string::npos;
    return valid ? hash + " (from DELTAPROOF_GIT_COMMIT)" : "unknown";
  }
  const std::string dir = DELTAPROOF_SOURCE_DIR;
  const std::string head = run_and_read({"git", "-C", dir, "rev-parse", "HEAD"});
  if (head.size() != 40) return "unknown";
  const std::string dirty =
      run_and_read({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"});
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
    passed += r.verdict == Verdict::pass;
    failed += r.verdict == Verdict::fail;
    skipped += r.verdict == Verdict::skipped;
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
          {"verdict", verdict_name(failed > 0 ? Verdict::fail : Verdict::pass)},
          {"gates", gates}};
}

std::string report_text(const std::vector<GateResult>& results, const std::string& command) {
  return make_report(results, command).dump(2) + "\n";
}

std::string result_lines(const GateResult& r, const std::string& verdict_word) {
  // Terms holding NaN or inf come first, with their counts: their margin is
  // inf, so "worst by margin" would pass them over. The worst is then taken
  // among the finite terms.
  std::string non_finite;
  const TermComparison* worst = nullptr;
  for (const auto& t : r.terms) {
    if (t.non_finite > 0) {
      non_finite += fmt::format("{}{} in {}", non_finite.empty() ? "" : ", ", t.non_finite, t.term);
      continue;
    }
    if (t.status != TermStatus::not_compared && (!worst || !(t.margin >= worst->margin)))
      worst = &t;
  }
  std::string detail;
  const bool exact =
      !r.terms.empty() && std::all_of(r.terms.begin(), r.terms.end(), [](const auto& t) {
        return t.status == TermStatus::pass && t.rel == 0.0;
      });
  if (r.kind != "oracle" && r.kind != "check") {  // a metamorphic gate's relations
    // bitwise (no bar), but for split-call's splits inside a chunk, held to
    // the oracle's bars, and cuda-chunk's packing, held to its bars against
    // each sequence alone
    const auto held =
        std::count_if(r.terms.begin(), r.terms.end(), [](const auto& t) { return t.bar > 0; });
    const auto total = static_cast<long>(r.terms.size());
    if (total > 0)
      detail = held == 0 ? fmt::format("{} relations, bitwise", total)
               : r.kind == "packing"
                   ? fmt::format("{} relations at the bars, against each sequence alone", total)
                   : fmt::format("{} relations: {} bitwise, {} at the oracle's bars", total,
                                 total - held, held);
  } else if (exact) {
    detail = fmt::format("every term rel = 0: equal to the reference ({} terms)", r.terms.size());
  } else if (!non_finite.empty()) {
    detail = "NaN or inf: " + non_finite;
    if (worst)
      detail += fmt::format("; worst {} rel {} / bar {:.1e}", worst->term, figure_text(worst->rel),
                            worst->bar);
  } else if (worst) {
    detail = fmt::format("worst {} rel {} / bar {:.1e}", worst->term, figure_text(worst->rel),
                         worst->bar);
  }
  if (!r.gradients_compared) detail += " [forward only: no gradient compared]";
  std::string text =
      fmt::format("{} {:<44} {} ({:.2f} s)\n", verdict_word, r.name, detail, r.seconds);
  if (r.verdict != Verdict::pass)
    for (const auto& reason : r.reasons) text += fmt::format("       {}\n", reason);
  return text;
}

std::string check_table(const GateResult& r) {
  // the candidate's error beside its class's same-precision baseline and the bar they give
  std::string text =
      fmt::format("  {:<6} {:<13} {:>9} {:>9} {:>9} {:>7}  {:>10} {:>23}  {:>8}  worst\n", "term",
                  "status", "baseline", "rel", "bar", "margin", "alpha", "allowed band", "min-det");
  for (const auto& t : r.terms)
    text += fmt::format(
        "  {:<6} {:<13} {:>9} {:>9} {:>9} {:>7}  {:>+10.2e} [{:>+10.2e},{:>+10.2e}]  {:>8}  "
        "({}) = ({})\n",
        t.term, status_name(t.status), figure_text(t.noise.baseline_rel), figure_text(t.rel),
        figure_text(t.bar), figure_text(t.margin), t.noise.alpha, t.noise.alpha_lo,
        t.noise.alpha_hi, figure_text(t.noise.mde), t.index_names, fmt::join(t.worst_index, ","));
  return text;
}

}  // namespace deltaproof::gates
