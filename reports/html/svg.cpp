// reports/html/svg.cpp — see svg.hpp.
#include "reports/html/svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

namespace deltaproof::html {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string figure(double value) {
  if (std::isnan(value)) return "-";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value == 0.0 ? "0" : fmt::format("{:.2e}", value);
}

std::string viridis(double t) {
  // matplotlib's viridis at nine evenly spaced stops
  static constexpr std::array<std::array<int, 3>, 9> stops{{{68, 1, 84},
                                                            {71, 44, 122},
                                                            {59, 81, 139},
                                                            {44, 113, 142},
                                                            {33, 144, 141},
                                                            {39, 173, 129},
                                                            {92, 200, 99},
                                                            {170, 220, 50},
                                                            {253, 231, 37}}};
  if (!(t > 0.0)) t = 0.0;
  t = std::min(t, 1.0) * (stops.size() - 1);
  const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(i);
  std::array<int, 3> rgb{};
  for (int c = 0; c < 3; ++c)
    rgb[c] = static_cast<int>(std::lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c])));
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

double LogAxis::at(double value) const {
  if (!(value > 0.0)) return pixel_lo;
  const double f = (std::log10(value) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return pixel_lo + std::clamp(f, 0.0, 1.0) * (pixel_hi - pixel_lo);
}

void LogAxis::widen(double value) {
  if (!(value > 0.0) || !std::isfinite(value)) return;
  lo = std::min(lo, std::pow(10.0, std::floor(std::log10(value))));
  hi = std::max(hi, std::pow(10.0, std::ceil(std::log10(value))));
}

int LogAxis::first_decade() const { return static_cast<int>(std::lround(std::log10(lo))); }
int LogAxis::last_decade() const { return static_cast<int>(std::lround(std::log10(hi))); }

std::string px(double value) { return fmt::format("{:.1f}", value); }

Svg::Svg(double width, double height, std::string_view label)
    : width_(width), height_(height), label_(label) {}

Svg& Svg::element(std::string_view name, std::string_view attrs, std::string_view tooltip) {
  if (tooltip.empty()) {
    body_ += fmt::format("<{} {}/>", name, attrs);
  } else {
    body_ += fmt::format("<{} {}><title>{}</title></{}>", name, attrs, escape(tooltip), name);
  }
  return *this;
}

Svg& Svg::rect(double x, double y, double w, double h, std::string_view fill,
               std::string_view tooltip, std::string_view extra) {
  return element("rect",
                 fmt::format("x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}{}", px(x),
                             px(y), px(w), px(h), fill, extra.empty() ? "" : " ", extra),
                 tooltip);
}

Svg& Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke,
               std::string_view extra) {
  return element("line",
                 fmt::format("x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\"{}{}", px(x1),
                             px(y1), px(x2), px(y2), stroke, extra.empty() ? "" : " ", extra));
}

Svg& Svg::text(double x, double y, std::string_view content, std::string_view anchor,
               std::string_view extra) {
  body_ += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}{}>{}</text>", px(x), px(y),
                       anchor, extra.empty() ? "" : " ", extra, escape(content));
  return *this;
}

Svg& Svg::raw(std::string_view markup) {
  body_ += markup;
  return *this;
}

std::string Svg::finish() const {
  return fmt::format(
      "<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\">{}</svg>",
      px(width_), px(height_), px(width_), px(height_), escape(label_), body_);
}

}  // namespace deltaproof::html
