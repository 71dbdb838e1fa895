// tests/reports/html_test.cpp — the pieces of the HTML report
// (reports/html/svg.hpp, page.hpp): escaping, figures, the colour scale, the
// log axis, the sortable table, the page's self-containment. The pages
// themselves are tested in a browser (tests/browser/html_report_test.py) and
// through the CLI (tests/cli/report_cli_test.sh).
#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "falsify/mutate.hpp"
#include "reports/html/html_report.hpp"
#include "reports/html/page.hpp"
#include "reports/html/svg.hpp"

namespace deltaproof::html {
namespace {

TEST(Html, EscapesMarkupInTextAndAttributes) {
  EXPECT_EQ(escape("<b a=\"1\">&'x'</b>"), "&lt;b a=&quot;1&quot;&gt;&amp;&#39;x&#39;&lt;/b&gt;");
  EXPECT_EQ(escape("gdn2.cpu-chunk.t40-c16.bwd"), "gdn2.cpu-chunk.t40-c16.bwd");
}

TEST(Html, FiguresAsTheTextReportPrintsThem) {
  EXPECT_EQ(figure(1.25e-1), "1.25e-01");
  EXPECT_EQ(figure(0.0), "0");
  EXPECT_EQ(figure(std::nan("")), "-");
  EXPECT_EQ(figure(INFINITY), "inf");
}

// Perceived lightness must rise along the scale, so its order survives
// grey-scale printing and colour-vision deficiencies.
TEST(Html, ViridisRunsDarkToLightAndClamps) {
  EXPECT_EQ(viridis(0.0), "#440154");
  EXPECT_EQ(viridis(1.0), "#fde725");
  EXPECT_EQ(viridis(-3.0), viridis(0.0));
  EXPECT_EQ(viridis(7.0), viridis(1.0));
  EXPECT_EQ(viridis(std::nan("")), viridis(0.0));
  auto lightness = [](const std::string& hex) {
    const int r = std::stoi(hex.substr(1, 2), nullptr, 16);
    const int g = std::stoi(hex.substr(3, 2), nullptr, 16);
    const int b = std::stoi(hex.substr(5, 2), nullptr, 16);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  for (int i = 1; i <= 20; ++i)
    EXPECT_GT(lightness(viridis(i / 20.0)), lightness(viridis((i - 1) / 20.0))) << "step " << i;
}

TEST(Html, LogAxisMapsDecadesAndClamps) {
  LogAxis axis{1e-8, 1e-4, 0.0, 400.0};
  EXPECT_DOUBLE_EQ(axis.at(1e-8), 0.0);
  EXPECT_DOUBLE_EQ(axis.at(1e-6), 200.0);
  EXPECT_DOUBLE_EQ(axis.at(1e-2), 400.0);  // above: the top
  EXPECT_DOUBLE_EQ(axis.at(0.0), 0.0);     // 0 (nothing to log): the bottom
  LogAxis down{1e-8, 1e-4, 300.0, 0.0};    // y axes run upward
  EXPECT_DOUBLE_EQ(down.at(1e-4), 0.0);
  axis.widen(3e-10);
  axis.widen(0.5);
  axis.widen(std::nan(""));
  EXPECT_EQ(axis.first_decade(), -10);
  EXPECT_EQ(axis.last_decade(), 0);
}

TEST(Html, TableRowsCarryTheirValuesAndFiltersListThem) {
  Table table(
      "t", "gates",
      {{"name", "gate"}, {"verdict", "verdict", false, true}, {"worst", "rel / bar", true}});
  table.add_row({"a&b", "pass", "0.5"}, {{"name", "a&b"}, {"verdict", "pass"}, {"worst", "0.5"}});
  table.add_row({"c", "fail", "inf"}, {{"name", "c"}, {"verdict", "fail"}, {"worst", "inf"}},
                "<p>why</p>", true);
  const std::string html = table.finish();
  EXPECT_NE(html.find("<tbody class=\"row\" data-name=\"a&amp;b\" data-verdict=\"pass\" "
                      "data-worst=\"0.5\">"),
            std::string::npos);
  EXPECT_NE(html.find("<select data-key=\"verdict\"><option value=\"\">all</option>"
                      "<option>fail</option><option>pass</option></select>"),
            std::string::npos);
  EXPECT_NE(html.find("<th data-key=\"worst\" data-numeric>"), std::string::npos);
  // an open row shows its details; a closed one would carry `hidden`
  EXPECT_NE(html.find("<tr class=\"details\"><td colspan=\"3\"><div class=\"detail-body\"><p>why"),
            std::string::npos);
  EXPECT_NE(html.find("2 gates"), std::string::npos);
}

// No network: nothing in the page's frame refers to another file.
TEST(Html, PageIsSelfContained) {
  const std::string html = page("t <1>", "<p>body</p>");
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(html.find("<title>t &lt;1&gt;</title>"), std::string::npos);
  for (const char* external : {"src=", "href=", "url(", "@import", "http:", "https:"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
}

// A mutation run's page: the score, a row per mutant, the survivor's diff
// (escaped) open from the start.
TEST(Html, MutationRunShowsTheScoreEveryMutantAndTheSurvivorsDiff) {
  falsify::MutateResult result;
  result.source_top = "/src";
  result.sources["kernels/cpu/toy.cpp"] = "float toy(float a, float b) {\n  return a < b;\n}\n";
  const falsify::MutantStatus statuses[] = {falsify::MutantStatus::killed,
                                            falsify::MutantStatus::survived,
                                            falsify::MutantStatus::no_effect};
  for (int i = 0; i < 3; ++i) {
    falsify::MutantOutcome o;
    o.mutant.id = i + 1;
    o.mutant.file = "kernels/cpu/toy.cpp";
    o.mutant.op = "relational";
    o.mutant.original = "<";
    o.mutant.replacement = "<=";
    o.mutant.line = 2;
    o.mutant.column = 12;
    o.mutant.offset = 41;
    o.mutant.length = 1;
    o.status = statuses[i];
    result.mutants.push_back(o);
  }
  falsify::MutateOptions options;
  options.files = {"kernels/cpu/toy.cpp"};
  const auto path = std::filesystem::temp_directory_path() / "deltaproof-html-mutation.json";
  write_text_atomically(path, falsify::mutate_report(result, options, "test").dump());
  const std::string html = reports_page({path});
  std::filesystem::remove(path);
  EXPECT_NE(html.find("mutation run: deltaproof-html-mutation.json"), std::string::npos);
  EXPECT_NE(html.find("<b class=\"score\">50.0%</b>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"count\">3 mutants</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"del\">-   return a &lt; b;</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"ins\">+   return a &lt;= b;</span>"), std::string::npos);
  EXPECT_NE(html.find("NoEffect"), std::string::npos);
}

TEST(Html, MissingReportIsAnInputErrorNamingTheFile) {
  try {
    reports_page({"no/such/report.json"});
    FAIL() << "no error for a missing report";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no/such/report.json"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace deltaproof::html
