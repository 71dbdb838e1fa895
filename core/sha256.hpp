// core/sha256.hpp — SHA-256 (FIPS 180-4), small and in-tree so that hashes need
// no shared library on the GPU machine.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace deltaproof {

std::string sha256_hex(std::span<const std::byte> data);

}  // namespace deltaproof
