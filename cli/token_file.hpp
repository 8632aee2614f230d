#pragma once
// The TCP shared secret in a --token-file, read one way by the node (hybridcached) and its
// clients (hcctl; the Python package's connect() follows the same rule): the file's first
// line without the spaces, tabs and carriage return around it. So a file written on
// Windows (CRLF line ends) or by an editor that leaves a trailing space holds the same
// secret for every reader — before, the node kept "secret\r" and Python sent "secret".

#include <cstddef>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

namespace hc::cli {

/// The fewest characters a node takes as its TCP secret (hybridcached refuses a shorter one
/// at start, and --check-config names it).
inline constexpr std::size_t min_secret_chars = 16;

/// Whitespace that a token file's first line may have around its secret.
inline constexpr std::string_view token_blanks = " \t\r\n\v\f";

/// The secret of the token file at `path` (possibly empty: the caller decides what is too
/// short); nullopt when the file cannot be opened or holds no line at all.
inline std::optional<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  const auto first = line.find_first_not_of(token_blanks);
  if (first == std::string::npos) return std::string{};
  const auto last = line.find_last_not_of(token_blanks);
  return line.substr(first, last - first + 1);
}

}  // namespace hc::cli
