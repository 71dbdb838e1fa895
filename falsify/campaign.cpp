// falsify/campaign.cpp — see campaign.hpp.
#include "falsify/campaign.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/names.hpp"
#include "core/process.hpp"
#include "falsify/tree.hpp"
#include "gates/report.hpp"
#include "gates/report_file.hpp"
#include "gates/runner.hpp"
#include "kernels/backend.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int spec_int(const json& fixture, const char* key) {
  if (!fixture.is_object()) return 0;
  const json spec = fixture.value("spec", json::object());
  if (!spec.contains(key)) return 0;
  const json& v = spec[key];
  return v.is_string() ? std::stoi(v.get<std::string>()) : v.get<int>();
}

// The term a row speaks of: "dk" for an oracle gate's "dk", and for a
// metamorphic relation's label ("dk split at t=16") its first word.
std::string term_of(const std::string& label) { return label.substr(0, label.find(' ')); }

// A kernel whose every output is NaN: the poison baseline. It runs the real
// kernel first, so the execution record (path evidence) is the real one.
class PoisonedBackend : public kernels::Backend {
 public:
  explicit PoisonedBackend(const kernels::Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::string description() const override { return inner_.description() + " (poisoned)"; }
  void run(const kernels::KernelShape& shape, const kernels::Buffers& inputs, kernels::Phase phase,
           kernels::Buffers& outputs, kernels::ExecutionRecord& record) const override {
    inner_.run(shape, inputs, phase, outputs, record);
    for (auto& [name, values] : outputs) std::fill(values.begin(), values.end(), std::nanf(""));
  }

 private:
  const kernels::Backend& inner_;
};

bool selector_matches(const Selector& s, const GateOutcome& g) {
  return gates::glob_match(s.gates, g.name) &&
         (s.except.empty() || !gates::glob_match(s.except, g.name)) &&
         fixture_class_matches(s.fixtures, g.fixture);
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return json::parse(in);
  } catch (const json::parse_error&) {
    return nullptr;
  }
}

}  // namespace

namespace {
constexpr std::pair<FaultStatus, std::string_view> kFaultStatusNames[] = {
    {FaultStatus::killed, "Killed"},
    {FaultStatus::survived, "Survived"},
    {FaultStatus::killed_wrong_term, "KilledWrongTerm"},
    {FaultStatus::green_broken, "GreenBroken"},
    {FaultStatus::compile_error, "CompileError"},
    {FaultStatus::runtime_error, "RuntimeError"},
    {FaultStatus::timeout, "Timeout"},
    {FaultStatus::ignored, "Ignored"}};
}  // namespace

std::string_view status_name(FaultStatus status) { return name_of(kFaultStatusNames, status); }
FaultStatus parse_fault_status(std::string_view name) {
  return value_of(kFaultStatusNames, name, "fault status");
}

GateOutcome gate_outcome(const gates::GateResult& g) {
  GateOutcome o;
  o.name = g.name;
  o.kind = g.kind;
  o.phase = g.phase;
  o.fixture.T = spec_int(g.fixture, "T");
  o.fixture.chunk = spec_int(g.fixture, "chunk");
  o.fixture.K = spec_int(g.fixture, "K");
  o.fixture.V = spec_int(g.fixture, "V");
  o.fixture.B = spec_int(g.fixture, "B");
  o.fixture.H = spec_int(g.fixture, "H");
  const json spec =
      g.fixture.is_object() ? g.fixture.value("spec", json::object()) : json::object();
  o.fixture.zero_h0 = spec.value("h0", "") == "zero" || spec.value("regime", "") == "edge";
  o.fixture.HV = spec_int(g.fixture, "HV");
  if (spec.contains("cu_seqlens") && spec["cu_seqlens"].is_array()) {
    const auto cu = spec["cu_seqlens"].get<std::vector<std::int64_t>>();
    for (std::size_t n = 1; n < cu.size(); ++n) o.fixture.lengths.push_back(cu[n] - cu[n - 1]);
  }
  o.red = g.verdict == gates::Verdict::fail;
  o.skipped = g.verdict == gates::Verdict::skipped;
  if (!g.reasons.empty()) o.reason = g.reasons.front();
  o.error = o.red ? -1.0 : 0.0;
  for (const auto& t : g.terms) {
    const std::string term = term_of(t.term);
    // a figure a report cannot hold as a number (NaN, inf) counts as unbounded
    const double rel = std::isfinite(t.rel) ? t.rel : kInf;
    if (t.status == gates::TermStatus::pass) {
      // a metamorphic relation is bitwise: its clean error is 0 (its "moved"
      // terms differ on purpose)
      if (o.kind != "oracle") continue;
      if (rel > o.clean_error || o.clean_term.empty()) {
        o.clean_error = std::max(o.clean_error, rel);
        o.clean_term = term;
      }
      continue;
    }
    if (t.status == gates::TermStatus::not_compared && t.diagnosis.made &&
        t.diagnosis.status != gates::TermStatus::pass)
      o.diagnosed_terms.push_back(term);
    if (t.status != gates::TermStatus::fail && t.status != gates::TermStatus::missing &&
        t.status != gates::TermStatus::unresolvable)
      continue;
    if (std::find(o.red_terms.begin(), o.red_terms.end(), term) == o.red_terms.end())
      o.red_terms.push_back(term);
    // NaN or inf in the candidate: the error is unbounded (a bitwise relation
    // on NaN reports no finite difference at all)
    const double error = t.non_finite > 0 ? kInf : rel;
    if (error > o.error) {
      o.error = error;
      o.bar = t.bar;
      o.worst_term = term;
    }
  }
  if (o.red && o.error < 0) {  // red without a red term: path evidence or determinism
    o.error = kInf;
    o.worst_term = "-";
  }
  return o;
}

