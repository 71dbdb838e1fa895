// kernels/backend.cpp — tensor names and sizes, output allocation, and the
// backend registry.
#include "kernels/backend.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/gdn2_form.hpp"
#include "kernels/cpu/backends.hpp"
#ifdef DELTAPROOF_HAVE_CUDA_BACKENDS
#include "kernels/cuda/backends.hpp"
#endif

namespace deltaproof::kernels {

std::vector<std::string> kernel_input_names(Op op) {
  std::vector<std::string> names = tensor_names(op, Role::input);
  for (auto& name : tensor_names(op, Role::cotangent)) names.push_back(std::move(name));
  return names;
}

std::vector<std::string> kernel_output_names(Op op, Phase phase) {
  std::vector<std::string> names = tensor_names(op, Role::output);
  if (phase == Phase::fwd) return names;
  for (auto& name : tensor_names(op, Role::gradient)) names.push_back(std::move(name));
  return names;
}

ChannelAxis channel_axis(const KernelShape& s, std::string_view name) {
  if (const auto tensor = find_tensor(s.op, name)) return tensor->axis;
  throw InputError(fmt::format("'{}' is not a tensor of op {}.", name, op_name(s.op)));
}

int tensor_width(const KernelShape& s, std::string_view name) {
  return axis_width(channel_axis(s, name), s.K, s.V);
}

void require_f32_contract(const KernelShape& shape, std::string_view backend) {
  if (shape.contract.rounds_anything())
    throw InputError(fmt::format(
        "{} runs f32 arithmetic only; the {} contract is emulated by cpu-chunk and cuda-chunk.",
        backend, precision_name(shape.contract.precision)));
}

void require_deterministic_contract(const KernelShape& shape, std::string_view backend) {
  if (shape.contract.rounds_anything() && shape.contract.rounding == Rounding::stochastic)
    throw InputError(
        fmt::format("{} rounds to nearest even or toward zero only; the {} contract's "
                    "stochastic rounding is emulated by cpu-chunk alone.",
                    backend, precision_name(shape.contract.precision)));
}

void round_outputs(const KernelShape& shape, Buffers& outputs) {
  Rounder written(shape.contract, static_cast<std::uint64_t>(shape.B) * shape.H);
  if (!written.outputs()) return;
  for (auto& [name, values] : outputs)
    for (float& v : values) v = written.output(v);
}

std::size_t tensor_size(const KernelShape& s, std::string_view name) {
  const int width = tensor_width(s, name);
  if (width < 0) return static_cast<std::size_t>(s.states()) * s.value_heads() * s.K * s.V;
  return static_cast<std::size_t>(s.B) * s.T * tensor_heads(s, name) * (width == 0 ? 1 : width);
}

bool on_key_heads(std::string_view name) {
  return name == "q" || name == "k" || name == "dq" || name == "dk";
}

int tensor_heads(const KernelShape& s, std::string_view name) {
  return on_key_heads(name) ? s.H : s.value_heads();
}

Buffers gdn2_gradient_buffers(const KernelShape& shape, Buffers& outputs) {
  if (shape.op == Op::gdn2) {
    Buffers own;
    for (const char* name : {"dg", "db", "dw"}) own[name] = std::move(outputs.at(name));
    return own;
  }
  // g and b in gdn2 form: [B, T, HV, K]; w: [B, T, HV, V]
  const std::size_t tk =
      static_cast<std::size_t>(shape.B) * shape.T * shape.value_heads() * shape.K;
  const std::size_t tv = tensor_size(shape, "v");
  return {{"dg", std::vector<float>(tk, std::nanf(""))},
          {"db", std::vector<float>(tk, std::nanf(""))},
          {"dw", std::vector<float>(tv, std::nanf(""))}};
}

void fold_gdn2_gradients(const KernelShape& shape, Buffers&& gradients, Buffers& outputs) {
  fold_gradients(shape.op, shape.K, shape.V, gradients);
  for (auto& [name, values] : gradients) outputs.at(name) = std::move(values);
}

Buffers allocate_outputs(const KernelShape& shape, Phase phase, float fill) {
  Buffers out;
  for (const auto& name : kernel_output_names(shape.op, phase))
    out[name].assign(tensor_size(shape, name), fill);
  return out;
}

namespace {
const std::vector<const Backend*>& registry() {
  static const std::vector<const Backend*> backends = {
      &cpu::chunk_backend(),  &cpu::recurrent_backend(),
#ifdef DELTAPROOF_HAVE_CUDA_BACKENDS
      &cuda::chunk_backend(), &cuda::recurrent_backend(), &cuda::tc_backend(),
#endif
  };
  return backends;
}
}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend* b : registry()) names.push_back(b->name());
  return names;
}

const Backend& find_backend(std::string_view name) {
  std::string known;
  for (const Backend* b : registry()) {
    if (b->name() == name) return *b;
    known += (known.empty() ? "" : ", ") + b->name();
  }
  throw InputError(fmt::format("unknown backend '{}'; the backends are: {}.", name, known));
}

#ifndef DELTAPROOF_HAVE_CUDA_BACKENDS
bool gpu_available() { return false; }
std::string device_name() { return "cpu"; }
#endif

}  // namespace deltaproof::kernels
