// tests/fuzz/safetensors_fuzz.cpp — libFuzzer target for the safetensors
// reader. Any input must either parse or be refused with an InputError; any
// other exception, crash, sanitizer report or leak is a bug. What parses must
// also survive serialize -> parse unchanged, with stable bytes.
//
// Build and run (from the repository root):
//   cmake --preset fuzz && cmake --build build-fuzz
//   cp -r tests/fuzz/corpus /tmp/st_corpus
//   ./build-fuzz/bin/safetensors_fuzz -max_total_time=60 \
//       -dict=tests/fuzz/safetensors.dict /tmp/st_corpus
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>

#include "core/error.hpp"
#include "core/safetensors.hpp"

namespace {

[[noreturn]] void report_bug(const char* what) {
  std::fprintf(stderr, "safetensors_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> image(reinterpret_cast<const std::byte*>(data), size);
  std::optional<deltaproof::SafetensorsFile> parsed;
  try {
    parsed = deltaproof::parse_safetensors(image, "fuzz-input");
  } catch (const deltaproof::InputError&) {
    return 0;  // a clean refusal
  }

  // Accepted: read every value, then the round trip must be exact. Nothing in
  // here may throw.
  for (const auto& [name, tensor] : parsed->tensors) {
    if (tensor.to_f64().size() != static_cast<std::size_t>(tensor.numel())) {
      report_bug("to_f64() size differs from numel()");
    }
  }
  const auto bytes = deltaproof::serialize_safetensors(*parsed);
  const auto reparsed = deltaproof::parse_safetensors(bytes, "fuzz-reserialized");
  if (reparsed.metadata != parsed->metadata) report_bug("metadata changed in a round trip");
  if (reparsed.tensors != parsed->tensors) report_bug("tensors changed in a round trip");
  if (deltaproof::serialize_safetensors(reparsed) != bytes) report_bug("serialization not stable");
  return 0;
}
