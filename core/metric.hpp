// core/metric.hpp — the one error metric (DESIGN.md section 5): a term's
// relative error is rel = max|a - b| / max|b|, taken over the whole term,
// never entry by entry (background/001: a per-entry ratio explodes wherever
// the reference crosses zero). The gates, the oracle's self-checks and the
// tests all measure with this; what they add around it (the worst index, the
// error per chunk, a resolution floor) is theirs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace deltaproof {

// The running figures of one comparison of a candidate `a` to a reference `b`.
struct RelError {
  double abs_max = 0.0;   // max |a - b| over the finite entries of a
  double ref_amax = 0.0;  // max |b|
  long non_finite = 0;    // entries of a that are NaN or inf
  // The position of the first entry of a that is NaN or inf, where there is
  // one (that is where a reader looks: a finite difference is beside the
  // point then); else of the first largest |a - b|.
  std::size_t worst = 0;
  std::size_t count = 0;  // pairs added

  // Adds the next pair; returns |a - b|, or NaN where a is not finite.
  double add(double a, double b) {
    ref_amax = std::max(ref_amax, std::abs(b));
    const std::size_t at = count++;
    if (!std::isfinite(a)) {
      if (non_finite++ == 0) worst = at;
      return std::numeric_limits<double>::quiet_NaN();
    }
    const double diff = std::abs(a - b);
    if (diff > abs_max) {
      abs_max = diff;
      if (non_finite == 0) worst = at;
    }
    return diff;
  }

  // 0 where nothing differs; inf where a holds NaN or inf, or where a
  // differs from a reference that is zero throughout.
  double rel() const {
    if (non_finite > 0) return std::numeric_limits<double>::infinity();
    if (abs_max == 0.0) return 0.0;
    if (ref_amax == 0.0) return std::numeric_limits<double>::infinity();
    return abs_max / ref_amax;
  }
};

// Over two equally long sequences (anything with size() and operator[]).
template <class A, class B>
RelError rel_error(const A& a, const B& b) {
  RelError e;
  for (std::size_t i = 0; i < static_cast<std::size_t>(b.size()); ++i)
    e.add(static_cast<double>(a[i]), static_cast<double>(b[i]));
  return e;
}

template <class A, class B>
double rel_max_error(const A& a, const B& b) {
  return rel_error(a, b).rel();
}

}  // namespace deltaproof
