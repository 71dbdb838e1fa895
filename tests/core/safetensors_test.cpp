// tests/core/safetensors_test.cpp — the strict safetensors reader and the
// deterministic writer: round trips, a file written by Python's safetensors,
// golden serializer bytes, and one test per refusal the reader makes, each
// checking that the message names the file, the tensor and the problem.
#include "core/safetensors.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/files.hpp"
#include "temp_folder.hpp"

namespace deltaproof {
namespace {

constexpr std::string_view kSource = "fixtures/bad_case.safetensors";

// An 8-byte little-endian length (the header's size unless overridden), the
// header text, then `data_size` bytes of data.
std::vector<std::byte> make_image(std::string_view header, std::size_t data_size = 0,
                                  std::optional<std::uint64_t> header_length = std::nullopt) {
  const std::uint64_t length = header_length.value_or(header.size());
  std::vector<std::byte> image;
  for (int i = 0; i < 8; ++i) image.push_back(static_cast<std::byte>((length >> (8 * i)) & 0xff));
  for (char c : header) image.push_back(static_cast<std::byte>(c));
  for (std::size_t i = 0; i < data_size; ++i) image.push_back(static_cast<std::byte>(i));
  return image;
}

std::string as_text(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Expects parse_safetensors to refuse `image` with a FormatError whose message
// names kSource and contains every one of `fragments`.
void expect_refused(const std::vector<std::byte>& image,
                    std::initializer_list<std::string_view> fragments) {
  try {
    parse_safetensors(image, kSource);
    ADD_FAILURE() << "the image was accepted; expected a FormatError";
  } catch (const FormatError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(kSource), std::string::npos) << "no file name in: " << message;
    for (std::string_view fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "expected '" << fragment << "' in: " << message;
    }
  }
}

// A header with one F64 tensor "w" whose entry is `entry_json`.
std::vector<std::byte> image_with_entry(std::string_view entry_json, std::size_t data_size = 16) {
  return make_image(std::string("{\"w\":") + std::string(entry_json) + "}", data_size);
}

SafetensorsFile sample_file() {
  SafetensorsFile file;
  file.metadata = {{"op", "gdn2"}, {"B", "1"}, {"note", "caf\xc3\xa9"}};
  file.tensors.emplace("q",
                       Tensor::from_f64(DType::F64, {2, 3}, {{0.1, -0.2, 0.3, 1e-300, -0.0, 7}}));
  file.tensors.emplace("k", Tensor::from_f64(DType::F32, {3}, {{0.1, 1e39, -3.5}}));
  file.tensors.emplace("v", Tensor::from_f64(DType::BF16, {1, 3}, {{0.1, -1.0, 3e38}}));
  file.tensors.emplace("g", Tensor::from_f64(DType::F16, {3, 1}, {{0.1, 65520.0, 6e-8}}));
  file.tensors.emplace("empty", Tensor::zeros(DType::F32, {0, 4}));
  return file;
}

// --- Valid files ------------------------------------------------------------

TEST(Safetensors, RoundTripIsExactAndBytesAreStable) {
  const SafetensorsFile file = sample_file();
  const std::vector<std::byte> image = serialize_safetensors(file);
  const SafetensorsFile parsed = parse_safetensors(image, "sample");
  EXPECT_EQ(parsed.metadata, file.metadata);
  EXPECT_EQ(parsed.tensors, file.tensors);
  EXPECT_EQ(serialize_safetensors(parsed), image);
}

TEST(Safetensors, HeaderIsPaddedToEightBytes) {
  const std::vector<std::byte> image = serialize_safetensors(sample_file());
  std::uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= std::to_integer<std::uint64_t>(image[i]) << (8 * i);
  EXPECT_EQ(header_size % 8, 0u);
  const std::string header = as_text(std::span(image).subspan(8, header_size));
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header.find_last_not_of(' '), header.find_last_of('}'));
}

TEST(Safetensors, GoldenSerializedBytes) {
  SafetensorsFile file;
  file.metadata = {{"op", "gdn2"}};
  file.tensors.emplace("x", Tensor::from_f64(DType::F64, {1}, {{1.0}}));
  file.tensors.emplace("a", Tensor::from_f64(DType::BF16, {2}, {{1.0, -2.0}}));
  const std::string header =
      R"({"__metadata__":{"op":"gdn2"},"a":{"data_offsets":[0,4],"dtype":"BF16","shape":[2]},)"
      R"("x":{"data_offsets":[4,12],"dtype":"F64","shape":[1]}})";
  ASSERT_EQ(header.size(), 138u);
  const std::string padded = header + std::string(6, ' ');
  std::vector<std::byte> expected = make_image(padded);
  for (std::uint8_t b : {0x80, 0x3f, 0x00, 0xc0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) {
    expected.push_back(static_cast<std::byte>(b));
  }
  EXPECT_EQ(serialize_safetensors(file), expected) << as_text(serialize_safetensors(file));
}

TEST(Safetensors, NoMetadataKeyWhenMetadataIsEmpty) {
  SafetensorsFile file;
  file.tensors.emplace("x", Tensor::from_f64(DType::F32, {1}, {{1.0}}));
  const std::string text = as_text(serialize_safetensors(file));
  EXPECT_EQ(text.find("__metadata__"), std::string::npos) << text;
}

TEST(Safetensors, EmptyFileRoundTrips) {
  const std::vector<std::byte> image = serialize_safetensors(SafetensorsFile{});
  EXPECT_EQ(image, make_image("{}      "));
  const SafetensorsFile parsed = parse_safetensors(image, "empty");
  EXPECT_TRUE(parsed.tensors.empty());
  EXPECT_TRUE(parsed.metadata.empty());
}

TEST(Safetensors, SerializerRefusesTensorNamedMetadata) {
  SafetensorsFile file;
  file.tensors.emplace("__metadata__", Tensor::zeros(DType::F64, {1}));
  EXPECT_THROW(serialize_safetensors(file), InputError);
}

TEST(Safetensors, ReadsFileWrittenByPythonSafetensors) {
  // safetensors.numpy.save({"b": float32 [[1.5], [-2.0]], "a": float64 [0.25, -0.0]},
  //                        metadata={"op": "test"}) with safetensors 0.8.0.
  const std::string header =
      R"({"__metadata__":{"op":"test"},"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"F32","shape":[2,1],"data_offsets":[16,24]}}   )";
  std::vector<std::byte> image = make_image(header);
  for (std::uint8_t b :
       {0, 0, 0, 0, 0, 0, 0xd0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0}) {
    image.push_back(static_cast<std::byte>(b));
  }
  const SafetensorsFile file = parse_safetensors(image, "python.safetensors");
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"op", "test"}}));
  ASSERT_TRUE(file.has("a"));
  ASSERT_TRUE(file.has("b"));
  EXPECT_EQ(file.at("a").dtype(), DType::F64);
  EXPECT_EQ(file.at("a").to_f64(), (std::vector<double>{0.25, -0.0}));
  EXPECT_TRUE(std::signbit(file.at("a").at(1)));
  EXPECT_EQ(file.at("b").dtype(), DType::F32);
  EXPECT_EQ(file.at("b").shape(), (Shape{2, 1}));
  EXPECT_EQ(file.at("b").to_f64(), (std::vector<double>{1.5, -2.0}));
}

