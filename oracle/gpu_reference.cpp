// oracle/gpu_reference.cpp — see gpu_reference.hpp.
#include "oracle/gpu_reference.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/gdn2_form.hpp"
#include "kernels/cuda/reference64.hpp"

namespace deltaproof::oracle {
namespace {

using kernels::cuda::Reference64Input;
using kernels::cuda::Reference64Output;

Reference64Input input_of(const Problem& p) {
  const FixtureSpec& s = p.spec;
  auto gates = gdn2_gates(s.op, s.K, s.V, p.values);
  Reference64Input in;
  in.B = s.B, in.T = s.T, in.H = s.H, in.K = s.K, in.V = s.V, in.scale = s.scale();
  in.q = p.at("q"), in.k = p.at("k"), in.v = p.at("v"), in.h0 = p.at("h0");
  in.g = std::move(gates.g), in.b = std::move(gates.b), in.w = std::move(gates.w);
  in.d_o = p.at("do"), in.dht = p.at("dht");
  return in;
}

TensorMap outputs_of(const FixtureSpec& s, Reference64Output out, bool with_gradients) {
  TensorMap t{{"o", std::move(out.o)}, {"ht", std::move(out.ht)}};
  if (!with_gradients) return t;
  t["dq"] = std::move(out.dq), t["dk"] = std::move(out.dk), t["dv"] = std::move(out.dv);
  t["dh0"] = std::move(out.dh0);
  std::map<std::string, std::vector<double>> folded{
      {"dg", std::move(out.dg)}, {"db", std::move(out.db)}, {"dw", std::move(out.dw)}};
  fold_gradients(s.op, s.K, s.V, folded);
  for (auto& [name, values] : folded) t[name] = std::move(values);
  return t;
}

// The field of a gdn2-form input tensor.
std::vector<double>& gdn2_field(Reference64Input& in, std::string_view name) {
  for (auto [field, values] : {std::pair{"q", &in.q},
                               {"k", &in.k},
                               {"v", &in.v},
                               {"g", &in.g},
                               {"b", &in.b},
                               {"w", &in.w},
                               {"h0", &in.h0}})
    if (name == field) return *values;
  throw std::invalid_argument("loss_along: no gdn2-form input named " + std::string(name));
}

// The gdn2-form inputs of the last problem loss_along saw.
struct Cache {
  const Problem* problem = nullptr;
  Reference64Input input;
};

double loss_along(Cache& cache, const Problem& p, const Direction& d, double step) {
  if (cache.problem != &p) {
    cache.input = input_of(p);
    cache.problem = &p;
  }
  const FixtureSpec& s = p.spec;
  Reference64Input& in = cache.input;
  std::vector<double> moved = p.at(d.tensor);
  for (std::size_t i = 0; i < moved.size(); ++i) moved[i] += step * d.values[i];
  // the gdn2-form tensors this input feeds (gdn2_tensors_fed), swapped in and
  // back out: a scalar per token (beta, gdn's g) broadcast over a row of each
  std::vector<std::pair<std::vector<double>*, std::vector<double>>> swapped;
  for (std::string_view name : gdn2_tensors_fed(d.tensor)) {
    std::vector<double>& field = gdn2_field(in, name);
    const std::size_t width = field.size() / moved.size();
    swapped.push_back(
        {&field, width == 1 ? moved : broadcast_channels(moved, static_cast<int>(width))});
  }
  for (auto& [field, values] : swapped) std::swap(*field, values);
  Reference64Output out;
  try {
    out = kernels::cuda::run_reference64(in, false);
  } catch (...) {
    for (auto& [field, values] : swapped) std::swap(*field, values);
    throw;
  }
  for (auto& [field, values] : swapped) std::swap(*field, values);
  return loss_of(p, outputs_of(s, std::move(out), false));
}

}  // namespace

TensorMap evaluate_on_gpu(const Problem& problem, bool with_gradients) {
  return outputs_of(problem.spec, kernels::cuda::run_reference64(input_of(problem), with_gradients),
                    with_gradients);
}

ExternalEvaluator gpu_f64_evaluator() {
  auto cache = std::make_shared<Cache>();
  ExternalEvaluator e;
  e.name = "f64 on the GPU (kernels/cuda/reference64), checked against quad on sampled sequences";
  e.evaluate = evaluate_on_gpu;
  e.loss_along = [cache](const Problem& p, const Direction& d, double step) {
    return loss_along(*cache, p, d, step);
  };
  return e;
}

}  // namespace deltaproof::oracle
