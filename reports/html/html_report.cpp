// reports/html/html_report.cpp — see html_report.hpp.
#include "reports/html/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "falsify/mutate.hpp"
#include "falsify/report.hpp"
#include "gates/report_file.hpp"
#include "reports/html/page.hpp"
#include "reports/html/svg.hpp"

namespace deltaproof::html {
using nlohmann::json;

namespace {

using gates::GateResult;
using gates::TermComparison;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string number_value(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{}", value);
}

std::string json_figure(const json& value) {
  return value.is_number() ? figure(value.get<double>()) : "-";
}

std::string json_text(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return "";
  const json& value = object[key];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// object[key], or null when `object` is not an object or lacks it (a
// reference into the report, so pointers to its elements stay valid).
const json& member(const json& object, const char* key) {
  static const json null;
  if (!object.is_object()) return null;
  const auto found = object.find(key);
  return found == object.end() ? null : *found;
}

std::string code(std::string_view text) { return "<code>" + escape(text) + "</code>"; }

// ---- a term's error against its bar ---------------------------------------

using gates::is_bitwise;

bool compared(const TermComparison& term) {
  return term.status != gates::TermStatus::not_compared &&
         term.status != gates::TermStatus::missing;
}

// error / bar: the figure every plot of a gate report draws. A bitwise term
// is 0 when exact and inf otherwise; a null rel is inf when the candidate held
// NaN or inf, NaN (unmeasured) otherwise.
double over_bar(double error, double bar, bool infinite = false) {
  if (!std::isfinite(error)) return infinite ? kInf : std::nan("");
  if (!(bar > 0)) return error == 0.0 ? 0.0 : kInf;
  return error / bar;
}

// A bitwise relation's term has no bar to measure against: it either holds
// (0: exact where it must be, moved where it must move) or it does not (inf).
double term_over_bar(const GateResult& gate, const TermComparison& term) {
  if (is_bitwise(gate, term)) return term.status == gates::TermStatus::pass ? 0.0 : kInf;
  return over_bar(term.rel, term.bar, gates::rel_infinite(term));
}

double gate_worst(const GateResult& gate) {
  double worst = std::nan("");
  for (const auto& term : gate.terms) {
    if (!compared(term)) continue;
    const double r = term_over_bar(gate, term);
    if (!std::isnan(r) && !(r <= worst)) worst = r;
  }
  return worst;
}

// rel as the report means it: "inf" when the candidate held NaN or inf.
std::string rel_text(const TermComparison& term) {
  return gates::rel_infinite(term) ? "inf" : figure(term.rel);
}

std::string ratio_text(double ratio) {
  if (std::isnan(ratio)) return "-";
  if (std::isinf(ratio)) return "inf";
  return ratio == 0.0 ? "0" : fmt::format("{:.3g}", ratio);
}

// The plots' scale of error / bar, in decades under and over the bar: the
// gate table's is fixed (six under, one over); a heat map's spans what its
// gate holds (one to six under, one to twelve over), so that chunks 1e-3 and
// 1e-2 of the bar read apart, and so do chunks 10x and 1e4x over it.
struct Decades {
  int below = 6, above = 1;
};
constexpr Decades kTableDecades{};
constexpr int kMostDecadesAbove = 12;

// Position 0..1 of error / bar on that scale (0 for an exact 0).
double scale_position(double ratio, Decades decades = kTableDecades) {
  if (!(ratio > 0)) return 0.0;
  const double f = (std::log10(ratio) + decades.below) / (decades.below + decades.above);
  return std::clamp(f, 0.0, 1.0);
}

std::string term_tooltip(const GateResult& gate, const TermComparison& term) {
  if (!compared(term)) return fmt::format("{}: {}", term.term, gates::status_name(term.status));
  const std::string rel = rel_text(term);
  if (is_bitwise(gate, term))
    return fmt::format("{}: bitwise, rel {} ({})", term.term, rel, gates::status_name(term.status));
  return fmt::format("{}: rel {} / bar {} = {} ({})", term.term, rel, figure(term.bar),
                     ratio_text(term_over_bar(gate, term)), gates::status_name(term.status));
}

// The gate table's picture: one column per term, its height error / bar on
// the log scale, the bar a line across; red above it. The term names below.
std::string term_strip(const GateResult& gate) {
  // up to ten terms get a named column; more (a relation's) share 240 px,
  // named by their tooltips
  constexpr double kPlot = 30, kTop = 3;
  const bool named = gate.terms.size() <= 10;
  const double kColumn = named ? 24.0 : std::max(4.0, 240.0 / gate.terms.size());
  const double kLabels = named ? 12.0 : 2.0;
  const double width = std::max<double>(kColumn * gate.terms.size(), 24) + 2;
  Svg svg(width, kTop + kPlot + kLabels, "each term's error over its bar");
  const double bar_y = kTop + kPlot * (1.0 - scale_position(1.0));
  svg.rect(0, kTop, width, kPlot, "#f4f4f4");
  for (std::size_t i = 0; i < gate.terms.size(); ++i) {
    const TermComparison& term = gate.terms[i];
    const double x = 1 + kColumn * i;
    if (named)
      svg.text(x + kColumn / 2, kTop + kPlot + kLabels - 2, term.term, "middle", "font-size=\"9\"");
    const double pad = kColumn / 6;
    if (!compared(term)) {
      svg.rect(x + pad, kTop + kPlot - 2, kColumn - 2 * pad, 2, colour::neutral,
               term_tooltip(gate, term));
      continue;
    }
    const double ratio = term_over_bar(gate, term);
    const double top = kTop + kPlot * (1.0 - scale_position(ratio));
    const bool red = term.status != gates::TermStatus::pass;
    svg.rect(x + pad, top, kColumn - 2 * pad, std::max(kTop + kPlot - top, 1.5),
             red ? colour::fail : colour::pass, term_tooltip(gate, term));
  }
  svg.line(0, bar_y, width, bar_y, "#1a1a1a", "stroke-width=\"1\" stroke-dasharray=\"3 2\"");
  return svg.finish();
}

// The heat map's legend: the scale from 1e-6 of the bar to 10x, the bar marked.
std::string heat_legend(Decades scale) {
  constexpr double kWidth = 300, kStrip = 12;
  const int decades = scale.below + scale.above;
  Svg svg(kWidth + 80, 36, "colour scale: error over the bar, log 10");
  constexpr int kSteps = 70;
  for (int s = 0; s < kSteps; ++s)
    svg.rect(10 + kWidth * s / kSteps, 2, kWidth / kSteps + 0.5, kStrip,
             viridis((s + 0.5) / kSteps));
  const int step = decades > 10 ? 2 : 1;
  for (int d = -scale.below; d <= scale.above; d += step) {
    const double x = 10 + kWidth * (d + scale.below) / decades;
    svg.line(x, 2, x, kStrip + 5, "#1a1a1a");
    svg.text(x, kStrip + 16, d == 0 ? "bar" : fmt::format("1e{}", d), "middle",
             d == 0 ? "font-size=\"10\" font-weight=\"bold\"" : "font-size=\"10\"");
  }
  const double bar_x = 10 + kWidth * scale.below / decades;
  svg.line(bar_x, 0, bar_x, kStrip + 5, "#1a1a1a", "stroke-width=\"3\"");
  svg.text(kWidth + 18, kStrip, "\u00d7 above", "start", "font-size=\"10\"");
  return svg.finish();
}

// Term-by-chunk heat map: a row per term, a column per chunk (max |a-b| in
// the chunk over the term's max |b|, over the bar), then the whole term.
// Above the bar: a cross and a vermillion frame; the worst chunk: a dot.
// The decades a gate's heat map spans: its smallest and largest positive
// finite error over the bar, in whole decades, within the limits above.
Decades heat_decades(const GateResult& gate) {
  double least = 1.0, worst = 1.0;
  auto see = [&](double ratio) {
    if (!(ratio > 0) || !std::isfinite(ratio)) return;
    least = std::min(least, ratio);
    worst = std::max(worst, ratio);
  };
  for (const auto& term : gate.terms) {
    if (!compared(term)) continue;
    for (const double rel : term.chunk_rel) see(over_bar(rel, term.bar));
    see(term_over_bar(gate, term));
  }
  return {std::clamp(static_cast<int>(std::ceil(-std::log10(least))), 1, kTableDecades.below),
          std::clamp(static_cast<int>(std::ceil(std::log10(worst))), kTableDecades.above,
                     kMostDecadesAbove)};
}

std::string heat_map(const GateResult& gate, Decades decades) {
  std::size_t chunks = 0;
  for (const auto& term : gate.terms) chunks = std::max(chunks, term.chunk_rel.size());
  constexpr std::size_t kMaxColumns = 128;  // more chunks are binned, each bin its max
  const std::size_t per_bin = std::max<std::size_t>(1, (chunks + kMaxColumns - 1) / kMaxColumns);
  const std::size_t columns = (chunks + per_bin - 1) / per_bin;
  constexpr double kLabel = 52, kRow = 20, kHead = 18, kGap = 16, kWhole = 40;
  const double cell = columns ? std::clamp(720.0 / columns, 8.0, 40.0) : 0.0;
  const double width = kLabel + cell * columns + kGap + kWhole + 4;
  const double height = kHead + kRow * gate.terms.size() + 4;
  Svg svg(width, height, fmt::format("{}: error per term and chunk", gate.name));
  // chunk numbers over their columns, as many as fit at 28 px apart
  const std::size_t every =
      std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(28.0 / cell)));
  if (columns) svg.text(kLabel - 6, 12, "chunk", "end", "font-size=\"10\"");
  for (std::size_t column = 0; column < columns; column += every)
    svg.text(kLabel + cell * column + cell / 2, 12, fmt::format("{}", column * per_bin), "middle",
             "font-size=\"10\"");
  svg.text(kLabel + cell * columns + kGap + kWhole / 2, 11, "term", "middle", "font-size=\"10\"");
  auto draw = [&](double x, double y, double w, double ratio, bool worst, std::string tip) {
    const bool above = ratio > 1.0;
    const std::string fill = std::isnan(ratio) ? "#ffffff"
                             : ratio == 0      ? "#e6e6e6"
                                               : viridis(scale_position(ratio, decades));
    svg.rect(x, y, w - 1, kRow - 2, fill, tip,
             above ? "stroke=\"#D55E00\" stroke-width=\"2\"" : "stroke=\"none\"");
    if (above) {
      svg.line(x + 2, y + 2, x + w - 3, y + kRow - 4, "#1a1a1a", "stroke-opacity=\"0.6\"");
      svg.line(x + w - 3, y + 2, x + 2, y + kRow - 4, "#1a1a1a", "stroke-opacity=\"0.6\"");
    } else if (worst) {
      svg.element("circle",
                  fmt::format("cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"", px(x + w / 2 - 0.5),
                              px(y + kRow / 2 - 1),
                              scale_position(ratio, decades) > 0.6 ? "#1a1a1a" : "#ffffff"));
    }
  };
  for (std::size_t r = 0; r < gate.terms.size(); ++r) {
    const TermComparison& term = gate.terms[r];
    const double y = kHead + kRow * r;
    svg.text(kLabel - 6, y + kRow - 6, term.term, "end", "font-size=\"11\"");
    const std::vector<double>& rel = term.chunk_rel;
    std::size_t worst = rel.size();
    for (std::size_t c = 0; c < rel.size(); ++c)
      if (std::isfinite(rel[c]) && (worst == rel.size() || rel[c] > rel[worst])) worst = c;
    for (std::size_t column = 0; column * per_bin < rel.size(); ++column) {
      const std::size_t first = column * per_bin, last = std::min(rel.size(), first + per_bin);
      double value = std::nan("");
      for (std::size_t c = first; c < last; ++c)
        if (std::isfinite(rel[c]) && !(rel[c] <= value)) value = rel[c];
      const std::string where = per_bin == 1 ? fmt::format("chunk {}", first)
                                             : fmt::format("chunks {}-{}", first, last - 1);
      const double ratio = std::isnan(value) ? value : over_bar(value, term.bar);
      draw(kLabel + cell * column, y, cell, ratio, worst >= first && worst < last,
           fmt::format("{} {}: rel {} / bar {} = {}", term.term, where, figure(value),
                       is_bitwise(gate, term) ? "bitwise" : figure(term.bar), ratio_text(ratio)));
    }
    const double whole = compared(term) ? term_over_bar(gate, term) : std::nan("");
    draw(kLabel + cell * columns + kGap, y, kWhole, whole, false, term_tooltip(gate, term));
  }
  return svg.finish();
}

// ---- a gate's details -----------------------------------------------------

std::string terms_table(const GateResult& gate) {
  std::string out =
      "<table><thead><tr><th>term</th><th>status</th><th>rel</th><th>bar</th><th>rel / "
      "bar</th><th>margin</th><th>rms rel</th><th>worst index</th><th>noise</th><th>message</th>"
      "</tr></thead><tbody>";
  for (const auto& term : gate.terms) {
    const bool bitwise = is_bitwise(gate, term);
    const std::string worst =
        term.worst_index.empty()
            ? "-"
            : fmt::format("({})=({})", term.index_names, fmt::join(term.worst_index, ","));
    std::string noise = "-";
    if (term.noise.measured)
      noise = fmt::format(
          "baseline rel {}; slope {:.3g} in [{:.3g}, {:.3g}]; most biased: {} at {:.2f} of its "
          "band; smallest red scaling {}",
          figure(term.noise.baseline_rel), term.noise.alpha, term.noise.alpha_lo,
          term.noise.alpha_hi, term.noise.bias_where, term.noise.bias_excess,
          figure(term.noise.mde));
    out += fmt::format(
        "<tr data-term=\"{0}\"><td><b>{0}</b></td><td>{1}</td><td class=\"num\">{2}</td>"
        "<td class=\"num\">{3}</td><td class=\"num\">{4}</td><td class=\"num\">{5}</td>"
        "<td class=\"num\">{6}</td><td class=\"mono\">{7}</td><td class=\"message\">{8}</td><td "
        "class=\"message\">{9}"
        "</td></tr>",
        escape(term.term), badge(gates::status_name(term.status)), rel_text(term),
        bitwise ? "bitwise" : fmt::format("{:.1e}", term.bar),
        compared(term) ? ratio_text(term_over_bar(gate, term)) : "-",
        bitwise ? "-" : (std::isfinite(term.margin) ? fmt::format("{:.3g}", term.margin) : "-"),
        figure(term.rms_rel), escape(worst), escape(noise), escape(term.message));
  }
  return out + "</tbody></table>";
}

std::string spec_text(const json& fixture) {
  if (!fixture.is_object() || !fixture.contains("spec")) return "-";
  std::vector<std::string> parts;
  for (const auto& [key, value] : fixture["spec"].items())
    parts.push_back(
        fmt::format("{}={}", key, value.is_string() ? value.get<std::string>() : value.dump()));
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string bars_text(const json& bars) {
  if (!bars.is_object()) return "-";
  std::vector<std::string> parts;
  for (const char* phase : {"fwd", "bwd"}) {
    const json& b = member(bars, phase);
    if (!b.is_object()) continue;
    std::string part =
        fmt::format("{} bar {}: clean worst {} ({})", phase, json_figure(b["bar"]),
                    json_figure(member(b, "clean_worst")), json_text(b, "clean_where"));
    if (member(b, "smallest_fault").is_number())
      part += fmt::format(", smallest fault {} ({})", json_figure(member(b, "smallest_fault")),
                          json_text(b, "fault_where"));
    parts.push_back(part);
  }
  return escape(fmt::format("{}", fmt::join(parts, "; ")));
}

std::string gate_details(const GateResult& gate) {
  std::string out;
  if (!gate.reasons.empty()) {
    out += "<ul class=\"tight reason\">";
    for (const auto& reason : gate.reasons) out += "<li>" + escape(reason) + "</li>";
    out += "</ul>";
  }
  out += terms_table(gate);
  const Decades decades = heat_decades(gate);
  bool any_chunks = false;
  for (const auto& term : gate.terms) any_chunks = any_chunks || !term.chunk_rel.empty();
  out += fmt::format(
      "<h3>error per term and chunk</h3><p class=\"note\">Each cell: max |a-b| in the chunk over "
      "the term's max |b|, over the bar, on a log scale that spans this gate's figures (the legend "
      "below); the last column is the whole term; a cross marks a cell above the bar. "
      "{}</p><div class=\"scroll heat\">{}</div><div class=\"legend\">{}</div>",
      any_chunks ? "The dot marks each term's worst chunk." : "(no per-chunk figures: states only)",
      heat_map(gate, decades), heat_legend(decades));
  std::vector<std::string> record;
  for (const auto& [stage, launches] : gate.record.stages)
    record.push_back(fmt::format("{} x{}", stage, launches));
  out += key_values({
      {"fixture", code(json_text(gate.fixture, "path"))},
      {"sha256", code(json_text(gate.fixture, "sha256"))},
      {"spec", code(spec_text(gate.fixture))},
      {"bars", bars_text(gate.bars)},
      {"determinism",
       escape(fmt::format(
           "{} runs in process, {} in fresh processes: {}", gate.determinism.repeats,
           gate.determinism.replays,
           gate.determinism.identical ? "identical" : gate.determinism.first_difference))},
      {"launches", code(fmt::format("{}", fmt::join(record, ", ")))},
  });
  return out;
}

// ---- a gate report --------------------------------------------------------

std::string gate_report_section(const gates::ReportFile& report, const std::string& anchor) {
  const gates::GateCounts counts = gates::count_gates(report);
  std::string out = fmt::format(
      "<section class=\"gate-report\" id=\"{}\"><h2>gate report: {}</h2>"
      "<p class=\"big\"><span class=\"verdict\">{}</span> <span class=\"counts\">{} gates: {} "
      "passed, {} failed, {} skipped</span> ({:.1f} s of gate time)</p>",
      escape(anchor), escape(report.path.filename().string()),
      badge(gates::verdict_name(report.verdict)), report.gates.size(), counts.passed, counts.failed,
      counts.skipped, counts.seconds);
  out += key_values({{"file", code(report.path.string())},
                     {"tool", escape(report.tool)},
                     {"commit", code(report.git_commit)},
                     {"device", escape(report.device)},
                     {"host", escape(fmt::format("{} ({}, {} CPUs)", report.host_name,
                                                 report.host_system, report.host_cpus))},
                     {"date", escape(report.created)},
                     {"command", code(report.command)},
                     {"schema", escape(report.schema)}});
  out +=
      "<p class=\"note\">Each gate's picture: one column per term, its error over its bar on a log "
      "scale from 1e-6 of the bar to 10x; the dashed line is the bar, blue passes, vermillion "
      "does not (hover for the figures). <b>rel / bar</b> is the gate's worst term; a bitwise "
      "relation is 0 when exact, inf otherwise. + opens a gate; red gates start open.</p>";
  Table table(anchor + "-gates", "gates",
              {{"name", "gate"},
               {"verdict", "verdict", false, true},
               {"op", "op", false, true},
               {"backend", "backend", false, true},
               {"phase", "phase", false, true},
               {"kind", "kind", false, true},
               {"precision", "class", false, true},
               {"worst", "rel / bar", true},
               {"", "terms against their bars"},
               {"seconds", "seconds", true}});
  for (const auto& gate : report.gates) {
    const double worst = gate_worst(gate);
    table.add_row(
        {escape(gate.name), badge(gates::verdict_name(gate.verdict)), escape(gate.op),
         escape(gate.backend), escape(gate.phase), escape(gate.kind), escape(gate.precision),
         ratio_text(worst), term_strip(gate), fmt::format("{:.3f}", gate.seconds)},
        {{"name", gate.name},
         {"verdict", std::string(gates::verdict_name(gate.verdict))},
         {"op", gate.op},
         {"backend", gate.backend},
         {"phase", gate.phase},
         {"kind", gate.kind},
         {"precision", gate.precision},
         {"worst", number_value(worst)},
         {"seconds", number_value(gate.seconds)}},
        gate_details(gate), gate.verdict == gates::Verdict::fail);
  }
  return out + table.finish() + "</section>";
}

// ---- a campaign report ----------------------------------------------------

// "gdn2.cpu-chunk.t16-c16.fwd" without its backend: "gdn2.t16-c16.fwd".
std::string without_backend(const std::string& gate, const std::string& backend) {
  const std::string infix = "." + backend + ".";
  const auto at = gate.find(infix);
  return at == std::string::npos ? gate : gate.substr(0, at) + "." + gate.substr(at + infix.size());
}

// One cell of the fault-by-gate matrix: what the fault did to the gate,
// judged against the catalog. A broken expectation is outlined as well as
// coloured, so it reads without colour.
struct MatrixCell {
  const char* fill;
  bool outlined;
  const char* meaning;
};

MatrixCell matrix_cell(bool red, bool killer, const std::string& broken) {
  if (broken == "Survived") return {"#ffffff", true, "Survived: must go red, stayed green"};
  if (broken == "KilledWrongTerm")
    return {colour::skipped, true, "KilledWrongTerm: red on a term the catalog does not expect"};
  if (broken == "GreenBroken") return {"#CC79A7", true, "GreenBroken: must stay green, went red"};
  if (killer) return {"#1a1a1a", false, "Killed: red, the killer"};
  return red ? MatrixCell{colour::fail, false, "Killed: red"}
             : MatrixCell{"#dcdcdc", false, "green"};
}

std::string matrix_legend() {
  constexpr double kSwatch = 12, kItem = 190;
  const std::vector<std::pair<MatrixCell, const char*>> items{
      {matrix_cell(true, false, ""), "red (killed here)"},
      {matrix_cell(true, true, ""), "the killer"},
      {matrix_cell(false, false, ""), "green"},
      {matrix_cell(false, false, "Survived"), "Survived: stayed green"},
      {matrix_cell(true, false, "KilledWrongTerm"), "KilledWrongTerm"},
      {matrix_cell(true, false, "GreenBroken"), "GreenBroken: went red"}};
  Svg svg(kItem * 3, 2 * 20 + 4, "the matrix's cells");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const double x = kItem * (i % 3), y = 4 + 20 * (i / 3);
    svg.rect(x + 2, y, kSwatch * 0.75, kSwatch, items[i].first.fill, items[i].first.meaning,
             items[i].first.outlined ? "stroke=\"#1a1a1a\" stroke-width=\"1.5\"" : "");
    svg.text(x + 18, y + 10, items[i].second, "start", "font-size=\"11\"");
  }
  return svg.finish();
}

// The fault-by-gate matrix of one backend: a row per fault, a column per
// gate; filled where the fault turned the gate red, the killer outlined.
std::string fault_matrix(const json& d, const std::string& backend) {
  // the gates the baseline ran; a report without their names: those the
  // separation table and the faults' red lists name
  std::vector<std::string> gates;
  for (const auto& b : member(member(d, "baseline"), "backends"))
    if (b.value("backend", "") == backend)
      gates = b.value("gate_names", std::vector<std::string>{});
  if (gates.empty()) {
    std::set<std::string> seen;
    auto add = [&](const std::string& gate) {
      if (seen.insert(gate).second) gates.push_back(gate);
    };
    for (const auto& s : d["separation"])
      if (s.value("backend", "") == backend) add(s.value("gate", ""));
    for (const auto& f : d["faults"])
      if (f.value("backend", "") == backend)
        for (const auto& r : member(f, "red")) add(r.value("gate", ""));
  }
  std::vector<const json*> faults;
  for (const auto& f : d["faults"])
    if (f.value("backend", "") == backend) faults.push_back(&f);
  if (gates.empty() || faults.empty()) return "";
  std::map<std::string, std::size_t> column;
  for (std::size_t g = 0; g < gates.size(); ++g) column[gates[g]] = g;
  constexpr double kCell = 9, kRow = 14, kLabel = 300, kStatus = 110;
  std::size_t longest = 0;
  for (const auto& g : gates) longest = std::max(longest, without_backend(g, backend).size());
  const double head = 6.0 * longest + 8;
  const double width = kLabel + kStatus + kCell * gates.size() + 8;
  const double height = head + kRow * faults.size() + 4;
  Svg svg(width, height, fmt::format("faults by gates on {}", backend));
  for (std::size_t g = 0; g < gates.size(); ++g) {
    const double x = kLabel + kStatus + kCell * g + kCell / 2 + 3;
    svg.text(x, head - 4, without_backend(gates[g], backend), "start",
             fmt::format("font-size=\"9\" transform=\"rotate(-90 {} {})\"", px(x), px(head - 4)));
  }
  for (std::size_t r = 0; r < faults.size(); ++r) {
    const json& f = *faults[r];
    const double y = head + kRow * r;
    const std::string status = f.value("status", "");
    if (r % 2 == 0) svg.rect(0, y, width, kRow, "#f4f4f4");
    svg.text(kLabel - 6, y + kRow - 3, f.value("fault", ""), "end", "font-size=\"11\"");
    const bool ok = status == "Killed" || status == "Ignored";
    svg.text(kLabel, y + kRow - 3, status, "start",
             fmt::format("font-size=\"11\" font-weight=\"bold\" fill=\"{}\"",
                         ok ? colour::pass : colour::fail));
    std::map<std::size_t, const json*> red;
    for (const auto& entry : member(f, "red"))
      if (const auto found = column.find(entry.value("gate", "")); found != column.end())
        red[found->second] = &entry;
    const std::string killer = f.value("gate", "");
    const json& broken = member(f, "broken_gates");
    for (std::size_t g = 0; g < gates.size(); ++g) {
      const double x = kLabel + kStatus + kCell * g;
      const auto found = red.find(g);
      const std::string outcome = json_text(broken, gates[g].c_str());
      const MatrixCell cell = matrix_cell(found != red.end(), gates[g] == killer, outcome);
      std::string tip = fmt::format("{} on {}: {}", f.value("fault", ""), gates[g], cell.meaning);
      if (found != red.end()) {
        const json& e = *found->second;
        tip +=
            fmt::format(" (red on {}: error {} / bar {})",
                        fmt::join(e.value("terms", std::vector<std::string>{}), ", "),
                        json_figure(e.value("error", json())), json_figure(e.value("bar", json())));
      }
      svg.rect(x + 0.5, y + 2, kCell - 1, kRow - 4, cell.fill, tip,
               cell.outlined ? "stroke=\"#1a1a1a\" stroke-width=\"1.5\"" : "");
    }
  }
  return svg.finish();
}

// The frame of a log-log plot: the square at (left, top) of side `size`, a
// grid line per decade of `x` (labelled every `label_every`-th) and the two
// axis titles.
void log_log_frame(Svg& svg, const LogAxis& x, const LogAxis& y, double left, double top,
                   double size, int label_every, std::string_view x_title,
                   std::string_view y_title) {
  svg.rect(left, top, size, size, "#fafafa", "", "stroke=\"#999\"");
  for (int dec = x.first_decade(); dec <= x.last_decade(); ++dec) {
    const double v = std::pow(10.0, dec);
    svg.line(x.at(v), top, x.at(v), top + size, "#e2e2e2");
    svg.line(left, y.at(v), left + size, y.at(v), "#e2e2e2");
    if ((dec - x.first_decade()) % label_every != 0) continue;
    svg.text(x.at(v), top + size + 14, fmt::format("1e{}", dec), "middle", "font-size=\"10\"");
    svg.text(left - 4, y.at(v) + 3, fmt::format("1e{}", dec), "end", "font-size=\"10\"");
  }
  svg.text(left + size / 2, top + size + 32, x_title, "middle", "font-size=\"11\"");
  svg.text(16, top + size / 2, y_title, "middle",
           fmt::format("font-size=\"11\" transform=\"rotate(-90 16 {})\"", px(top + size / 2)));
}

// Separation: each gate's clean error (x) against the smallest error a kernel
// fault made on it (y), log-log; y = x and y = 10 x drawn. A point under the
// 10x line is a weak gate. Gates no fault turned red sit on the top edge.
std::string separation_plot(const json& d) {
  constexpr double kLeft = 64, kBottom = 44, kSize = 420, kTop = 14, kRight = 220;
  LogAxis x_axis{1e-9, 1e-6, kLeft, kLeft + kSize};
  LogAxis y_axis{1e-9, 1e-6, kTop + kSize, kTop};
  for (const auto& s : d["separation"]) {
    const json& clean = s["clean_error"];
    const json& fault = s["smallest_fault_error"];
    if (clean.is_number()) {
      x_axis.widen(clean.get<double>());
      y_axis.widen(clean.get<double>());
    }
    if (fault.is_number()) y_axis.widen(fault.get<double>());
  }
  // one range for both axes, so y = x is the diagonal
  x_axis.lo = y_axis.lo = std::min(x_axis.lo, y_axis.lo);
  x_axis.hi = y_axis.hi = std::max(x_axis.hi, y_axis.hi);
  Svg svg(kLeft + kSize + kRight, kTop + kSize + kBottom,
          "separation: clean error against the smallest fault error");
  log_log_frame(svg, x_axis, y_axis, kLeft, kTop, kSize, 2,
                "clean error (rel, the gate's worst term)", "smallest kernel-fault error");
  auto diagonal = [&](double factor, const char* style, const char* label) {
    const double lo = x_axis.lo, hi = x_axis.hi / factor / 1.001;
    svg.line(x_axis.at(lo), y_axis.at(lo * factor), x_axis.at(hi), y_axis.at(hi * factor),
             "#1a1a1a", style);
    svg.text(x_axis.at(hi) - 6, y_axis.at(hi * factor) + 14, label, "end", "font-size=\"10\"");
  };
  diagonal(1.0, "stroke-dasharray=\"2 3\"", "y = x");
  diagonal(10.0, "stroke-width=\"1.5\"", "10x");
  std::map<std::string, std::size_t> backends;
  for (const auto& s : d["separation"]) backends.emplace(s.value("backend", ""), backends.size());
  // marker shapes as well as colours, so the backends part without colour
  auto marker = [&](std::size_t b, double x, double y, bool hollow, const std::string& tip) {
    const std::string fill = hollow ? "none" : colour::categories[b % 8];
    const std::string stroke = fmt::format(
        "stroke=\"{}\" stroke-width=\"1.3\" fill-opacity=\"0.75\"", colour::categories[b % 8]);
    switch (b % 3) {
      case 0:
        svg.element(
            "circle",
            fmt::format("cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\" {}", px(x), px(y), fill, stroke),
            tip);
        break;
      case 1:
        svg.rect(x - 3.2, y - 3.2, 6.4, 6.4, fill, tip, stroke);
        break;
      default:
        svg.element("path",
                    fmt::format("d=\"M{} {} L{} {} L{} {} Z\" fill=\"{}\" {}", px(x), px(y - 4.2),
                                px(x + 4), px(y + 3), px(x - 4), px(y + 3), fill, stroke),
                    tip);
    }
  };
  int unfalsified = 0, weak = 0;
  for (const auto& s : d["separation"]) {
    const bool falsified = s.value("falsified", false);
    const double clean = s["clean_error"].is_number() ? s["clean_error"].get<double>() : 0.0;
    const double fault = falsified && s["smallest_fault_error"].is_number()
                             ? s["smallest_fault_error"].get<double>()
                             : y_axis.hi;
    unfalsified += !falsified;
    weak += s.value("weak", false);
    const std::string tip =
        fmt::format("{}: clean {} ({}), smallest fault {} ({} on {}), ratio {}{}",
                    s.value("gate", ""), json_figure(s["clean_error"]), s.value("clean_term", ""),
                    falsified ? json_figure(s["smallest_fault_error"]) : "none",
                    s.value("smallest_fault", "-"), s.value("smallest_fault_term", "-"),
                    json_figure(s["separation"]), s.value("weak", false) ? " WEAK" : "");
    marker(backends[s.value("backend", "")], x_axis.at(clean), y_axis.at(fault), !falsified, tip);
  }
  double y = kTop + 8;
  for (const auto& [backend, b] : backends) {
    marker(b, kLeft + kSize + 40, y, false, backend);
    svg.text(kLeft + kSize + 50, y + 4, backend, "start", "font-size=\"11\"");
    y += 18;
  }
  svg.text(kLeft + kSize + 34, y + 8, "hollow: no fault", "start", "font-size=\"10\"");
  svg.text(kLeft + kSize + 34, y + 22, "turned it red (top)", "start", "font-size=\"10\"");
  svg.text(kLeft + kSize + 34, y + 44, fmt::format("weak (under 10x): {}", weak), "start",
           "font-size=\"10\"");
  svg.text(kLeft + kSize + 34, y + 58, fmt::format("no fault: {}", unfalsified), "start",
           "font-size=\"10\"");
  return svg.finish();
}

std::string fault_table(const json& d, const std::string& anchor) {
  Table table(anchor + "-faults", "faults",
              {{"name", "fault"},
               {"class", "class", false, true},
               {"backend", "backend", false, true},
               {"status", "status", false, true},
               {"red", "red gates", true},
               {"killer", "killer (gate, term)"},
               {"margin", "margin", true},
               {"", "sanitizer"}});
  for (const auto& f : d["faults"]) {
    const std::string status = f.value("status", "");
    std::string details = "<p>" + escape(f.value("reason", "")) + "</p>";
    const auto broken = f.value("broken", std::vector<std::string>{});
    if (!broken.empty()) {
      details += "<ul class=\"tight reason\">";
      for (const auto& b : broken) details += "<li>" + escape(b) + "</li>";
      details += "</ul>";
    }
    std::string sanitizer = "-";
    if (f.contains("sanitizer") && f["sanitizer"].is_object()) {
      const json& s = f["sanitizer"];
      sanitizer =
          fmt::format("{} {} on {}: {}", badge(s.value("caught", false) ? "caught" : "not caught"),
                      escape(json_text(s, "tool")), code(json_text(s, "gate")),
                      escape(json_text(s, "summary")));
    }
    const std::string killer = f.value("gate", "");
    const double margin =
        f.contains("margin") && f["margin"].is_number() ? f["margin"].get<double>() : std::nan("");
    table.add_row(
        {escape(f.value("fault", "")), escape(f.value("class", "")), escape(f.value("backend", "")),
         badge(status),
         fmt::format("{} of {}", f.value("red", json::array()).size(), f.value("gates", 0)),
         killer.empty() ? "-" : code(killer) + " " + escape(f.value("term", "")),
         status == "Ignored" ? "-" : escape(f.value("margin_text", ratio_text(margin))), sanitizer},
        {{"name", f.value("fault", "")},
         {"class", f.value("class", "")},
         {"backend", f.value("backend", "")},
         {"status", status},
         {"red", fmt::format("{}", f.value("red", json::array()).size())},
         {"margin", number_value(margin)}},
        details, status != "Killed" && status != "Ignored");
  }
  return table.finish();
}

// A campaign's or a mutation run's tree check, as its header says it.
std::string tree_text(const json& d) {
  return escape(fmt::format(
      "{} tracked files {}", d["tree"].value("tracked_files", 0),
      d["tree"].value("unchanged", false) ? "unchanged (hashed before and after)" : "CHANGED"));
}

std::string campaign_section(const json& report, const std::filesystem::path& path,
                             const std::string& anchor) {
  const json& d = report["deltaproof"];
  std::vector<std::string> counts;
  for (const auto& [status, n] : d["summary"]["statuses"].items())
    counts.push_back(fmt::format("{} {}", n.get<int>(), status));
  std::string out = fmt::format(
      "<section class=\"campaign\" id=\"{}\"><h2>falsification campaign: {}</h2>"
      "<p class=\"big\"><span class=\"verdict\">{}</span> <span class=\"counts\">{} (fault, "
      "backend) runs: {}</span></p>",
      escape(anchor), escape(path.filename().string()), badge(d.value("verdict", "?")),
      d["summary"].value("faults", 0), escape(fmt::format("{}", fmt::join(counts, ", "))));
  std::string baselines;
  for (const auto& b : d["baseline"]["backends"])
    baselines +=
        fmt::format("{} clean {}/{} green, poison {}/{} red {}<br>", code(b.value("backend", "")),
                    b.value("clean_green", 0), b.value("gates", 0), b.value("poison_red", 0),
                    b.value("gates", 0), badge(b.value("ok", false) ? "pass" : "fail"));
  out += key_values(
      {{"file", code(path.string())},
       {"tool", escape(d.value("tool", "?"))},
       {"commit", code(d.value("git_commit", "?"))},
       {"device", escape(d.value("device", "?"))},
       {"date", escape(d.value("created", "?"))},
       {"command", code(d.value("command", "?"))},
       {"catalog", code(d.value("catalog", "?"))},
       {"backends", escape(fmt::format(
                        "{}", fmt::join(d.value("backends", std::vector<std::string>{}), ", ")))},
       {"baselines", baselines},
       {"source tree", tree_text(d)},
       {"Stryker schema", escape(report.value("schemaVersion", "?"))}});
  out +=
      "<h3>faults</h3><p class=\"note\">Each fault run on a backend: its status, how many of "
      "the backend's gates it turned red, the killer (the expected-red gate it cleared by "
      "least) and the margin (its error over the bar there). + opens the reason.</p>";
  out += fault_table(d, anchor);
  out +=
      "<h3>faults by gates</h3><p class=\"note\">A row per fault, a column per gate of the "
      "backend (its name without the backend), each cell what the fault did to the gate, "
      "judged against the catalog; an outline marks a broken expectation. Hover a cell for the "
      "terms and the error.</p><div class=\"legend\">" +
      matrix_legend() + "</div>";
  for (const auto& backend : d.value("backends", std::vector<std::string>{})) {
    const std::string matrix = fault_matrix(d, backend);
    if (!matrix.empty())
      out +=
          fmt::format("<h3>{}</h3><div class=\"scroll matrix\">{}</div>", escape(backend), matrix);
  }
  out +=
      "<h3>separation</h3><p class=\"note\">Each gate's clean error (its worst term) against the "
      "smallest error any kernel fault made on it. Below the 10x line a gate is weak: a fault "
      "as small as ten times its clean noise could pass it.</p>";
  out += "<div class=\"scroll separation\">" + separation_plot(d) + "</div>";
  std::string sanitizers;
  for (const auto& f : d["faults"]) {
    if (!f.contains("sanitizer") || !f["sanitizer"].is_object()) continue;
    const json& s = f["sanitizer"];
    sanitizers += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                              escape(f.value("fault", "")), escape(f.value("backend", "")),
                              escape(json_text(s, "tool")), escape(json_text(s, "summary")),
                              badge(s.value("caught", false) ? "caught" : "not caught"));
  }
  out += "<h3>sanitizer evidence</h3>";
  out += sanitizers.empty()
             ? "<p class=\"note\">No fault of this campaign asks for compute-sanitizer (the "
               "CUDA campaigns in reports/gpu/ do).</p>"
             : "<table><thead><tr><th>fault</th><th>backend</th><th>tool</th><th>summary</th>"
               "<th>verdict</th></tr></thead><tbody>" +
                   sanitizers + "</tbody></table>";
  return out + "</section>";
}