std::vector<GateOutcome> gate_outcomes(const json& report) {
  std::vector<GateOutcome> out;
  for (const auto& g : report.value("gates", json::array()))
    out.push_back(gate_outcome(gates::read_gate_result(g)));
  return out;
}

// Parses compute-sanitizer's summary: "RACECHECK SUMMARY: N hazards
// displayed (...)" (racecheck) or "ERROR SUMMARY: N errors" (the others; a
// second "ERROR SUMMARY: M errors were not printed" line is not the total).
json sanitizer_summary(const std::string& tool, const std::string& log, int exit_code) {
  const std::regex pattern(tool == "racecheck" ? R"(RACECHECK SUMMARY: (\d+) hazards? displayed.*)"
                                               : R"(ERROR SUMMARY: (\d+) errors?)");
  long count = -1;
  std::string summary = "no summary line in the sanitizer's output";
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch match;
    if (line.find("not printed") != std::string::npos || !std::regex_search(line, match, pattern))
      continue;
    count = std::stol(match[1].str());
    summary = match[0].str();
    break;
  }
  return {{"summary", summary}, {"count", count}, {"exit_code", exit_code}};
}

json FaultOutcome::to_json() const {
  json gate_rows = json::array();
  for (const auto& g : outcomes)
    if (g.red)
      gate_rows.push_back({{"gate", g.name},
                           {"terms", g.red_terms},
                           {"diagnosed_terms", g.diagnosed_terms},
                           {"error", std::isfinite(g.error) ? json(g.error) : json(nullptr)},
                           {"bar", g.bar}});
  auto number = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json broken_statuses = json::object();
  for (const auto& [gate, status] : broken_gates) broken_statuses[gate] = status_name(status);
  return {{"fault", fault},
          {"class", cls},
          {"backend", backend},
          {"status", status_name(status)},
          {"reason", reason},
          {"gate", killer_gate},
          {"term", killer_term},
          {"error", number(killer_error)},
          {"bar", killer_bar},
          {"margin", number(margin)},
          {"margin_text", gates::figure_text(margin)},
          {"red_gates", red_gates},
          {"gates", gates},
          {"broken", broken},
          {"broken_gates", broken_statuses},
          {"sanitizer", sanitizer},
          {"red", gate_rows},
          {"seconds", seconds}};
}

bool CampaignResult::passed() const {
  if (!baseline_ok || interrupted || !tree_changes.empty()) return false;
  return std::all_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return o.ok(); });
}

std::vector<gates::Gate> campaign_gates(const fs::path& fixtures_dir, const std::string& backend,
                                        const std::vector<std::string>& globs) {
  std::vector<gates::Gate> out;
  for (const auto& g : gates::all_gates(fixtures_dir)) {
    if (g.family->backend != backend) continue;
    const bool chosen = globs.empty() || std::any_of(globs.begin(), globs.end(), [&](auto& p) {
                          return gates::glob_match(p, g.name);
                        });
    if (chosen) out.push_back(g);
  }
  if (out.empty())
    throw InputError(fmt::format("no gate of backend '{}' matches {}", backend,
                                 globs.empty() ? "'*'" : fmt::format("{}", fmt::join(globs, " "))));
  return out;
}

