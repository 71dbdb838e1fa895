// core/error.hpp — the exceptions deltaproof throws. Each carries a sentence a
// user can act on: which file, which tensor, what is wrong, what to change.
#pragma once

#include <stdexcept>
#include <string>

namespace deltaproof {

// Bad input: a malformed file, a tensor of the wrong shape, an impossible
// option. The CLI maps it to exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file that is not a valid safetensors file (or not the one we expected).
class FormatError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace deltaproof
