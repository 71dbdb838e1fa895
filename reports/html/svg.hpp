// reports/html/svg.hpp — the pieces the HTML report draws with: text
// escaping, figures as the text reports print them, a log-10 axis, the
// colour-blind-safe palettes (Okabe-Ito for categories, viridis for
// magnitudes) and an SVG element writer. Nothing here knows about a gate.
#pragma once

#include <string>
#include <string_view>

namespace deltaproof::html {

// Text and attribute values: & < > " ' escaped.
std::string escape(std::string_view text);

// 1.23e-07; "0" for 0; "-" for NaN; "inf" for inf.
std::string figure(double value);

// Okabe-Ito: readable with any of the common colour-vision deficiencies.
namespace colour {
inline constexpr const char* pass = "#0072B2";     // blue
inline constexpr const char* fail = "#D55E00";     // vermillion
inline constexpr const char* skipped = "#E69F00";  // orange
inline constexpr const char* neutral = "#999999";
// for series (backends): vermillion left out, it means red everywhere else
inline constexpr const char* categories[] = {"#0072B2", "#009E73", "#CC79A7", "#E69F00",
                                             "#56B4E9", "#000000", "#F0E442", "#999999"};
}  // namespace colour

// viridis at t in [0, 1] (clamped), as "#rrggbb": dark blue (0) to yellow (1),
// monotone in lightness, so its order reads in grey and to the colour-blind.
std::string viridis(double t);

// A log-10 axis: value v in [lo, hi] maps to [pixel_lo, pixel_hi] (either
// direction); values outside clamp to the ends, and 0 or less to pixel_lo.
struct LogAxis {
  double lo = 1e-10, hi = 1.0;
  double pixel_lo = 0.0, pixel_hi = 100.0;
  double at(double value) const;
  // Fits [lo, hi] to whole decades around the positive finite values seen.
  void widen(double value);
  int first_decade() const;
  int last_decade() const;
};

// An SVG document built element by element. Numbers print with one decimal.
class Svg {
 public:
  Svg(double width, double height, std::string_view label);
  // A child element with attributes `attrs` (already "k=\"v\" ..."), closed
  // at once, or with a <title> tooltip (escaped) inside.
  Svg& element(std::string_view name, std::string_view attrs, std::string_view tooltip = {});
  Svg& rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view tooltip = {}, std::string_view extra = {});
  Svg& line(double x1, double y1, double x2, double y2, std::string_view stroke,
            std::string_view extra = {});
  // anchor: start, middle or end; `extra` may hold a transform or a class.
  Svg& text(double x, double y, std::string_view content, std::string_view anchor = "start",
            std::string_view extra = {});
  Svg& raw(std::string_view markup);
  std::string finish() const;

 private:
  std::string body_;
  double width_, height_;
  std::string label_;
};

// "3.5" for a pixel coordinate.
std::string px(double value);

}  // namespace deltaproof::html
