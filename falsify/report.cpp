// falsify/report.cpp — see report.hpp.
#include "falsify/report.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/files.hpp"
#include "core/sha256.hpp"
#include "gates/report.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

std::string language_of(const std::string& file) {
  const auto ext = fs::path(file).extension().string();
  if (ext == ".cu" || ext == ".cuh") return "cuda";
  if (ext == ".py") return "python";
  if (ext == ".patch" || ext == ".diff") return "diff";
  return "cpp";
}

json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::string figure(const json& x) {
  if (x.is_null()) return "inf";
  const double v = x.get<double>();
  return std::isnan(v) ? "-" : fmt::format("{:.2e}", v);
}

}  // namespace

json stryker_file(const std::string& file, const std::string& source) {
  return {{"language", language_of(file)},
          {"source", source},
          {"sourceSha256", sha256_hex(std::as_bytes(std::span(source)))},
          {"mutants", json::array()}};
}

json stryker_envelope(const fs::path& top, json files, json header, int high, int low) {
  return {{"schemaVersion", "2"},
          {"thresholds", {{"high", high}, {"low", low}}},
          {"projectRoot", top.string()},
          {"framework", {{"name", "deltaproof"}, {"version", gates::kToolVersion}}},
          {"files", std::move(files)},
          {"deltaproof", std::move(header)}};
}

MutantSite locate(const fs::path& top, const std::string& file, const std::string& marker) {
  MutantSite site;
  site.file = file;
  std::istringstream text(read_text(top / file));
  std::string line;
  for (int n = 1; std::getline(text, line); ++n) {
    const auto at = line.find(marker);
    if (marker.empty() || at == std::string::npos) continue;
    site.line = site.end_line = n;
    site.column = static_cast<int>(at) + 1;
    site.end_column = site.column + static_cast<int>(marker.size());
    site.found = true;
    break;
  }
  return site;
}

std::string_view stryker_status(FaultStatus status) {
  if (status == FaultStatus::killed_wrong_term || status == FaultStatus::green_broken)
    return status_name(FaultStatus::survived);
  return status_name(status);
}

json stryker_report(const fs::path& top, const std::vector<ReportMutant>& mutants, json header) {
  json files = json::object();
  json faults = json::array();
  for (const auto& m : mutants) {
    const std::string& file = m.site.file;
    if (!files.contains(file)) {
      files[file] = stryker_file(file, m.source.empty() ? read_text(top / file) : m.source);
    }
    const FaultOutcome& o = m.outcome;
    json mutant = {
        {"id", o.fault + "@" + o.backend},
        {"mutatorName", o.fault},
        {"description", m.what},
        {"location",
         {{"start", {{"line", m.site.line}, {"column", m.site.column}}},
          {"end", {{"line", m.site.end_line}, {"column", m.site.end_column}}}}},
        {"status", stryker_status(o.status)},
        {"statusReason", o.reason},
        {"killedBy", o.killed_by},
        {"deltaproofStatus", status_name(o.status)},
        {"class", o.cls},
        {"backend", o.backend},
        {"gate", o.killer_gate},
        {"term", o.killer_term},
        {"margin", number(o.margin)},
        {"expected", m.expected},
        {"sourceSha256", files[file]["sourceSha256"]},
    };
    if (!m.site.found) mutant["locationNote"] = "the catalog's marker was not found in the file";
    files[file]["mutants"].push_back(mutant);
    faults.push_back(o.to_json());
  }
  header["faults"] = faults;
  return stryker_envelope(top, std::move(files), std::move(header), 100, 100);
}

json report_header(const RunRecord& record, const std::string& command, const std::string& catalog,
                   const std::vector<std::string>& backends, const std::string& shard,
                   const std::vector<Separation>& separation, bool passed) {
  json header = gates::make_report({}, command);
  header.erase("gates");
  header.erase("summary");
  header.erase("verdict");
  header["schema"] = kFalsifyReportFormat;
  header["catalog"] = catalog;
  header["backends"] = backends;
  header["shard"] = shard;
  json baselines = json::array();
  for (const auto& b : record.baselines) {
    std::vector<std::string> names;  // every gate the campaign ran, in order
    for (const auto& g : b.clean) names.push_back(g.name);
    baselines.push_back({{"backend", b.backend},
                         {"gates", b.gates},
                         {"gate_names", names},
                         {"clean_green", b.clean_green},
                         {"poison_red", b.poison_red},
                         {"ok", b.ok()},
                         {"problems", b.problems}});
  }
  header["baseline"] = {{"ok", record.baseline_ok}, {"backends", baselines}};
  header["tree"] = {{"top", record.source_top.string()},
                    {"tracked_files", record.tracked_files},
                    {"unchanged", record.tree_changes.empty()},
                    {"changes", record.tree_changes}};
  json rows = json::array();
  int weak = 0, unfalsified = 0;
  for (const auto& s : separation) {
    weak += s.weak;
    unfalsified += !s.falsified;
    rows.push_back({{"gate", s.gate},
                    {"backend", s.backend},
                    {"bar", s.bar},
                    {"clean_error", s.clean_error},
                    {"clean_term", s.clean_term},
                    {"smallest_fault_error", number(s.smallest_fault_error)},
                    {"smallest_fault", s.smallest_fault},
                    {"smallest_fault_term", s.smallest_fault_term},
                    {"separation", number(s.ratio)},
                    {"falsified", s.falsified},
                    {"weak", s.weak}});
  }
  header["separation"] = rows;
  std::map<std::string, int> counts;
  for (const auto& o : record.outcomes) ++counts[std::string(status_name(o.status))];
  header["summary"] = {{"faults", record.outcomes.size()},
                       {"statuses", counts},
                       {"weak_gates", weak},
                       {"unfalsified_gates", unfalsified},
                       {"interrupted", record.interrupted},
                       {"seconds", record.seconds}};
  header["verdict"] = passed ? "pass" : "fail";
  return header;
}