// ---- a mutation run -------------------------------------------------------

std::string score_table(const json& table, const char* what) {
  std::string out = fmt::format(
      "<table class=\"scores\"><thead><tr><th>{}</th><th>Killed</th><th>Survived</th>"
      "<th>NoEffect</th><th>NoCoverage</th><th>Timeout</th><th>RuntimeError</th>"
      "<th>CompileError</th><th>score</th></tr></thead><tbody>",
      what);
  for (const auto& [key, s] : table.items())
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td><b>{}</b></td></tr>",
        code(key), s.value("Killed", 0), s.value("Survived", 0), s.value("NoEffect", 0),
        s.value("NoCoverage", 0), s.value("Timeout", 0), s.value("RuntimeError", 0),
        s.value("CompileError", 0), escape(s.value("score_text", "-")));
  return out + "</tbody></table>";
}

std::string mutation_section(const json& report, const std::filesystem::path& path,
                             const std::string& anchor) {
  const json& d = report["deltaproof"];
  const json& summary = d["summary"];
  std::string out = fmt::format(
      "<section class=\"mutation\" id=\"{}\"><h2>mutation run: {}</h2>"
      "<p class=\"big\"><span class=\"verdict\">{}</span> <span class=\"counts\">score "
      "<b class=\"score\">{}</b> = killed / (killed + survived), NoEffect set aside; {} of {} "
      "mutants</span></p>",
      escape(anchor), escape(path.filename().string()), badge(d.value("verdict", "?")),
      escape(summary.value("score_text", "-")), summary.value("mutants", 0),
      summary.value("mutants_found", 0));
  const json& base = d["baseline"];
  out += key_values(
      {{"file", code(path.string())},
       {"tool", escape(d.value("tool", "?"))},
       {"commit", code(d.value("git_commit", "?")) + " (mutated " +
                      code(d.value("mutated_commit", "?")) + ")"},
       {"device", escape(d.value("device", "?"))},
       {"date", escape(d.value("created", "?"))},
       {"command", code(d.value("command", "?"))},
       {"mutated",
        escape(fmt::format("{}",
                           fmt::join(d.value("mutated_files", std::vector<std::string>{}), ", ")))},
       {"build", escape(fmt::format("{} rounds, {:.0f} s", d["build"].value("rounds", 0),
                                    d["build"].value("seconds", 0.0)))},
       {"baseline",
        escape(fmt::format("{} gates, {} green, {:.0f} s; {} mutant points reached",
                           base.value("gates", 0), base.value("clean_green", 0),
                           base.value("seconds", 0.0), base.value("points_reached", 0))) +
            " " + badge(base.value("ok", false) ? "pass" : "fail")},
       {"source tree", tree_text(d)},
       {"Stryker schema", escape(report.value("schemaVersion", "?"))}});
  out += "<h3>score by file</h3>" + score_table(summary["score_by_file"], "file");
  out += "<h3>score by operator</h3>" + score_table(summary["score_by_operator"], "operator");
  out +=
      "<h3>mutants</h3><p class=\"note\">Every mutant: where, what, its status and the first "
      "gate that went red. + opens the reason and the diff; survivors start open.</p>";
  Table table(anchor + "-mutants", "mutants",
              {{"id", "id", true},
               {"file", "file", false, true},
               {"line", "line", true},
               {"operator", "operator", false, true},
               {"status", "status", false, true},
               {"function", "function", false, true},
               {"edit", "edit"},
               {"killer", "killed by (first red gate, term)"}});
  for (const auto& [file, f] : report["files"].items()) {
    const std::string source = f.value("source", "");
    for (const auto& m : f.value("mutants", json::array())) {
      const std::string status = m.value("deltaproofStatus", m.value("status", ""));
      const falsify::MutantDiff diff = falsify::mutant_diff(source, m);
      std::string lines;
      for (const auto& l : diff.before) lines += "<span class=\"del\">- " + escape(l) + "</span>\n";
      for (const auto& l : diff.after) lines += "<span class=\"ins\">+ " + escape(l) + "</span>\n";
      const std::string details = "<p>" + escape(m.value("statusReason", "")) +
                                  "</p><pre class=\"diff\">" + lines + "</pre>";
      const int line = m["location"]["start"].value("line", 0);
      const std::string killer = m.value("gate", "");
      table.add_row(
          {escape(m.value("id", "")), code(file), fmt::format("{}", line),
           escape(m.value("mutatorName", "")), badge(status), escape(m.value("function", "")),
           code(m.value("original", "")) + " &rarr; " + code(m.value("replacement", "")),
           killer.empty() ? "-" : code(killer) + " " + escape(m.value("term", ""))},
          {{"id", m.value("id", "")},
           {"file", file},
           {"line", fmt::format("{}", line)},
           {"operator", m.value("mutatorName", "")},
           {"status", status},
           {"function", m.value("function", "")}},
          details, status == "Survived");
    }
  }
  out += table.finish();
  return out + "</section>";
}