TEST(Safetensors, AcceptsZeroSizedTensorsWithHugeExtents) {
  const std::vector<std::byte> image =
      make_image(R"({"e":{"dtype":"F64","shape":[0,9223372036854775807],"data_offsets":[8,8]},)"
                 R"("w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                 8);
  const SafetensorsFile file = parse_safetensors(image, kSource);
  EXPECT_EQ(file.at("e").numel(), 0);
  EXPECT_EQ(file.at("w").numel(), 1);
}

TEST(Safetensors, MissingTensorNamesFileAndTensor) {
  const SafetensorsFile file = sample_file();
  try {
    file.at("dq", "fixtures/x.safetensors");
    FAIL() << "at() found a tensor that is not there";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("fixtures/x.safetensors"), std::string::npos) << message;
    EXPECT_NE(message.find("'dq'"), std::string::npos) << message;
    EXPECT_NE(message.find("empty, g, k, q, v"), std::string::npos) << message;
  }
}

TEST(Safetensors, WriteThenReadThroughTheFileSystem) {
  testing::TempFolder folder;
  const auto path = folder.path() / "sample.safetensors";
  write_safetensors(path, sample_file());
  EXPECT_EQ(folder.entries(), (std::vector<std::string>{"sample.safetensors"}));
  const SafetensorsFile read = read_safetensors(path);
  EXPECT_EQ(read.tensors, sample_file().tensors);
  EXPECT_EQ(read_file_bytes(path), serialize_safetensors(sample_file()));
}

