// cli/report_command.cpp — `deltaproof report`. See report_command.hpp.
#include "cli/report_command.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/gate_command.hpp"
#include "core/files.hpp"
#include "falsify/mutate.hpp"
#include "falsify/report.hpp"
#include "gates/report_file.hpp"
#include "reports/html/html_report.hpp"

namespace deltaproof::cli {
using nlohmann::json;

namespace {

using gates::Change;
using gates::GateResult;
using gates::TermComparison;

// ---- figures -------------------------------------------------------------

using gates::is_bitwise;

// A figure the report may hold as null (NaN, or inf written as null).
std::string figure(double value) {
  if (!std::isfinite(value)) return "-";
  return value == 0.0 ? "0" : fmt::format("{:.2e}", value);
}

// rel: null is inf when the candidate held NaN/inf, else nothing was measured.
std::string rel_text(const TermComparison& term) {
  return gates::rel_infinite(term) ? "inf" : figure(term.rel);
}

std::string bar_text(const GateResult& gate, const TermComparison& term) {
  return is_bitwise(gate, term) ? "bitwise" : fmt::format("{:.1e}", term.bar);
}

// margin = bar / rel: null is inf when rel is 0. Bitwise relations have no margin.
std::string margin_text(const GateResult& gate, const TermComparison& term) {
  if (is_bitwise(gate, term)) return "-";
  if (std::isfinite(term.margin)) return fmt::format("{:.3g}", term.margin);
  return term.rel == 0.0 ? "inf" : "-";
}

// "(b,t,h,i)=(0,15,1,4)", or "-" when nothing differed.
std::string worst_text(const TermComparison& term) {
  if (term.worst_index.empty()) return "-";
  return fmt::format("({})=({})", term.index_names, fmt::join(term.worst_index, ","));
}

std::string painted_status(gates::TermStatus status) {
  const std::string name(gates::status_name(status));
  return status == gates::TermStatus::pass ? paint(name, "32") : paint(name, "31;1");
}

std::string painted_verdict(gates::Verdict verdict) {
  if (verdict == gates::Verdict::pass) return paint("PASS", "32");
  if (verdict == gates::Verdict::skipped) return paint("SKIP", "33");
  return paint("FAIL", "31;1");
}

std::string verdict_text(gates::Verdict verdict) {
  return std::string(gates::verdict_name(verdict));
}

// "chunks: 5.0e-07 2.2e-07 1.2e-07", eight to a line, then which chunks are
// above the bar: one red chunk points at the intra-chunk stages, a figure that
// grows chunk after chunk at the state carried between them.
constexpr std::size_t kChunksPerLine = 8;

std::vector<std::string> chunk_lines(const TermComparison& term) {
  std::vector<std::string> lines;
  std::vector<std::size_t> above;
  const std::vector<double>& chunks = term.chunk_rel;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    if (c % kChunksPerLine == 0) lines.push_back(c == 0 ? "chunks:" : "       ");
    const bool measured = std::isfinite(chunks[c]);
    lines.back() += measured ? fmt::format(" {:.1e}", chunks[c]) : " -";
    if (measured && chunks[c] > term.bar) above.push_back(c);
  }
  if (!above.empty())
    lines.back() += paint(
        fmt::format("  (above the bar: chunk {} of {})", fmt::join(above, ","), chunks.size()),
        "31");
  return lines;
}

std::size_t widest_term(std::initializer_list<const gates::ReportFile*> reports) {
  std::size_t width = 6;
  for (const auto* report : reports)
    for (const auto& gate : report->gates)
      for (const auto& term : gate.terms) width = std::max(width, term.term.size());
  return width;
}

// ---- show ----------------------------------------------------------------

constexpr int kFigureWidth = 9;
constexpr int kWorstWidth = 24;

int show(const std::string& path, bool all_gates) {
  if (const json stryker = falsify::stryker_report_at(path); falsify::is_mutate_report(stryker)) {
    falsify::print_mutate_report(stryker, all_gates);
    return 0;
  } else if (falsify::is_falsify_report(stryker)) {
    falsify::print_falsify_report(stryker, all_gates);
    return 0;
  }
  const gates::ReportFile report = gates::read_report_file(path);
  fmt::print("report   {} ({})\n", path, report.schema);
  fmt::print("tool     {}\n", report.tool);
  fmt::print("commit   {}\n", report.git_commit);
  fmt::print("host     {} ({}, {} CPUs)\n", report.host_name, report.host_system, report.host_cpus);
  fmt::print("device   {}\n", report.device);
  fmt::print("created  {}\n", report.created);
  fmt::print("command  {}\n\n", report.command);

  const std::size_t term_width = widest_term({&report});
  fmt::print("{:<{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {}\n", "gate / term", term_width + 2, "rel",
             kFigureWidth, "bar", kFigureWidth, "margin", kFigureWidth, "worst index", kWorstWidth,
             "status");
  for (const auto& gate : report.gates) {
    fmt::print("{}  {}  ({} {}, {}, {}, {:.3f} s)\n", gate.name, painted_verdict(gate.verdict),
               gate.kind, gate.phase, gate.backend, gate.precision, gate.seconds);
    for (const auto& term : gate.terms) {
      fmt::print("  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {}\n", term.term, term_width,
                 rel_text(term), kFigureWidth, bar_text(gate, term), kFigureWidth,
                 margin_text(gate, term), kFigureWidth, worst_text(term), kWorstWidth,
                 painted_status(term.status));
      for (const auto& line : chunk_lines(term)) fmt::print("  {:<{}}  {}\n", "", term_width, line);
    }
  }
  bool first = true;
  for (const auto& gate : report.gates) {
    if (gate.verdict == gates::Verdict::pass) continue;
    if (first) fmt::print("\nwhy not green:\n");
    first = false;
    fmt::print("  {} {}\n", painted_verdict(gate.verdict), gate.name);
    for (const auto& reason : gate.reasons) fmt::print("       {}\n", reason);
  }
  const gates::GateCounts counts = gates::count_gates(report);
  fmt::print("\n{} gates: {} passed, {} failed, {} skipped ({:.3f} s); verdict {}\n",
             report.gates.size(), counts.passed, counts.failed, counts.skipped, counts.seconds,
             painted_verdict(report.verdict));
  return 0;
}

// ---- diff ----------------------------------------------------------------

std::string ratio_text(const TermComparison& a, const TermComparison& b) {
  if (!gates::rel_measured(a) || !gates::rel_measured(b)) return "-";
  if (a.rel == 0.0) return b.rel == 0.0 ? "1" : "inf";
  return fmt::format("{:.3g}", b.rel / a.rel);
}

std::string change_text(const gates::TermChange& t) {
  const std::string name(gates::change_name(t.change));
  std::string text = t.change == Change::worse    ? paint(name, "31;1")
                     : t.change == Change::better ? paint(name, "32")
                                                  : name;
  if (t.a->status != t.b->status)
    text += fmt::format(" ({} -> {})", gates::status_name(t.a->status),
                        gates::status_name(t.b->status));
  return text;
}

std::string verdict_change(const GateResult& a, const GateResult& b) {
  if (a.verdict == b.verdict) return verdict_text(a.verdict);
  const std::string text =
      fmt::format("VERDICT {} -> {}", verdict_text(a.verdict), verdict_text(b.verdict));
  if (a.verdict == gates::Verdict::pass && b.verdict == gates::Verdict::fail)
    return paint(text, "31;1");
  return b.verdict == gates::Verdict::pass ? paint(text, "32;1") : paint(text, "33;1");
}

int diff(const std::string& path_a, const std::string& path_b) {
  const gates::ReportFile a = gates::read_report_file(path_a);
  const gates::ReportFile b = gates::read_report_file(path_b);
  auto print_source = [](const char* label, const gates::ReportFile& report) {
    fmt::print("{}  {}  (commit {}, {}, {} gates)\n", label, report.path.string(),
               report.git_commit, report.created, report.gates.size());
  };
  print_source("A", a);
  print_source("B", b);
  const gates::ReportDiff d = gates::diff_reports(a, b);

  const std::size_t term_width = widest_term({&a, &b});
  auto row = [&](const std::string& term, const std::string& rel_a, const std::string& rel_b,
                 const std::string& ratio, const std::string& change) {
    fmt::print("  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", term, term_width, rel_a, kFigureWidth,
               rel_b, kFigureWidth, ratio, kFigureWidth, change);
  };
  fmt::print("\n{:<{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", "gate / term", term_width + 2, "rel A",
             kFigureWidth, "rel B", kFigureWidth, "ratio", kFigureWidth, "change");
  for (const auto& gate : d.gates) {
    fmt::print("{}  {}\n", gate.a->name, verdict_change(*gate.a, *gate.b));
    for (const auto& t : gate.terms) {
      if (!t.b)
        row(t.a->term, rel_text(*t.a), "-", "-", paint("only in A", "33"));
      else if (!t.a)
        row(t.b->term, "-", rel_text(*t.b), "-", paint("only in B", "33"));
      else
        row(t.a->term, rel_text(*t.a), rel_text(*t.b), ratio_text(*t.a, *t.b), change_text(t));
    }
  }
  if (!d.only_a.empty() || !d.only_b.empty()) fmt::print("\n");
  for (const auto* gate : d.only_a)
    fmt::print("only in A: {} ({})\n", gate->name, verdict_text(gate->verdict));
  for (const auto* gate : d.only_b)
    fmt::print("only in B: {} ({})\n", gate->name, verdict_text(gate->verdict));

  fmt::print(
      "\n{} gates in both, {} with a changed verdict; {} only in A, {} only in B; terms: {} "
      "worse, {} better, {} same\n",
      d.gates.size(), d.verdicts_changed, d.only_a.size(), d.only_b.size(), d.worse, d.better,
      d.same);
  if (!d.turned_red.empty()) {
    fmt::print(
        "{}\n",
        paint(fmt::format("passed in A, not in B: {}", fmt::join(d.turned_red, "; ")), "31;1"));
    return 1;
  }
  fmt::print("nothing that passed in A fails in B\n");
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, ReportArguments& a) {
  CLI::App* report = app.add_subcommand("report", "Show or compare JSON reports of gate runs");
  report->require_subcommand(1);
  a.show = report->add_subcommand(
      "show", "Print a report: header, every gate and term, per-chunk figures, reasons");
  a.show->add_option("file", a.file, "a report written by `deltaproof gate run --report FILE`")
      ->required();
  a.show->add_flag("--all-gates", a.all_gates,
                   "falsify report: every gate's separation, not only the weak ones");
  a.diff = report->add_subcommand(
      "diff", "Compare two reports gate by gate and term by term (exit 1 if anything turned red)");
  a.diff->add_option("A", a.before, "the report before")->required();
  a.diff->add_option("B", a.after, "the report after")->required();
  a.diff->add_option("--html", a.diff_html, "also write the diff as one self-contained HTML page");
  a.html = report->add_subcommand(
      "html", "Write gate and campaign reports as one self-contained HTML page (no network)");
  a.html->add_option("reports", a.html_inputs, "gate reports and falsify campaign reports")
      ->required();
  a.html->add_option("-o,--out", a.html_out, "the page to write")->required();
}

namespace {

void write_page(const std::string& path, const std::string& html) {
  write_text_atomically(path, html);
  fmt::print("wrote {} ({:.1f} kB)\n", path, html.size() / 1024.0);
}

}  // namespace

int run_report_command(const ReportArguments& a) {
  if (a.show->parsed()) return show(a.file, a.all_gates);
  if (a.html->parsed()) {
    std::vector<std::filesystem::path> inputs(a.html_inputs.begin(), a.html_inputs.end());
    write_page(a.html_out, html::reports_page(inputs));
    return 0;
  }
  const int status = diff(a.before, a.after);
  if (!a.diff_html.empty()) write_page(a.diff_html, html::diff_page(a.before, a.after));
  return status;
}

}  // namespace deltaproof::cli
