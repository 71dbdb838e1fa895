// core/safetensors.cpp — the strict safetensors reader and the deterministic
// writer declared in safetensors.hpp.
//
// The reader accepts a file only when (checked in this order):
//   1. it holds at least the 8-byte header length N, with 0 < N <= 100 MB and
//      8 + N <= file size;
//   2. the header is UTF-8 without NUL bytes, begins with '{', and parses as
//      one JSON object with no key repeated in any object;
//   3. "__metadata__", if present, maps strings to strings;
//   4. every other entry is an object holding exactly dtype (a known name),
//      shape (non-negative integers) and data_offsets ([begin, end] with
//      begin <= end <= data size), and numel(shape) * dtype size == end - begin;
//   5. sorted by begin, the tensors tile the data section from 0 to its end
//      with no gap, overlap or trailing byte.
// Each refusal is a FormatError "<source>: [tensor '<name>': ]<problem>".
#include "core/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/files.hpp"

namespace deltaproof {
namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // as in the Python reference reader
constexpr std::string_view kMetadataKey = "__metadata__";
// Parser messages quote the input; keep what we pass on readable.
constexpr std::size_t kMaxQuotedChars = 300;

std::string truncated(std::string_view text) {
  if (text.size() <= kMaxQuotedChars) return std::string(text);
  return fmt::format("{}...", text.substr(0, kMaxQuotedChars));
}

[[noreturn]] void fail(std::string_view source, std::string_view problem) {
  throw FormatError(fmt::format("{}: {}", source, problem));
}

[[noreturn]] void fail_tensor(std::string_view source, std::string_view name,
                              std::string_view problem) {
  throw FormatError(fmt::format("{}: tensor '{}': {}", source, truncated(name), problem));
}

// The offset of the first byte that breaks UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or npos when the text is valid.
std::size_t first_invalid_utf8(std::string_view text) {
  const auto byte_at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = byte_at(i);
    std::size_t length = 0;
    unsigned char second_min = 0x80, second_max = 0xbf;
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0) second_min = 0xa0;  // overlong
      if (lead == 0xed) second_max = 0x9f;  // surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0) second_min = 0x90;  // overlong
      if (lead == 0xf4) second_max = 0x8f;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const unsigned char continuation = byte_at(i + k);
      const unsigned char lo = k == 1 ? second_min : 0x80;
      const unsigned char hi = k == 1 ? second_max : 0xbf;
      if (continuation < lo || continuation > hi) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

// "an array", "a string", ... for messages.
std::string a_type_name(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_number_float()) return "a non-integer number";
  const std::string name = value.type_name();
  return (name.front() == 'a' || name.front() == 'o' ? "an " : "a ") + name;
}

std::uint64_t load_u64_little_endian(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    value |= static_cast<std::uint64_t>(std::to_integer<unsigned>(bytes[i])) << (8 * i);
  }
  return value;
}

// Parses the header, refusing any object that repeats a key (nlohmann would
// silently keep the last value, hiding a second definition of a tensor).
json parse_header_json(std::string_view header_text, std::string_view source) {
  std::vector<std::set<std::string>> open_objects_keys;
  const json::parser_callback_t check_keys = [&](int /*depth*/, json::parse_event_t event,
                                                 json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects_keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects_keys.pop_back();
    } else if (event == json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects_keys.back().insert(key).second) {
        fail(source, fmt::format("the header repeats the key '{}'; every tensor name and "
                                 "metadata key must appear once",
                                 truncated(key)));
      }
    }
    return true;
  };
  try {
    return json::parse(header_text.begin(), header_text.end(), check_keys);
  } catch (const json::exception& error) {
    fail(source, fmt::format("the header is not valid JSON ({})", truncated(error.what())));
  }
}

std::map<std::string, std::string> parse_metadata(const json& value, std::string_view source) {
  if (!value.is_object()) {
    fail(source, fmt::format("'__metadata__' must be an object of string to string, not {}",
                             a_type_name(value)));
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, entry] : value.items()) {
    if (!entry.is_string()) {
      fail(source, fmt::format("'__metadata__' key '{}' holds {}; metadata values must be strings",
                               truncated(key), a_type_name(entry)));
    }
    metadata.emplace(key, entry.get<std::string>());
  }
  return metadata;
}