TEST(Safetensors, ReadingAMissingFileNamesIt) {
  testing::TempFolder folder;
  const auto path = folder.path() / "absent.safetensors";
  try {
    read_safetensors(path);
    FAIL() << "read a file that does not exist";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
}

TEST(Safetensors, ErrorsFromTheFileNameTheFile) {
  testing::TempFolder folder;
  const auto path = folder.path() / "short.safetensors";
  write_file_atomically(path, std::vector<std::byte>(3));
  try {
    read_safetensors(path);
    FAIL() << "read a 3-byte file";
  } catch (const FormatError& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
}

// Every truncation and every single-byte corruption of a valid image either
// parses or is refused with an InputError; nothing else escapes.
TEST(Safetensors, CorruptionsAreRefusedCleanly) {
  const std::vector<std::byte> image = serialize_safetensors(sample_file());
  for (std::size_t length = 0; length < image.size(); ++length) {
    EXPECT_THROW(parse_safetensors(std::span(image).first(length), kSource), FormatError)
        << "truncated to " << length;
  }
  for (std::size_t i = 0; i < image.size(); ++i) {
    for (std::uint8_t flip : {0x01, 0x80, 0xff}) {
      std::vector<std::byte> corrupted = image;
      corrupted[i] ^= static_cast<std::byte>(flip);
      try {
        parse_safetensors(corrupted, kSource);
      } catch (const InputError&) {
      }
    }
  }
}

// --- Refusals: the header length --------------------------------------------

TEST(SafetensorsRefuses, FileShorterThanEightBytes) {
  expect_refused(std::vector<std::byte>(5), {"5 bytes long", "shorter than the 8-byte"});
  expect_refused({}, {"0 bytes long"});
}

TEST(SafetensorsRefuses, HeaderLengthZero) {
  expect_refused(make_image("", 16), {"header length is 0"});
}

TEST(SafetensorsRefuses, HeaderLengthPastTheEndOfTheFile) {
  expect_refused(make_image("{}      ", 0, 9), {"header length 9", "past the end", "16-byte file"});
}

TEST(SafetensorsRefuses, HeaderLengthOver100MB) {
  expect_refused(make_image("{}      ", 0, 100'000'001), {"100000001", "100 MB"});
  expect_refused(make_image("{}      ", 0, ~std::uint64_t{0}), {"100 MB"});
}

// --- Refusals: the header text ----------------------------------------------

TEST(SafetensorsRefuses, HeaderNotUtf8) {
  expect_refused(make_image("{\"w\xff\":1}"), {"not valid UTF-8", "byte 3"});
  expect_refused(make_image("{\"\xc0\xaf\":1}"), {"not valid UTF-8"});          // overlong '/'
  expect_refused(make_image("{\"\xed\xa0\x80\":1}"), {"not valid UTF-8"});      // surrogate
  expect_refused(make_image("{\"\xf4\x90\x80\x80\":1}"), {"not valid UTF-8"});  // > U+10FFFF
  expect_refused(make_image("{\"\xe2\x82\":1}"), {"not valid UTF-8"});          // truncated
}

TEST(SafetensorsRefuses, HeaderNotJson) {
  expect_refused(make_image(R"({"w": })"), {"not valid JSON"});
  expect_refused(make_image(R"({"w":{"dtype":"F64"})"), {"not valid JSON"});  // unclosed
  expect_refused(make_image(R"({} x)"), {"not valid JSON"});                  // trailing text
}

TEST(SafetensorsRefuses, HeaderWithNulBytes) {
  // nlohmann::json alone would stop at the NUL and accept "{}".
  expect_refused(make_image(std::string("{}\0\0\0\0\0\0", 8)), {"NUL byte", "byte 2"});
  expect_refused(make_image(std::string("{}\0{\"x\":1}", 10)), {"NUL byte"});
}

TEST(SafetensorsRefuses, HeaderNotAnObject) {
  expect_refused(make_image("[1, 2]  "), {"JSON object"});
  expect_refused(make_image("\"text\"  "), {"JSON object"});
  expect_refused(make_image(" {}"), {"does not begin with '{'"});
}

TEST(SafetensorsRefuses, RepeatedKeys) {
  const std::string entry = R"({"dtype":"F64","shape":[1],"data_offsets":[0,8]})";
  expect_refused(make_image("{\"w\":" + entry + ",\"w\":" + entry + "}", 8),
                 {"repeats the key 'w'"});
  expect_refused(
      make_image(R"({"w":{"dtype":"F64","dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8),
      {"repeats the key 'dtype'"});
  expect_refused(make_image(R"({"__metadata__":{"op":"a","op":"b"}})"), {"repeats the key 'op'"});
}

// --- Refusals: metadata -----------------------------------------------------

TEST(SafetensorsRefuses, MetadataNotAnObject) {
  expect_refused(make_image(R"({"__metadata__":"gdn2"})"), {"'__metadata__' must be an object"});
  expect_refused(make_image(R"({"__metadata__":["op"]})"), {"'__metadata__' must be an object"});
}

TEST(SafetensorsRefuses, MetadataValueNotAString) {
  expect_refused(make_image(R"({"__metadata__":{"op":"gdn2","B":1}})"),
                 {"'__metadata__' key 'B'", "must be strings"});
  expect_refused(make_image(R"({"__metadata__":{"op":{"x":"y"}}})"), {"key 'op'", "object"});
  expect_refused(make_image(R"({"__metadata__":{"op":null}})"), {"key 'op'", "null"});
}

// --- Refusals: one tensor entry ---------------------------------------------

TEST(SafetensorsRefuses, EntryNotAnObject) {
  expect_refused(image_with_entry("[1, 2]"), {"tensor 'w'", "must be an object", "array"});
  expect_refused(image_with_entry("\"F64\""), {"tensor 'w'", "must be an object", "string"});
}

TEST(SafetensorsRefuses, EntryMissingAField) {
  expect_refused(image_with_entry(R"({"shape":[2],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "missing 'dtype'"});
  expect_refused(image_with_entry(R"({"dtype":"F64","data_offsets":[0,16]})"),
                 {"tensor 'w'", "missing 'shape'"});
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[2]})"),
                 {"tensor 'w'", "missing 'data_offsets'"});
}

TEST(SafetensorsRefuses, EntryWithAnUnexpectedKey) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[2],"data_offsets":[0,16],"x":1})"),
                 {"tensor 'w'", "unexpected key 'x'"});
}

