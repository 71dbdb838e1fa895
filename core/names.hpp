// core/names.hpp — an enum's one name table: each value's name as reports and
// the command line write it, and the way back. A table is an array of
// {value, name} pairs, written once beside its enum.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"

namespace deltaproof {

template <class E, std::size_t N>
constexpr std::string_view name_of(const std::pair<E, std::string_view> (&table)[N], E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}

// The value named `name`, or nullopt.
template <class E, std::size_t N>
constexpr std::optional<E> find_value(const std::pair<E, std::string_view> (&table)[N],
                                      std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

// Throws InputError naming `what`, the text and every name the table holds.
template <class E, std::size_t N>
E value_of(const std::pair<E, std::string_view> (&table)[N], std::string_view name,
           std::string_view what) {
  std::string known;
  for (const auto& [v, n] : table) {
    if (n == name) return v;
    if (!known.empty()) known += ", ";
    known += n;
  }
  std::string message = "unknown ";
  message.append(what).append(" '").append(name).append("'; one of: ").append(known);
  throw InputError(message);
}

}  // namespace deltaproof