// One tensor entry of the header, checked on its own (steps 4 above).
struct TensorEntry {
  std::string name;
  DType dtype = DType::F64;
  Shape shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

TensorEntry parse_tensor_entry(const std::string& name, const json& value, std::uint64_t data_size,
                               std::string_view source) {
  if (!value.is_object()) {
    fail_tensor(source, name,
                fmt::format("the entry must be an object with dtype, shape and data_offsets, "
                            "not {}",
                            a_type_name(value)));
  }
  for (const auto& [key, ignored] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail_tensor(source, name,
                  fmt::format("unexpected key '{}'; an entry holds only dtype, shape and "
                              "data_offsets",
                              truncated(key)));
    }
  }
  for (const char* required : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(required)) fail_tensor(source, name, fmt::format("missing '{}'", required));
  }

  TensorEntry entry;
  entry.name = name;

  const json& dtype = value["dtype"];
  if (!dtype.is_string()) {
    fail_tensor(source, name, fmt::format("'dtype' must be a string, not {}", a_type_name(dtype)));
  }
  entry.dtype = parse_dtype(dtype.get_ref<const std::string&>(),
                            fmt::format("{}: tensor '{}'", source, truncated(name)));

  const json& shape = value["shape"];
  if (!shape.is_array()) {
    fail_tensor(source, name,
                fmt::format("'shape' must be a list of integers, not {}", a_type_name(shape)));
  }
  for (const json& extent : shape) {
    if (extent.is_number_unsigned()) {
      const auto extent_value = extent.get<std::uint64_t>();
      if (extent_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail_tensor(source, name, fmt::format("shape extent {} is too large", extent_value));
      }
      entry.shape.push_back(static_cast<std::int64_t>(extent_value));
    } else if (extent.is_number_integer()) {
      fail_tensor(source, name,
                  fmt::format("shape has the negative extent {}", extent.get<std::int64_t>()));
    } else {
      fail_tensor(
          source, name,
          fmt::format("'shape' must be a list of integers, but holds {}", a_type_name(extent)));
    }
  }

  const json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    fail_tensor(source, name, "'data_offsets' must be [begin, end], two non-negative integers");
  }
  entry.begin = offsets[0].get<std::uint64_t>();
  entry.end = offsets[1].get<std::uint64_t>();
  if (entry.begin > entry.end) {
    fail_tensor(source, name,
                fmt::format("data_offsets [{}, {}] end before they begin", entry.begin, entry.end));
  }
  if (entry.end > data_size) {
    fail_tensor(source, name,
                fmt::format("data_offsets [{}, {}] run past the end of the {}-byte data section",
                            entry.begin, entry.end, data_size));
  }

  // numel * dtype size, guarded against overflow; a zero extent makes it 0.
  std::uint64_t byte_count = dtype_size(entry.dtype);
  if (std::find(entry.shape.begin(), entry.shape.end(), 0) != entry.shape.end()) byte_count = 0;
  for (std::int64_t extent : entry.shape) {
    if (byte_count == 0) break;
    if (__builtin_mul_overflow(byte_count, static_cast<std::uint64_t>(extent), &byte_count)) {
      fail_tensor(source, name,
                  fmt::format("shape {} has more bytes than a 64-bit count can hold",
                              shape_string(entry.shape)));
    }
  }
  if (byte_count != entry.end - entry.begin) {
    fail_tensor(source, name,
                fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}",
                            shape_string(entry.shape), dtype_name(entry.dtype), byte_count,
                            entry.begin, entry.end, entry.end - entry.begin));
  }
  return entry;
}

// Step 5: sorted by begin, the byte ranges must tile [0, data_size) exactly.
void check_tiling(std::vector<TensorEntry>& entries, std::uint64_t data_size,
                  std::string_view source) {
  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t covered_to = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& entry : entries) {
    if (entry.begin < covered_to) {
      fail_tensor(
          source, entry.name,
          fmt::format("data_offsets [{}, {}] overlap those of tensor '{}' [{}, {}]", entry.begin,
                      entry.end, previous->name, previous->begin, previous->end));
    }
    if (entry.begin > covered_to) {
      fail_tensor(source, entry.name,
                  fmt::format("data_offsets [{}, {}] leave the bytes [{}, {}) before it unused; "
                              "tensors must tile the data section with no gap",
                              entry.begin, entry.end, covered_to, entry.begin));
    }
    covered_to = entry.end;
    previous = &entry;
  }
  if (covered_to != data_size) {
    fail(source, fmt::format("the data section has {} trailing bytes after the last tensor "
                             "(tensors cover {} of {} bytes)",
                             data_size - covered_to, covered_to, data_size));
  }
}

}  // namespace