std::vector<const CatalogFault*> shard_faults(const Catalog& catalog,
                                              const std::vector<std::string>& ids, int index,
                                              int count) {
  for (const auto& id : ids)
    if (!catalog.find(id)) {
      std::vector<std::string> known;
      for (const auto& f : catalog.faults) known.push_back(f.id);
      throw InputError(fmt::format("unknown fault '{}' (not in {}); the catalog holds: {}", id,
                                   catalog.path.string(), fmt::join(known, ", ")));
    }
  std::vector<const CatalogFault*> chosen, shard;
  for (const auto& f : catalog.faults)
    if (ids.empty() || std::find(ids.begin(), ids.end(), f.id) != ids.end()) chosen.push_back(&f);
  for (std::size_t i = 0; i < chosen.size(); ++i)
    if (static_cast<int>(i % count) == index - 1) shard.push_back(chosen[i]);
  return shard;
}

BaselineOutcome run_baseline(const std::string& backend, const std::vector<gates::Gate>& gates,
                             const fs::path& fixtures_dir) {
  BaselineOutcome b;
  b.backend = backend;
  b.gates = static_cast<int>(gates.size());
  const PoisonedBackend poisoned(kernels::find_backend(backend));
  gates::RunOptions clean_options, poison_options;
  clean_options.fixtures_dir = poison_options.fixtures_dir = fixtures_dir;
  poison_options.backend = &poisoned;
  for (const auto& gate : gates) {
    throw_if_interrupted();
    const gates::GateResult clean = gates::run_gate(gate, clean_options);
    b.clean.push_back(gate_outcome(clean));
    if (clean.passed())
      ++b.clean_green;
    else
      b.problems.push_back(fmt::format("clean: {} is {}: {}", gate.name,
                                       gates::verdict_name(clean.verdict),
                                       clean.reasons.empty() ? "" : clean.reasons.front()));
    const gates::GateResult poison = gates::run_gate(gate, poison_options);
    if (poison.verdict == gates::Verdict::fail)
      ++b.poison_red;
    else
      b.problems.push_back(fmt::format("poison: {} is {} with every output NaN", gate.name,
                                       gates::verdict_name(poison.verdict)));
  }
  return b;
}

bool run_gates_in_child(const std::string& binary, const fs::path& fixtures_dir,
                        const std::string& fault_switch, const std::vector<gates::Gate>& gates,
                        const fs::path& report, double timeout_s, FaultOutcome& o) {
  std::vector<std::string> argv = {
      binary, "gate", "run", "--fixtures", fixtures_dir.string(), "--report", report.string()};
  if (!fault_switch.empty()) {
    argv.push_back("--fault");
    argv.push_back(fault_switch);
  }
  for (const auto& g : gates) argv.push_back(g.name);
  const ProcessResult r = run_process(argv, timeout_s);
  o.seconds += r.seconds;
  if (r.timed_out) {
    o.status = FaultStatus::timeout;
    o.reason = fmt::format("the gate run passed the {:.0f} s limit and was stopped (--timeout)",
                           timeout_s);
    return false;
  }
  std::error_code exists_error;
  const bool has_report = fs::exists(report, exists_error);
  if ((r.exit_code != 0 && r.exit_code != 1) || !has_report) {
    o.status = FaultStatus::runtime_error;
    o.reason = fmt::format("the gate run {} and left {}: {}",
                           r.signal ? fmt::format("died of signal {}", r.signal)
                                    : fmt::format("exited {}", r.exit_code),
                           has_report ? "a report" : "no report", r.tail(4));
    return false;
  }
  try {
    // read as `report show` reads it: validated against the schema, then typed
    o.outcomes.clear();
    for (const auto& gate : gates::read_report_file(report).gates)
      o.outcomes.push_back(gate_outcome(gate));
  } catch (const InputError& e) {
    o.status = FaultStatus::runtime_error;
    o.reason = fmt::format("the gate run's report cannot be read: {}", e.what());
    return false;
  }
  return true;
}