// ---- a diff ---------------------------------------------------------------

// rel in A (x) against rel in B (y), log-log, y = x and the 10% bands.
std::string diff_plot(const gates::ReportDiff& diff) {
  constexpr double kLeft = 64, kSize = 380, kTop = 14, kBottom = 44, kRight = 120;
  LogAxis x_axis{1e-8, 1e-6, kLeft, kLeft + kSize};
  for (const auto& gate : diff.gates)
    for (const auto& t : gate.terms)
      if (t.a && t.b) {
        x_axis.widen(t.a->rel);
        x_axis.widen(t.b->rel);
      }
  LogAxis y_axis{x_axis.lo, x_axis.hi, kTop + kSize, kTop};
  Svg svg(kLeft + kSize + kRight, kTop + kSize + kBottom, "rel in A against rel in B, per term");
  log_log_frame(svg, x_axis, y_axis, kLeft, kTop, kSize, 1, "rel in A", "rel in B");
  svg.line(x_axis.at(x_axis.lo), y_axis.at(y_axis.lo), x_axis.at(x_axis.hi), y_axis.at(y_axis.hi),
           "#1a1a1a", "stroke-dasharray=\"2 3\"");
  for (const auto& gate : diff.gates)
    for (const auto& t : gate.terms) {
      if (!t.a || !t.b || !(t.a->rel > 0) || !(t.b->rel > 0)) continue;
      const char* fill = t.change == gates::Change::worse    ? colour::fail
                         : t.change == gates::Change::better ? colour::pass
                                                             : colour::neutral;
      svg.element("circle",
                  fmt::format("cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\" fill-opacity=\"0.8\"",
                              px(x_axis.at(t.a->rel)), px(y_axis.at(t.b->rel)), fill),
                  fmt::format("{} {}: {} -> {} ({})", gate.a->name, t.a->term, figure(t.a->rel),
                              figure(t.b->rel), gates::change_name(t.change)));
    }
  double y = kTop + 10;
  for (const auto& [name, fill] :
       {std::pair{"worse (above)", colour::fail}, std::pair{"better (below)", colour::pass},
        std::pair{"same", colour::neutral}}) {
    svg.element("circle", fmt::format("cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"",
                                      px(kLeft + kSize + 16), px(y), fill));
    svg.text(kLeft + kSize + 24, y + 4, name, "start", "font-size=\"11\"");
    y += 18;
  }
  return svg.finish();
}