const Tensor& SafetensorsFile::at(const std::string& name, std::string_view source) const {
  const auto found = tensors.find(name);
  if (found != tensors.end()) return found->second;
  std::string held;
  for (const auto& [held_name, tensor] : tensors) {
    held += held.empty() ? held_name : ", " + held_name;
  }
  throw InputError(fmt::format("{}: no tensor named '{}'; the file holds: {}",
                               source.empty() ? "safetensors file" : source, name,
                               held.empty() ? "no tensors" : held));
}

SafetensorsFile parse_safetensors(std::span<const std::byte> image, std::string_view source) {
  // Step 1: the header length.
  if (image.size() < 8) {
    fail(source, fmt::format("the file is {} bytes long, shorter than the 8-byte header length "
                             "that begins every safetensors file",
                             image.size()));
  }
  const std::uint64_t header_size = load_u64_little_endian(image.first(8));
  if (header_size == 0) fail(source, "the header length is 0; a safetensors header is never empty");
  if (header_size > kMaxHeaderBytes) {
    fail(source, fmt::format("the header length {} is larger than the 100 MB limit", header_size));
  }
  if (header_size > image.size() - 8) {
    fail(source, fmt::format("the header length {} runs past the end of the {}-byte file",
                             header_size, image.size()));
  }
  const std::string_view header_text(reinterpret_cast<const char*>(image.data() + 8),
                                     static_cast<std::size_t>(header_size));
  const std::span<const std::byte> data = image.subspan(8 + header_size);

  // Step 2: UTF-8 JSON object.
  if (const std::size_t bad = first_invalid_utf8(header_text); bad != std::string_view::npos) {
    fail(source, fmt::format("the header is not valid UTF-8 (byte {} of the header)", bad));
  }
  // nlohmann's lexer takes a NUL byte for the end of input and would ignore
  // whatever follows it; JSON allows no raw NUL anywhere, so refuse it here.
  if (const std::size_t nul = header_text.find('\0'); nul != std::string_view::npos) {
    fail(source, fmt::format("the header holds a NUL byte (byte {} of the header); JSON allows "
                             "none, and safetensors pads headers with spaces",
                             nul));
  }
  if (header_text.front() != '{') {
    fail(source, "the header does not begin with '{'; a safetensors header is a JSON object");
  }
  const json header = parse_header_json(header_text, source);
  if (!header.is_object()) {
    fail(source, fmt::format("the header must be a JSON object, not {}", a_type_name(header)));
  }

  // Steps 3 and 4: each entry on its own.
  SafetensorsFile file;
  std::vector<TensorEntry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      file.metadata = parse_metadata(value, source);
    } else {
      entries.push_back(parse_tensor_entry(key, value, data.size(), source));
    }
  }

  // Step 5: the entries together.
  check_tiling(entries, data.size(), source);

  for (TensorEntry& entry : entries) {
    const auto* first = data.data() + entry.begin;
    std::vector<std::byte> bytes(first, first + (entry.end - entry.begin));
    file.tensors.emplace(entry.name, Tensor(entry.dtype, std::move(entry.shape), std::move(bytes)));
  }
  return file;
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) {
  const std::vector<std::byte> image = read_file_bytes(path);
  return parse_safetensors(image, path.string());
}

std::vector<std::byte> serialize_safetensors(const SafetensorsFile& file) {
  json header = json::object();  // keys kept sorted, so the dump is deterministic
  if (!file.metadata.empty()) header[std::string(kMetadataKey)] = file.metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : file.tensors) {
    if (name == kMetadataKey) {
      throw InputError(
          "a tensor cannot be named '__metadata__': safetensors reserves that key; rename it");
    }
    const std::uint64_t end = offset + tensor.bytes().size();
    header[name] = {{"dtype", std::string(dtype_name(tensor.dtype()))},
                    {"shape", tensor.shape()},
                    {"data_offsets", json::array({offset, end})}};
    offset = end;
  }

  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const json::exception& error) {
    throw InputError(fmt::format(
        "cannot write a safetensors header: a tensor name or metadata string is not valid UTF-8 "
        "({})",
        error.what()));
  }
  // Pad with spaces so the data section starts 8-byte aligned.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  std::vector<std::byte> image;
  image.reserve(8 + header_text.size() + offset);
  const std::uint64_t header_size = header_text.size();
  for (std::size_t i = 0; i < 8; ++i) {
    image.push_back(static_cast<std::byte>((header_size >> (8 * i)) & 0xff));
  }
  for (char c : header_text) image.push_back(static_cast<std::byte>(c));
  for (const auto& [name, tensor] : file.tensors) {
    image.insert(image.end(), tensor.bytes().begin(), tensor.bytes().end());
  }
  return image;
}

void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& file) {
  write_file_atomically(path, serialize_safetensors(file));
}

}  // namespace deltaproof