void judge(const CatalogFault& fault, FaultOutcome& o) {
  int stayed_green = 0, green_broken = 0, wrong_term = 0;
  const GateOutcome* killer = nullptr;
  bool killer_expected = false;
  double killer_margin = -1.0;
  o.red_gates = 0;
  o.gates = static_cast<int>(o.outcomes.size());
  for (const auto& g : o.outcomes) {
    std::set<std::string> allowed;
    bool any_term = false, red_expected = false;
    for (const auto& s : fault.red)
      if (selector_matches(s, g)) {
        red_expected = true;
        any_term = any_term || s.terms.empty();
        allowed.insert(s.terms.begin(), s.terms.end());
      }
    const bool green_expected =
        !red_expected && std::any_of(fault.green.begin(), fault.green.end(),
                                     [&](const Selector& s) { return selector_matches(s, g); });
    if (!g.red) {
      if (red_expected) {
        ++stayed_green;
        o.broken.push_back(fmt::format("{} must go red and stayed green", g.name));
        o.broken_gates[g.name] = FaultStatus::survived;
      }
      continue;
    }
    ++o.red_gates;
    o.killed_by.push_back(g.name);
    bool as_expected = red_expected;
    if (red_expected && !any_term) {
      std::vector<std::string> outside;
      for (const auto& t : g.red_terms)
        if (!allowed.count(t)) outside.push_back(t);
      if (!outside.empty() || g.red_terms.empty()) {
        ++wrong_term;
        as_expected = false;
        o.broken_gates[g.name] = FaultStatus::killed_wrong_term;
        o.broken.push_back(fmt::format("{} is red on {}; expected red only on {}", g.name,
                                       g.red_terms.empty()
                                           ? "no term (" + g.reason + ")"
                                           : fmt::format("{}", fmt::join(g.red_terms, ", ")),
                                       fmt::join(allowed, ", ")));
      }
    }
    if (green_expected) {
      ++green_broken;
      o.broken.push_back(fmt::format("{} must stay green and went red: {}", g.name, g.reason));
      o.broken_gates[g.name] = FaultStatus::green_broken;
    }
    // The killer named in the report: of the gates the catalog expects red,
    // the one the fault cleared its bar by least (the margin that matters);
    // where none is expected red, the most decisive red gate.
    const double margin = g.bar > 0 ? g.error / g.bar : kInf;
    const bool closer = as_expected ? margin < killer_margin : margin > killer_margin;
    if (!killer || (as_expected && !killer_expected) ||
        (as_expected == killer_expected && closer)) {
      killer = &g;
      killer_expected = as_expected;
      killer_margin = margin;
    }
  }
  if (killer) {
    o.killer_gate = killer->name;
    o.killer_term = killer->worst_term;
    o.killer_error = killer->error;
    o.killer_bar = killer->bar;
    o.margin = killer_margin;
  }
  std::string summary = fmt::format("{} of {} gates red", o.red_gates, o.gates);
  if (o.red_gates == 0 && !fault.sanitizer) {
    o.status = FaultStatus::survived;
    o.reason = fmt::format("no gate went red ({} gates ran)", o.gates);
  } else if (stayed_green > 0) {
    o.status = FaultStatus::survived;
    o.reason = fmt::format("{}; {} gates the catalog expects red stayed green, first {}", summary,
                           stayed_green, o.broken.front());
  } else if (green_broken > 0) {
    o.status = FaultStatus::green_broken;
    o.reason =
        fmt::format("{}; {} gates the catalog expects green went red", summary, green_broken);
  } else if (wrong_term > 0) {
    o.status = FaultStatus::killed_wrong_term;
    o.reason = fmt::format("{}; {} red on terms the catalog does not expect", summary, wrong_term);
  } else {
    o.status = FaultStatus::killed;
    o.reason = killer ? fmt::format(
                            "{}; every expectation held; killed by {} on {} (rel {} / "
                            "bar {:.1e})",
                            summary, o.killer_gate, o.killer_term,
                            gates::figure_text(o.killer_error), o.killer_bar)
                      : summary + "; every expectation held";
  }
}

namespace {

struct Runner {
  Runner(const Catalog& catalog_in, const CampaignOptions& options_in, fs::path top_in)
      : catalog(catalog_in), options(options_in), top(std::move(top_in)) {}
  const Catalog& catalog;
  const CampaignOptions& options;
  fs::path top;
  ScratchFolder scratch{"deltaproof-falsify"};               // child reports
  std::map<std::string, std::vector<gates::Gate>> gates_of;  // backend -> its campaign gates
  int child = 0;

