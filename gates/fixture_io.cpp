// gates/fixture_io.cpp — see fixture_io.hpp.
#include "gates/fixture_io.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/op.hpp"
#include "oracle/fixture.hpp"
#include "oracle/op.hpp"

namespace deltaproof::gates {
using kernels::KernelShape;
using kernels::Phase;

Shape tensor_shape(const KernelShape& s, const std::string& name) {
  const int width = kernels::tensor_width(s, name);
  const int heads = kernels::tensor_heads(s, name);
  if (width < 0) return {s.states(), heads, s.K, s.V};
  if (width == 0) return {s.B, s.T, heads};
  return {s.B, s.T, heads, width};
}

namespace {

const Tensor& require(const SafetensorsFile& file, const std::string& source,
                      const std::string& name, Op op) {
  if (file.has(name)) return file.tensors.at(name);
  std::string needed;
  for (const auto& n : kernels::kernel_input_names(op)) needed += (needed.empty() ? "" : " ") + n;
  throw InputError(fmt::format("{}: tensor '{}' is missing; a {} kernel needs {}.", source, name,
                               op_name(op), needed));
}

Op infer_op(const SafetensorsFile& file, const std::string& source) {
  if (auto it = file.metadata.find("op"); it != file.metadata.end()) {
    if (auto op = parse_op(it->second)) return *op;
    throw InputError(
        fmt::format("{}: metadata 'op' is '{}', not gdn2, kda or gdn.", source, it->second));
  }
  if (file.has("b") || file.has("w")) return Op::gdn2;
  if (file.has("beta") && !file.has("g"))
    throw InputError(
        fmt::format("{}: tensor 'g' is missing; with beta this is kda (g [B, T, H, K]) or gdn "
                    "(g [B, T, H]), which need q k v g beta h0 do dht.",
                    source));
  if (file.has("beta")) return file.tensors.at("g").shape().size() == 3 ? Op::gdn : Op::kda;
  throw InputError(
      fmt::format("{}: cannot tell the op: no metadata 'op', and neither b/w (gdn2) "
                  "nor beta (kda, gdn) is present.",
                  source));
}

// A metadata value parsed whole as a T (int or double); an InputError naming
// `source` and `key` otherwise, never a silent default.
template <typename T>
T metadata_number(const std::string& text, const std::string& source, const std::string& key) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(double(value)))
    throw InputError(
        fmt::format("{}: metadata '{}' is '{}', not a finite number.", source, key, text));
  return value;
}

std::string index_string(const Shape& shape, std::size_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = static_cast<std::int64_t>(flat % shape[d]);
    flat /= shape[d];
  }
  return shape_string(index);
}

}  // namespace

