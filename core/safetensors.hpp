// core/safetensors.hpp — strict reader and atomic writer for the safetensors
// format: 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {str: str}}, then the raw data. The reader refuses anything malformed with a
// FormatError that names the file, the tensor and the problem.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.hpp"

namespace deltaproof {

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  // Kept sorted by name, which is also the order of the data on disk.
  std::map<std::string, Tensor> tensors;

  bool has(const std::string& name) const { return tensors.count(name) != 0; }
  // Throws InputError naming `source` and the missing tensor.
  const Tensor& at(const std::string& name, std::string_view source = "") const;
};

// Parses a whole file image. `source` (usually the path) appears in every error.
SafetensorsFile parse_safetensors(std::span<const std::byte> image, std::string_view source);
SafetensorsFile read_safetensors(const std::filesystem::path& path);

// Deterministic bytes: sorted keys, tensors in name order, header padded with
// spaces to a multiple of 8 bytes.
std::vector<std::byte> serialize_safetensors(const SafetensorsFile& file);
// Writes to a temporary file beside `path`, flushes, then renames over it.
void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& file);

}  // namespace deltaproof