std::string rel_or_dash(const TermComparison* term) {
  if (!term) return "-";
  return rel_text(*term);
}

std::string diff_body(const gates::ReportFile& a, const gates::ReportFile& b) {
  const gates::ReportDiff d = gates::diff_reports(a, b);
  const bool red = !d.turned_red.empty();
  std::string out = fmt::format(
      "<section class=\"diff\" id=\"diff\"><h2>diff: {} against {}</h2>"
      "<p class=\"big\"><span class=\"verdict\">{}</span> <span class=\"counts\">{} gates in "
      "both, {} with a changed verdict; {} only in A, {} only in B; terms: {} worse, {} better, "
      "{} same</span></p>",
      escape(b.path.filename().string()), escape(a.path.filename().string()),
      badge(red ? "fail" : "pass"), d.gates.size(), d.verdicts_changed, d.only_a.size(),
      d.only_b.size(), d.worse, d.better, d.same);
  auto source = [](const gates::ReportFile& r) {
    return fmt::format("{} (commit {}, {}, {} gates, {})", code(r.path.string()),
                       code(r.git_commit), escape(r.created), r.gates.size(), escape(r.device));
  };
  out += key_values({{"A (before)", source(a)}, {"B (after)", source(b)}});
  if (red) {
    out += "<p class=\"reason\">passed in A, not in B:</p><ul class=\"tight reason\">";
    for (const auto& r : d.turned_red) out += "<li>" + escape(r) + "</li>";
    out += "</ul>";
  } else {
    out += "<p>Nothing that passed in A fails in B.</p>";
  }
  out += fmt::format(
      "<p class=\"note\">Worse: rel in B above {:.1f}x its rel in A (or newly non-finite); better: "
      "the other way. Each point is a term in both.</p><div class=\"scroll\">{}</div>",
      gates::kWorseRatio, diff_plot(d));
  Table table("diff-terms", "terms",
              {{"name", "gate"},
               {"term", "term", false, true},
               {"change", "change", false, true},
               {"verdict", "verdict (A -> B)", false, true},
               {"rela", "rel A", true},
               {"relb", "rel B", true},
               {"ratio", "B / A", true},
               {"status", "status (A -> B)"}});
  for (const auto& gate : d.gates) {
    const std::string verdict = gate.a->verdict == gate.b->verdict
                                    ? std::string(gates::verdict_name(gate.a->verdict))
                                    : fmt::format("{} -> {}", gates::verdict_name(gate.a->verdict),
                                                  gates::verdict_name(gate.b->verdict));
    for (const auto& t : gate.terms) {
      const std::string change = !t.a   ? "only in B"
                                 : !t.b ? "only in A"
                                        : std::string(gates::change_name(t.change));
      double ratio = std::nan("");
      if (t.a && t.b && std::isfinite(t.a->rel) && std::isfinite(t.b->rel))
        ratio = t.a->rel == 0 ? (t.b->rel == 0 ? 1.0 : kInf) : t.b->rel / t.a->rel;
      const std::string status =
          t.a && t.b ? (t.a->status == t.b->status
                            ? std::string(gates::status_name(t.a->status))
                            : fmt::format("{} -> {}", gates::status_name(t.a->status),
                                          gates::status_name(t.b->status)))
                     : "-";
      const std::string term = t.a ? t.a->term : t.b->term;
      table.add_row({escape(gate.a->name), escape(term), badge(change), escape(verdict),
                     rel_or_dash(t.a), rel_or_dash(t.b), ratio_text(ratio), escape(status)},
                    {{"name", gate.a->name},
                     {"term", term},
                     {"change", change},
                     {"verdict", verdict},
                     {"rela", t.a ? number_value(t.a->rel) : "nan"},
                     {"relb", t.b ? number_value(t.b->rel) : "nan"},
                     {"ratio", number_value(ratio)}});
    }
  }
  out += table.finish();
  if (!d.only_a.empty() || !d.only_b.empty()) {
    out += "<h3>gates in one report only</h3><ul class=\"tight\">";
    for (const auto* g : d.only_a)
      out += fmt::format("<li>only in A: {} ({})</li>", code(g->name),
                         gates::verdict_name(g->verdict));
    for (const auto* g : d.only_b)
      out += fmt::format("<li>only in B: {} ({})</li>", code(g->name),
                         gates::verdict_name(g->verdict));
    out += "</ul>";
  }
  return out + "</section>";
}

}  // namespace

