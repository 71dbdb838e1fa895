// core/files.hpp — whole-file reads and atomic writes (temp file + fsync +
// rename), so a crash or a full disk never leaves half a file behind.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace deltaproof {

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path);
// Throws InputError naming the path when the folder does not exist or is not
// writable.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_text_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace deltaproof
