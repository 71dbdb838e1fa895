// oracle/gpu_reference.cpp — see gpu_reference.hpp.
#include "oracle/gpu_reference.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/gdn2_form.hpp"
#include "oracle/reference64.hpp"

namespace deltaproof::oracle {
namespace {

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

// A few values of every tensor of a problem, at a fixed stride, and their
// sizes: a problem loss_along saw before, told from another one that a later
// allocation put at the same address.
std::vector<double> fingerprint(const Problem& p) {
  std::vector<double> out;
  for (const auto& [name, values] : p.values) {
    out.push_back(static_cast<double>(values.size()));
    const std::size_t stride = std::max<std::size_t>(1, values.size() / 1024);
    for (std::size_t i = 0; i < values.size(); i += stride) out.push_back(values[i]);
  }
  return out;
}

// The last problem loss_along saw, its gdn2-form inputs on the device, and
// the buffers its forward's o and ht come back in.
struct Cache {
  const Problem* problem = nullptr;
  std::vector<double> fingerprint;
  std::unique_ptr<Reference64Session> session;
  TensorMap outputs{{"o", {}}, {"ht", {}}};
};

double loss_along(Cache& cache, const Problem& p, const Direction& d, double step) {
  if (cache.problem != &p || cache.fingerprint != fingerprint(p)) {
    cache.session.reset();  // the device memory of the last problem first
    cache.session = std::make_unique<Reference64Session>(input_of(p));
    cache.problem = &p;
    cache.fingerprint = fingerprint(p);
  }
  std::vector<double> moved = p.at(d.tensor);
  for (std::size_t i = 0; i < moved.size(); ++i) moved[i] += step * d.values[i];
  // the gdn2-form tensors this input feeds (gdn2_tensors_fed): a scalar per
  // token (beta, gdn's g) broadcast over a row of each
  std::vector<std::string> names;
  std::vector<std::vector<double>> fed;
  for (std::string_view name : gdn2_tensors_fed(d.tensor)) {
    names.emplace_back(name);
    const std::size_t width = cache.session->size(names.back()) / moved.size();
    fed.push_back(width == 1 ? moved : broadcast_channels(moved, static_cast<int>(width)));
  }
  std::vector<Reference64Session::Replacement> replaced;
  for (std::size_t i = 0; i < names.size(); ++i) replaced.push_back({names[i].c_str(), &fed[i]});
  cache.session->forward(replaced, cache.outputs.at("o"), cache.outputs.at("ht"));
  return loss_of(p, cache.outputs);
}

}  // namespace

TensorMap evaluate_on_gpu(const Problem& problem, bool with_gradients) {
  return outputs_of(problem.spec, run_reference64(input_of(problem), with_gradients),
                    with_gradients);
}

ExternalEvaluator gpu_f64_evaluator() {
  auto cache = std::make_shared<Cache>();
  ExternalEvaluator e;
  e.name = "f64 on the GPU (oracle/reference64), checked against quad on sampled sequences";
  e.evaluate = evaluate_on_gpu;
  e.loss_along = [cache](const Problem& p, const Direction& d, double step) {
    return loss_along(*cache, p, d, step);
  };
  return e;
}

}  // namespace deltaproof::oracle
