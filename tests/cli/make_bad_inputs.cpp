// tests/cli/make_bad_inputs.cpp — reads a fixture and writes the variants that
// tests/cli/run_cli_test.sh feeds to `deltaproof run`, so that test needs no
// Python. Run: make_bad_inputs FIXTURE OUTDIR. Writes into OUTDIR:
//   inputs-only     only q k v g b|beta w h0 do dht: no metadata, no references
//   no-cotangents   inputs-only without do and dht (enough for --phase fwd)
//   missing-w       inputs-only without w (gdn2 fixtures only)
//   missing-beta    inputs-only without beta (kda and gdn fixtures only)
//   wrong-shape-v   v loses its last token: [B, T-1, H, V]
//   nan-in-g        g's element at flat index 5 is a NaN
//   inf-in-q        q's last element is +inf
// each as NAME.safetensors, F64 as in the fixture. Exit 0, or 2 with a sentence.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/safetensors.hpp"

namespace {

using deltaproof::SafetensorsFile;
using deltaproof::Shape;
using deltaproof::Tensor;

const std::vector<std::string> kInputNames = {"q", "k",    "v",  "g",  "b",
                                              "w", "beta", "h0", "do", "dht"};

// `tensor` with element `flat` replaced by `value`.
Tensor with_value(const Tensor& tensor, std::size_t flat, double value) {
  std::vector<double> values = tensor.to_f64();
  values.at(flat) = value;
  return Tensor::from_f64(tensor.dtype(), tensor.shape(), values);
}

// `tensor` (token-major, [B, T, ...]) without its last token.
Tensor without_last_token(const Tensor& tensor) {
  Shape shape = tensor.shape();
  const std::int64_t per_token = tensor.numel() / (shape.at(0) * shape.at(1));
  std::vector<double> values = tensor.to_f64();
  std::vector<double> kept;
  for (std::int64_t b = 0; b < shape[0]; ++b)
    for (std::int64_t t = 0; t + 1 < shape[1]; ++t)
      for (std::int64_t i = 0; i < per_token; ++i)
        kept.push_back(values[static_cast<std::size_t>((b * shape[1] + t) * per_token + i)]);
  shape[1] -= 1;
  return Tensor::from_f64(tensor.dtype(), shape, kept);
}

void write(const std::filesystem::path& folder, const std::string& name,
           const SafetensorsFile& file) {
  deltaproof::write_safetensors(folder / (name + ".safetensors"), file);
  std::printf("wrote %s.safetensors\n", name.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_bad_inputs FIXTURE OUTDIR\n");
    return 2;
  }
  try {
    const std::filesystem::path folder = argv[2];
    const SafetensorsFile fixture = deltaproof::read_safetensors(argv[1]);
    SafetensorsFile inputs;
    for (const auto& name : kInputNames)
      if (fixture.has(name)) inputs.tensors[name] = fixture.tensors.at(name);
    write(folder, "inputs-only", inputs);

    SafetensorsFile no_cotangents = inputs;
    no_cotangents.tensors.erase("do");
    no_cotangents.tensors.erase("dht");
    write(folder, "no-cotangents", no_cotangents);

    for (const std::string name : {"w", "beta"}) {
      if (!inputs.has(name)) continue;
      SafetensorsFile missing = inputs;
      missing.tensors.erase(name);
      write(folder, "missing-" + name, missing);
    }

    SafetensorsFile wrong_shape = inputs;
    wrong_shape.tensors["v"] = without_last_token(inputs.at("v", argv[1]));
    write(folder, "wrong-shape-v", wrong_shape);

    SafetensorsFile nan_in_g = inputs;
    nan_in_g.tensors["g"] =
        with_value(inputs.at("g", argv[1]), 5, std::numeric_limits<double>::quiet_NaN());
    write(folder, "nan-in-g", nan_in_g);

    SafetensorsFile inf_in_q = inputs;
    const Tensor& q = inputs.at("q", argv[1]);
    inf_in_q.tensors["q"] = with_value(q, static_cast<std::size_t>(q.numel() - 1),
                                       std::numeric_limits<double>::infinity());
    write(folder, "inf-in-q", inf_in_q);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_bad_inputs: %s\n", error.what());
    return 2;
  }
  return 0;
}
