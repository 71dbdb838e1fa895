// core/gdn2_form.cpp — sum_channels for the types Eigen vectorizes: each row
// summed by Eigen itself. See gdn2_form.hpp.
#include "core/gdn2_form.hpp"

#include <Eigen/Core>

namespace deltaproof {
namespace {

template <class T>
std::vector<T> eigen_row_sums(const std::vector<T>& full, int width) {
  const auto w = static_cast<std::size_t>(width);
  std::vector<T> out(full.size() / w);
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r] =
        Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(full.data() + r * w, width).sum();
  return out;
}

}  // namespace

std::vector<float> sum_channels(const std::vector<float>& full, int width) {
  return eigen_row_sums(full, width);
}
std::vector<double> sum_channels(const std::vector<double>& full, int width) {
  return eigen_row_sums(full, width);
}

}  // namespace deltaproof