KernelJob job_from_file(const SafetensorsFile& file, const std::string& source, Phase phase,
                        int chunk) {
  KernelJob job;
  KernelShape& s = job.shape;
  s.op = infer_op(file, source);
  const Tensor& q = require(file, source, "q", s.op);
  const Tensor& v = require(file, source, "v", s.op);
  if (q.shape().size() != 4)
    throw InputError(fmt::format("{}: tensor 'q' has shape {}; it must be [B, T, H, K].", source,
                                 shape_string(q.shape())));
  if (v.shape().size() != 4)
    throw InputError(fmt::format("{}: tensor 'v' has shape {}; it must be [B, T, H, V].", source,
                                 shape_string(v.shape())));
  s.B = static_cast<int>(q.shape()[0]);
  s.T = static_cast<int>(q.shape()[1]);
  s.H = static_cast<int>(q.shape()[2]);
  s.K = static_cast<int>(q.shape()[3]);
  s.V = static_cast<int>(v.shape()[3]);
  if (s.B < 1 || s.T < 1 || s.H < 1 || s.K < 1 || s.V < 1)
    throw InputError(
        fmt::format("{}: tensor 'q' has an empty dimension: {}.", source, shape_string(q.shape())));
  // grouped value heads: v's heads (docs/VARLEN.md)
  if (const int HV = static_cast<int>(v.shape()[2]); HV != s.H) {
    if (HV < s.H || HV % s.H != 0)
      throw InputError(fmt::format(
          "{}: tensor 'v' has {} heads and 'q' {}: the value heads must be a multiple of the "
          "key heads.",
          source, HV, s.H));
    s.HV = HV;
  }
  s.cu_seqlens = oracle::read_cu_seqlens(file, source, s.B, s.T);
  s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.K)));
  if (auto it = file.metadata.find("scale"); it != file.metadata.end())
    s.scale = static_cast<float>(metadata_number<double>(it->second, source, "scale"));
  s.chunk = 64;
  if (chunk > 0)
    s.chunk = chunk;
  else if (auto it = file.metadata.find("chunk"); it != file.metadata.end())
    s.chunk = metadata_number<int>(it->second, source, "chunk");
  if (!is_supported_chunk(s.chunk))
    throw InputError(fmt::format("{}: chunk size {} is not supported; pass --chunk {}.", source,
                                 s.chunk, chunk_sizes_text()));

  for (const auto& name : kernels::kernel_input_names(s.op)) {
    if (phase == Phase::fwd && find_tensor(s.op, name)->role == Role::cotangent) continue;
    const Tensor& t = require(file, source, name, s.op);
    const Shape want = tensor_shape(s, name);
    if (t.shape() != want)
      throw InputError(fmt::format(
          "{}: tensor '{}' has shape {}, but {} say B={} T={} H={}{} K={} V={}{}, so it "
          "must be {}.",
          source, name, shape_string(t.shape()), s.packed() ? "q, v and cu_seqlens" : "q and v",
          s.B, s.T, s.H, s.grouped() ? fmt::format(" HV={}", s.HV) : "", s.K, s.V,
          s.packed() ? fmt::format(" N={}", s.states()) : "", shape_string(want)));
    if (!is_floating(t.dtype()))
      throw InputError(fmt::format("{}: tensor '{}' is {}; an input must be F64, F32, F16 or BF16.",
                                   source, name, dtype_name(t.dtype())));
    const std::vector<double> values = t.to_f64();
    auto& buffer = job.inputs[name];
    buffer.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i]))
        throw InputError(fmt::format("{}: tensor '{}' has {} at index {}; inputs must be finite.",
                                     source, name, std::isnan(values[i]) ? "a NaN" : "an inf",
                                     index_string(want, i)));
      buffer[i] = static_cast<float>(values[i]);
    }
  }
  // A bf16 fixture: every input must hold bf16 values, so that a kernel reading
  // bf16 sees exactly the numbers the oracle saw.
  if (auto it = file.metadata.find("dtype"); it != file.metadata.end() && it->second == "bf16") {
    for (const auto& name : kernels::kernel_input_names(s.op)) {
      // h0 and the cotangents are not held to the input dtype
      const TensorInfo t = *find_tensor(s.op, name);
      if (t.axis == Axis::state || t.role == Role::cotangent || !job.inputs.count(name)) continue;
      const auto& values = job.inputs.at(name);
      for (std::size_t i = 0; i < values.size(); ++i)
        if (round_to_bf16(values[i]) != values[i])
          throw InputError(
              fmt::format("{}: the metadata says dtype bf16, but tensor '{}' holds {} at index {}, "
                          "which bf16 cannot represent.",
                          source, name, values[i], index_string(tensor_shape(s, name), i)));
    }
    s.bf16_inputs = true;
  }
  return job;
}

SafetensorsFile candidate_file(const KernelShape& s, Phase phase, const kernels::Buffers& outputs,
                               const kernels::ExecutionRecord& record, const std::string& backend,
                               const std::string& fixture_source) {
  SafetensorsFile file;
  for (const auto& name : kernels::kernel_output_names(s.op, phase)) {
    const auto& values = outputs.at(name);
    file.tensors[name] = Tensor::from_f64(DType::F32, tensor_shape(s, name),
                                          std::vector<double>(values.begin(), values.end()));
  }
  nlohmann::json stages = record.stages;
  file.metadata = {{"format", "deltaproof-candidate/1"},
                   {"backend", backend},
                   {"phase", std::string(kernels::phase_name(phase))},
                   {"op", std::string(op_name(s.op))},
                   {"chunk", std::to_string(s.chunk)},
                   {"precision", "f32"},
                   {"fixture", fixture_source},
                   {"execution_record", stages.dump()}};
  return file;
}

kernels::Buffers kernel_inputs(const oracle::Problem& problem) {
  kernels::Buffers out;
  for (const auto& [name, values] : problem.values)
    out[name] = std::vector<float>(values.begin(), values.end());
  return out;
}

kernels::KernelShape kernel_shape(const oracle::FixtureSpec& spec) {
  kernels::KernelShape shape;
  shape.op = spec.op;
  shape.B = spec.B;
  shape.T = spec.T;
  shape.H = spec.H;
  shape.HV = spec.HV;
  shape.cu_seqlens = spec.cu_seqlens;
  shape.K = spec.K;
  shape.V = spec.V;
  shape.chunk = spec.chunk;
  shape.scale = static_cast<float>(spec.scale());
  return shape;
}

}  // namespace deltaproof::gates