  bool run_gates(const std::string& binary, const std::string& fault_switch,
                 const std::string& backend, FaultOutcome& o) {
    return run_gates_in_child(binary, options.fixtures_dir, fault_switch, gates_of.at(backend),
                              scratch.path() / fmt::format("gates-{}.json", child++),
                              options.timeout_s, o);
  }

  // The deltaproof binary of a sync fault: prebuilt (--sync-binary) or built here.
  std::string sync_binary(const CatalogFault& fault, FaultOutcome& o) {
    if (auto it = options.sync_binaries.find(fault.id); it != options.sync_binaries.end())
      return it->second;
    const fs::path dir = options.sync_build_root / ("build-sync-" + fault.id);
    options.progress(fmt::format("    building {} with -DDELTAPROOF_SYNC_FAULT={} in {}", fault.id,
                                 fault.id, dir.string()));
    const Build build = build_deltaproof(top, dir, {"-DDELTAPROOF_SYNC_FAULT=" + fault.id},
                                         options.build_jobs, options.timeout_s);
    o.seconds += build.result.seconds;
    if (!build.ok()) {
      o.status = build.result.timed_out ? FaultStatus::timeout : FaultStatus::compile_error;
      o.reason = fmt::format("the {} build failed: {}", fault.id, build.result.tail(6));
      return "";
    }
    return build.binary.string();
  }

  void run_sanitizer(const CatalogFault& fault, const std::string& binary,
                     const std::string& fault_switch, FaultOutcome& o) {
    const auto& want = *fault.sanitizer;
    o.sanitizer = {{"tool", want.tool}, {"gate", want.gate}};
    if (!on_path("compute-sanitizer")) {
      o.sanitizer["summary"] = "not run: compute-sanitizer is not on PATH";
      o.sanitizer["caught"] = false;
      return;
    }
    std::vector<std::string> argv = {
        "compute-sanitizer",          "--tool", want.tool, binary, "gate", "run", "--fixtures",
        options.fixtures_dir.string()};
    if (!fault_switch.empty()) {
      argv.push_back("--fault");
      argv.push_back(fault_switch);
    }
    argv.push_back(want.gate);
    const ProcessResult r = run_process(argv, options.timeout_s);
    o.seconds += r.seconds;
    const json summary = sanitizer_summary(want.tool, r.log, r.exit_code);
    o.sanitizer.update(summary);
    o.sanitizer["caught"] = summary["count"].get<long>() > 0;
  }

  // Sanitizer verdict folded into the numbers' verdict.
  void fold_sanitizer(const CatalogFault& fault, FaultOutcome& o) {
    if (!fault.sanitizer || o.sanitizer.is_null()) return;
    const bool caught = o.sanitizer.value("caught", false);
    const std::string line = o.sanitizer.value("summary", "");
    if (!caught) {
      if (o.status == FaultStatus::killed || o.status == FaultStatus::survived) {
        o.status = FaultStatus::survived;
        o.reason = fmt::format("{} did not catch it on {}: {}; numbers: {}", fault.sanitizer->tool,
                               fault.sanitizer->gate, line, o.reason);
      }
      return;
    }
    if (o.status == FaultStatus::survived && o.red_gates == 0 && fault.red.empty())
      o.status = FaultStatus::killed;
    if (o.killer_gate.empty()) {
      o.killer_gate = fault.sanitizer->tool + ":" + fault.sanitizer->gate;
      o.killer_term = fault.sanitizer->tool == "racecheck" ? "hazards" : "errors";
      o.killer_error = o.sanitizer.value("count", 0L);
      o.margin = std::nan("");
    }
    o.reason = fmt::format("{} caught it on {} ({}); numbers: {}", fault.sanitizer->tool,
                           fault.sanitizer->gate, line, o.reason);
  }