json campaign_report(const CampaignResult& result, const Catalog& catalog,
                     const CampaignOptions& options, const std::string& command) {
  const json header = report_header(result, command, catalog.path.string(), options.backends,
                                    fmt::format("{}/{}", options.shard_index, options.shard_count),
                                    result.separation, result.passed());
  std::vector<ReportMutant> mutants;
  for (const auto& o : result.outcomes) {
    const CatalogFault* fault = catalog.find(o.fault);
    const Injection* at = fault->injection_for(o.backend);
    if (!at) at = &fault->injected_at.front();
    mutants.push_back({o, fault->what, fault->expected_json(),
                       locate(result.source_top, at->file, at->marker), ""});
  }
  return stryker_report(result.source_top, mutants, header);
}

bool is_falsify_report(const json& report) {
  return report.is_object() && report.contains("schemaVersion") && report.contains("deltaproof") &&
         report["deltaproof"].value("schema", "") == kFalsifyReportFormat;
}

json stryker_report_at(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  try {
    json report = json::parse(in);
    const bool ours = report.is_object() && report.contains("schemaVersion") &&
                      report.contains("deltaproof") && report["deltaproof"].is_object();
    return ours ? report : json(nullptr);
  } catch (const json::parse_error&) {
    return nullptr;
  }
}

void print_falsify_report(const json& report, bool all_gates) {
  const json& d = report["deltaproof"];
  fmt::print("report   falsification campaign ({}; Stryker schemaVersion {})\n",
             d.value("schema", "?"), report.value("schemaVersion", "?"));
  fmt::print("tool     {}\ncommit   {}\ndevice   {}\ncreated  {}\ncommand  {}\n",
             d.value("tool", "?"), d.value("git_commit", "?"), d.value("device", "?"),
             d.value("created", "?"), d.value("command", "?"));
  fmt::print("catalog  {}   backends {}   shard {}\n\n", d.value("catalog", "?"),
             fmt::join(d.value("backends", std::vector<std::string>{}), ", "),
             d.value("shard", "?"));
  for (const auto& b : d["baseline"]["backends"])
    fmt::print("baseline {:<15} clean {}/{} green, poison {}/{} red  {}\n", b.value("backend", ""),
               b.value("clean_green", 0), b.value("gates", 0), b.value("poison_red", 0),
               b.value("gates", 0), b.value("ok", false) ? "ok" : "FAILED");
  fmt::print(
      "tree     {} tracked files {}\n\n", d["tree"].value("tracked_files", 0),
      d["tree"].value("unchanged", false) ? "unchanged (hashed before and after)" : "CHANGED");
  fmt::print("{:<34} {:<10} {:<15} {:<16} {:<36} {:<7} {:>9}\n", "fault", "class", "backend",
             "status", "killed by (gate)", "term", "margin");
  for (const auto& f : d["faults"]) {
    const FaultStatus status = parse_fault_status(f.value("status", ""));
    fmt::print("{:<34} {:<10} {:<15} {:<16} {:<36} {:<7} {:>9}\n", f.value("fault", ""),
               f.value("class", ""), f.value("backend", ""), f.value("status", ""),
               f.value("gate", ""), f.value("term", ""),
               status == FaultStatus::ignored ? "" : f.value("margin_text", "-"));
    const json& san = f["sanitizer"];
    if (san.is_object())
      fmt::print("    {} on {}: {}\n", san.value("tool", ""), san.value("gate", ""),
                 san.value("summary", ""));
    if (status != FaultStatus::killed && status != FaultStatus::ignored)
      fmt::print("    {}\n", f.value("reason", ""));
    for (const auto& b : f.value("broken", json::array()))
      fmt::print("      {}\n", b.get<std::string>());
  }
  // Separation: each gate's clean error beside the smallest error a kernel fault made.
  int weak = 0, shown = 0;
  fmt::print(
      "\nseparation (per gate: clean error, smallest kernel-fault error, ratio; weak below 10x)\n");
  fmt::print("{:<44} {:>9} {:>9} {:>9}  {}\n", "gate", "clean", "fault", "ratio", "smallest fault");
  for (const auto& s : d["separation"]) {
    const bool is_weak = s.value("weak", false);
    weak += is_weak;
    if (!all_gates && !is_weak) continue;
    ++shown;
    fmt::print("{:<44} {:>9} {:>9} {:>9}  {} {}{}\n", s.value("gate", ""), figure(s["clean_error"]),
               s.value("falsified", false) ? figure(s["smallest_fault_error"]) : "-",
               s.value("falsified", false) ? figure(s["separation"]) : "-",
               s.value("smallest_fault", ""), s.value("smallest_fault_term", ""),
               is_weak ? "  WEAK" : "");
  }
  if (!all_gates)
    fmt::print("({} weak gates of {} shown; --all-gates lists every gate)\n", shown,
               d["separation"].size());
  const json& summary = d["summary"];
  std::vector<std::string> counts;
  for (const auto& [status, n] : summary["statuses"].items())
    counts.push_back(fmt::format("{} {}", n.get<int>(), status));
  fmt::print(
      "\n{} (fault, backend) runs: {}; {} weak gates, {} gates no kernel fault turned red; "
      "verdict {}\n",
      summary.value("faults", 0),
      counts.empty() ? "none" : fmt::format("{}", fmt::join(counts, ", ")), weak,
      summary.value("unfalsified_gates", 0), d.value("verdict", "?"));
}

}  // namespace deltaproof::falsify