TEST(SafetensorsRefuses, DtypeNotAString) {
  expect_refused(image_with_entry(R"({"dtype":64,"shape":[2],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "'dtype' must be a string"});
}

TEST(SafetensorsRefuses, UnknownDtype) {
  expect_refused(image_with_entry(R"({"dtype":"U8","shape":[2],"data_offsets":[0,2]})"),
                 {"tensor 'w'", "unknown dtype 'U8'"});
  expect_refused(image_with_entry(R"({"dtype":"f64","shape":[2],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "unknown dtype 'f64'"});
}

TEST(SafetensorsRefuses, ShapeOfTheWrongType) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":2,"data_offsets":[0,16]})"),
                 {"tensor 'w'", "'shape' must be a list of integers"});
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[2.0],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "non-integer number"});
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":["2"],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "'shape' must be a list of integers", "string"});
  expect_refused(
      image_with_entry(R"({"dtype":"F64","shape":[100000000000000000000],"data_offsets":[0,16]})"),
      {"tensor 'w'", "'shape' must be a list of integers"});
}

TEST(SafetensorsRefuses, NegativeExtent) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[-2],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "negative extent -2"});
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[-2,-1],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "negative extent -2"});
}

TEST(SafetensorsRefuses, ShapeProductOverflow) {
  expect_refused(
      image_with_entry(R"({"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,16]})"),
      {"tensor 'w'", "[4294967296, 4294967296]", "64-bit"});
  // 2^61 F64 elements: the element count fits but the byte count does not.
  expect_refused(
      image_with_entry(R"({"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,16]})"),
      {"tensor 'w'", "64-bit"});
  expect_refused(
      image_with_entry(R"({"dtype":"F64","shape":[9223372036854775808],"data_offsets":[0,16]})"),
      {"tensor 'w'", "9223372036854775808", "too large"});
}