std::string reports_page(const std::vector<std::filesystem::path>& files) {
  std::vector<std::string> sections, names;
  std::string toc;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string anchor = fmt::format("report-{}", i + 1);
    const json stryker = falsify::stryker_report_at(files[i]);
    std::string verdict;
    if (falsify::is_mutate_report(stryker)) {
      verdict = stryker["deltaproof"].value("verdict", "?");
      sections.push_back(mutation_section(stryker, files[i], anchor));
    } else if (falsify::is_falsify_report(stryker)) {
      verdict = stryker["deltaproof"].value("verdict", "?");
      sections.push_back(campaign_section(stryker, files[i], anchor));
    } else {
      const gates::ReportFile report = gates::read_report_file(files[i]);
      verdict = gates::verdict_name(report.verdict);
      sections.push_back(gate_report_section(report, anchor));
    }
    names.push_back(files[i].filename().string());
    toc += fmt::format("<span>{} <a href=\"#{}\">{}</a></span>", badge(verdict), anchor,
                       escape(names.back()));
  }
  std::string body = fmt::format("<h1>deltaproof report: {}</h1>",
                                 escape(fmt::format("{}", fmt::join(names, ", "))));
  if (files.size() > 1) body += "<nav class=\"toc\">" + toc + "</nav>";
  for (const auto& s : sections) body += s;
  return page(fmt::format("deltaproof: {}", fmt::join(names, ", ")), body);
}

std::string diff_page(const std::filesystem::path& a, const std::filesystem::path& b) {
  const gates::ReportFile report_a = gates::read_report_file(a);
  const gates::ReportFile report_b = gates::read_report_file(b);
  const std::string title =
      fmt::format("deltaproof diff: {} -> {}", a.filename().string(), b.filename().string());
  return page(title, "<h1>" + escape(title) + "</h1>" + diff_body(report_a, report_b));
}

}  // namespace deltaproof::html
