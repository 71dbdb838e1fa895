// reports/html/html_report.hpp — `deltaproof report html`: JSON reports as
// one self-contained HTML page (reports/html/page.hpp), with SVG drawn here.
//   a gate report (deltaproof-report/1): header (verdict, counts, tool,
//     commit, device, command, date); the gates as a table that sorts and
//     filters by op, backend, phase, kind, class and verdict, each term's
//     error drawn against its bar; per gate, its terms, reasons, fixture,
//     bars and a term-by-chunk heat map of the error (log scale, bar marked,
//     worst chunk dotted);
//   a campaign report (Stryker schema + "deltaproof"): header, baselines,
//     the faults (status, killer, margin, sanitizer), the fault-by-gate
//     matrix per backend, the separation plot (clean error against the
//     smallest fault error, log-log, the 10x line);
//   a diff of two gate reports: which gates and terms got better or worse.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace deltaproof::html {

// The page for `files`, each a gate report or a campaign report (told apart
// by their schema), one section each. Throws InputError naming the file for
// one that is neither, or that its schema refuses.
std::string reports_page(const std::vector<std::filesystem::path>& files);

// The page of `report diff A B`.
std::string diff_page(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace deltaproof::html