  FaultOutcome run_point(const CatalogFault& fault, const std::string& backend) {
    FaultOutcome o{fault.id, fault.cls, backend};
    std::string binary = options.self_exe, fault_switch = fault.id;
    if (fault.mechanism == Mechanism::sync_build) {
      fault_switch.clear();
      binary = sync_binary(fault, o);
      if (binary.empty()) return o;
    }
    if (!run_gates(binary, fault_switch, backend, o)) return o;
    judge(fault, o);
    if (fault.sanitizer && kernels::gpu_available())
      run_sanitizer(fault, binary, fault_switch, o);
    else if (fault.sanitizer)
      o.sanitizer = {{"tool", fault.sanitizer->tool},
                     {"gate", fault.sanitizer->gate},
                     {"summary", "not run: no CUDA GPU here"},
                     {"caught", false}};
    fold_sanitizer(fault, o);
    return o;
  }

  FaultOutcome run_generator(const CatalogFault& fault) {
    FaultOutcome o{fault.id, fault.cls, "oracle"};
    const auto& g = *fault.generator;
    const fs::path out = scratch.path() / (fault.id + ".safetensors");
    const fs::path report = scratch.path() / (fault.id + ".json");
    std::vector<std::string> argv = {options.self_exe, "gen"};
    argv.insert(argv.end(), g.args.begin(), g.args.end());
    for (const std::string& a :
         {std::string("--inject-generator-fault"), g.fault, std::string("--out"), out.string(),
          std::string("--report"), report.string()})
      argv.push_back(a);
    const ProcessResult r = run_process(argv, options.timeout_s);
    o.seconds = r.seconds;
    o.gates = 1;
    if (r.timed_out) {
      o.status = FaultStatus::timeout;
      o.reason = "deltaproof gen passed the time limit";
      return o;
    }
    const json parsed = read_json_file(report);
    if (r.exit_code == 0) {
      o.status = FaultStatus::survived;
      o.reason = fmt::format("deltaproof gen wrote the fixture: no self-check refused {}", g.fault);
      return o;
    }
    if (r.exit_code != 1 || parsed.is_null()) {
      o.status = FaultStatus::runtime_error;
      o.reason =
          fmt::format("deltaproof gen exited {} (signal {}): {}", r.exit_code, r.signal, r.tail(4));
      return o;
    }
    std::vector<std::string> failed;
    const json checks = parsed.value("self_checks", json::object());
    for (const auto& [name, check] : checks.items())
      if (!check.value("passed", true)) failed.push_back(name);
    std::vector<std::string> missing;
    for (const auto& want : g.refused_by)
      if (std::find(failed.begin(), failed.end(), want) == failed.end()) missing.push_back(want);
    o.red_gates = 1;
    o.killer_gate = "gen.self-check";
    o.killed_by = {"gen.self-check"};
    o.killer_term = g.refused_by.front();
    const json check = checks.value(g.refused_by.front(), json::object());
    const double fig = check["figure"].is_number() ? check["figure"].get<double>() : 0.0;
    const double bar = check.value("bar", 0.0);
    const bool at_least = check.value("pass_if", "") == "figure >= bar";
    o.killer_error = fig;
    o.killer_bar = bar;
    o.margin = at_least ? (fig > 0 ? bar / fig : kInf) : (bar > 0 ? fig / bar : kInf);
    if (fs::exists(out)) {
      o.status = FaultStatus::runtime_error;
      o.reason = "deltaproof gen refused the fixture but wrote it anyway";
    } else if (!missing.empty()) {
      o.status = FaultStatus::killed_wrong_term;
      o.reason = fmt::format("refused by {}, but not by {}", fmt::join(failed, ", "),
                             fmt::join(missing, ", "));
      o.broken.push_back(o.reason);
    } else {
      o.status = FaultStatus::killed;
      o.reason = fmt::format("deltaproof gen refused it: self-checks {} failed, nothing written",
                             fmt::join(failed, ", "));
    }
    return o;
  }
};

}  // namespace

std::vector<Separation> separation(const std::vector<BaselineOutcome>& baselines,
                                   const std::vector<FaultOutcome>& outcomes) {
  std::vector<Separation> out;
  for (const auto& b : baselines)
    for (const auto& clean : b.clean) {
      if (clean.kind != "oracle") continue;  // a bitwise relation has no error to separate
      Separation s;
      s.gate = clean.name;
      s.backend = b.backend;
      s.clean_error = clean.clean_error;
      s.clean_term = clean.clean_term;
      for (const auto& o : outcomes) {
        if (o.backend != b.backend || o.cls != "kernel") continue;
        for (const auto& g : o.outcomes)
          if (g.name == clean.name && g.red && g.error < s.smallest_fault_error) {
            s.smallest_fault_error = g.error;
            s.smallest_fault = o.fault;
            s.smallest_fault_term = g.worst_term;
            s.bar = g.bar;
            s.falsified = true;
          }
      }
      s.ratio = s.clean_error > 0 ? s.smallest_fault_error / s.clean_error : kInf;
      s.weak = s.falsified && s.ratio < 10.0;
      out.push_back(s);
    }
  return out;
}