TEST(SafetensorsRefuses, DataOffsetsOfTheWrongForm) {
  for (std::string_view offsets :
       {"\"0,16\"", "[16]", "[0,8,16]", "[-1,15]", "[0.0,16]", "[0,\"16\"]", "{}", "[]"}) {
    SCOPED_TRACE(offsets);
    expect_refused(image_with_entry(std::string(R"({"dtype":"F64","shape":[2],"data_offsets":)") +
                                    std::string(offsets) + "}"),
                   {"tensor 'w'", "'data_offsets' must be [begin, end]"});
  }
}

TEST(SafetensorsRefuses, DataOffsetsEndBeforeTheyBegin) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[0],"data_offsets":[16,0]})"),
                 {"tensor 'w'", "[16, 0]", "end before they begin"});
}

TEST(SafetensorsRefuses, DataOffsetsPastTheDataSection) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[3],"data_offsets":[0,24]})"),
                 {"tensor 'w'", "[0, 24]", "past the end of the 16-byte data section"});
  expect_refused(
      image_with_entry(R"({"dtype":"F64","shape":[1],"data_offsets":[0,18446744073709551615]})"),
      {"tensor 'w'", "past the end"});
}

TEST(SafetensorsRefuses, ShapeDisagreesWithDataOffsets) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[3],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "[3]", "needs 24 bytes", "hold 16"});
  expect_refused(image_with_entry(R"({"dtype":"BF16","shape":[2,2],"data_offsets":[0,16]})"),
                 {"tensor 'w'", "needs 8 bytes"});
}

// --- Refusals: the tensors together -----------------------------------------

TEST(SafetensorsRefuses, OverlappingTensors) {
  expect_refused(make_image(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
                            R"("b":{"dtype":"F64","shape":[2],"data_offsets":[8,24]}})",
                            24),
                 {"tensor 'b'", "[8, 24]", "overlap", "tensor 'a'"});
  // Two names for the same bytes.
  expect_refused(make_image(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
                            R"("b":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})",
                            16),
                 {"tensor 'b'", "overlap", "tensor 'a'"});
}

TEST(SafetensorsRefuses, GapBetweenTensors) {
  expect_refused(make_image(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F64","shape":[1],"data_offsets":[16,24]}})",
                            24),
                 {"tensor 'b'", "[8, 16)", "gap"});
}

TEST(SafetensorsRefuses, GapBeforeTheFirstTensor) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[1],"data_offsets":[8,16]})"),
                 {"tensor 'w'", "[0, 8)", "gap"});
}

TEST(SafetensorsRefuses, TrailingBytesInTheDataSection) {
  expect_refused(image_with_entry(R"({"dtype":"F64","shape":[1],"data_offsets":[0,8]})"),
                 {"8 trailing bytes"});
  expect_refused(make_image("{}", 1), {"1 trailing bytes"});
}

}  // namespace
}  // namespace deltaproof
