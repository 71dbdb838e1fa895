// tests/python/mutants/sample.cpp — a small kernel-shaped program for
// tests/python/mutants_test.py: scalar loops, an Eigen product, a 2-D
// access, an exp, a fault point. It prints its result; a mutant changes it.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <Eigen/Dense>

#define DELTAPROOF_FAULT(id) false

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

float decayed_sum(const MatF& x, int rows) {
  float total = 0.0f;
  for (int r = 0; r < rows; ++r) {
    if (DELTAPROOF_FAULT(skip_row)) continue;
    total += x(r, 1) * std::exp(-x(r, 0));
  }
  return total;
}

int main() {
  MatF a(3, 2);
  a << 0.5f, 1.0f, 0.25f, 2.0f, 1.5f, 3.0f;
  const MatF product = a.transpose() * a;
  float diagonal = product(0, 0) - product(1, 1);
  if (diagonal < 0) diagonal = -diagonal;
  std::printf("%.6f %.6f\n", decayed_sum(a, 3), diagonal);
  return 0;
}