void run_tree_checked(RunRecord& record, const std::function<void()>& body) {
  const auto start = std::chrono::steady_clock::now();
  catch_interrupts();
  const TreeHashes before = hash_tracked_files(record.source_top);
  record.tracked_files = before.size();
  try {
    body();
  } catch (const Interrupted&) {
    record.interrupted = true;
    clear_interrupt();  // the tree check below runs git
  }
  record.tree_changes = tree_differences(before, hash_tracked_files(record.source_top));
  record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::map<std::string, std::vector<gates::Gate>> run_baselines(
    const std::vector<std::string>& backends, const fs::path& fixtures_dir,
    const std::vector<std::string>& globs, const std::function<void(const std::string&)>& progress,
    RunRecord& record) {
  std::map<std::string, std::vector<gates::Gate>> gates_of;
  for (const auto& backend : backends) {
    gates_of[backend] = campaign_gates(fixtures_dir, backend, globs);
    progress(fmt::format("baseline {}: {} gates clean, then poisoned", backend,
                         gates_of[backend].size()));
    record.baselines.push_back(run_baseline(backend, gates_of[backend], fixtures_dir));
    const auto& b = record.baselines.back();
    progress(fmt::format("  clean {}/{} green, poison {}/{} red{}", b.clean_green, b.gates,
                         b.poison_red, b.gates, b.ok() ? "" : ": FAILED"));
    for (std::size_t i = 0; i < b.problems.size() && i < 5; ++i) progress("    " + b.problems[i]);
    record.baseline_ok = record.baseline_ok && b.ok();
  }
  return gates_of;
}

CampaignResult run_campaign(const Catalog& catalog, const CampaignOptions& options) {
  CampaignResult result;
  result.source_top = source_top(options.source_dir);
  Runner runner(catalog, options, result.source_top);
  const auto faults =
      shard_faults(catalog, options.fault_ids, options.shard_index, options.shard_count);
  run_tree_checked(result, [&] {
    runner.gates_of = run_baselines(options.backends, options.fixtures_dir, options.gate_globs,
                                    options.progress, result);
    if (!result.baseline_ok) return;
    int done = 0;
    for (const CatalogFault* fault : faults) {
      ++done;
      std::vector<FaultOutcome> fault_outcomes;
      if (fault->mechanism == Mechanism::generator) {
        fault_outcomes.push_back(runner.run_generator(*fault));
      } else {
        for (const auto& backend : options.backends) {
          if (!fault->injection_for(backend)) continue;
          fault_outcomes.push_back(runner.run_point(*fault, backend));
        }
        if (fault_outcomes.empty()) {
          FaultOutcome o{fault->id, fault->cls, "-"};
          std::vector<std::string> where;
          for (const auto& at : fault->injected_at) where.push_back(at.backend);
          o.status = FaultStatus::ignored;
          o.reason = fmt::format("lives in {}; none of them is under test here ({})",
                                 fmt::join(where, ", "), fmt::join(options.backends, ", "));
          fault_outcomes.push_back(o);
        }
      }
      for (auto& o : fault_outcomes) {
        options.progress(
            fmt::format("[{}/{}] {:<34} {:<15} {:<16} {}", done, faults.size(), o.fault, o.backend,
                        status_name(o.status),
                        o.status == FaultStatus::ignored || o.killer_gate.empty()
                            ? o.reason
                            : fmt::format("{} {} margin {} ({:.1f} s)", o.killer_gate,
                                          o.killer_term, gates::figure_text(o.margin), o.seconds)));
        if (!o.ok())
          for (std::size_t i = 0; i < o.broken.size() && i < 4; ++i)
            options.progress("      " + o.broken[i]);
        if (!o.ok() && o.broken.empty()) options.progress("      " + o.reason);
        result.outcomes.push_back(std::move(o));
      }
    }
  });
  result.separation = separation(result.baselines, result.outcomes);
  return result;
}

}  // namespace deltaproof::falsify
