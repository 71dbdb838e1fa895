// falsify/mutate_json.hpp — the two figures every part of `falsify mutate`
// (mutate.cpp, mutate_journal.cpp, mutate_report.cpp) writes the same way.
#pragma once

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace deltaproof::falsify::detail {

// A figure as JSON: null where it is NaN or infinite (as nlohmann::json writes them).
inline nlohmann::json number(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

// A score as a percentage with one decimal, "-" when there is none (NaN).
inline std::string score_text(double score) {
  return std::isnan(score) ? std::string("-") : fmt::format("{:.1f}%", 100.0 * score);
}

}  // namespace deltaproof::falsify::detail
