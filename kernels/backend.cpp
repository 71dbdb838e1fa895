// kernels/backend.cpp — tensor names and sizes, output allocation, and the
// backend registry.
#include "kernels/backend.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/cpu/backends.hpp"
#ifdef DELTAPROOF_HAVE_CUDA_BACKENDS
#include "kernels/cuda/backends.hpp"
#endif

namespace deltaproof::kernels {

std::vector<std::string> kernel_input_names(Op op) {
  if (op == Op::gdn2) return {"q", "k", "v", "g", "b", "w", "h0", "do", "dht"};
  return {"q", "k", "v", "g", "beta", "h0", "do", "dht"};
}

std::vector<std::string> kernel_output_names(Op op, Phase phase) {
  std::vector<std::string> names = {"o", "ht"};
  if (phase == Phase::fwd) return names;
  for (const auto& input : kernel_input_names(op))
    if (input != "do" && input != "dht") names.push_back("d" + input);
  return names;
}

ChannelAxis channel_axis(const KernelShape& s, std::string_view name) {
  const std::string_view base =
      name.size() > 1 && name[0] == 'd' && name != "do" ? name.substr(1) : name;
  if (base == "h0" || base == "ht" || name == "dht") return ChannelAxis::state;
  if (base == "q" || base == "k" || base == "b") return ChannelAxis::k;
  if (base == "g") return s.op == Op::gdn ? ChannelAxis::none : ChannelAxis::k;
  if (base == "v" || base == "w" || base == "o" || name == "do") return ChannelAxis::v;
  if (base == "beta") return ChannelAxis::none;
  throw InputError(fmt::format("'{}' is not a tensor of op {}.", name, op_name(s.op)));
}

int tensor_width(const KernelShape& s, std::string_view name) {
  switch (channel_axis(s, name)) {
    case ChannelAxis::state:
      return -1;
    case ChannelAxis::k:
      return s.K;
    case ChannelAxis::v:
      return s.V;
    case ChannelAxis::none:
      break;
  }
  return 0;
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
  if (width < 0) return static_cast<std::size_t>(s.B) * s.H * s.K * s.V;
  return static_cast<std::size_t>(s.B) * s.T * s.H * (width == 0 ? 1 : width);
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
      &cpu::chunk_backend(),
      &cpu::recurrent_backend(),
#ifdef DELTAPROOF_HAVE_CUDA_BACKENDS
      &cuda::chunk_backend(),
      &cuda::recurrent_backend(),
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
