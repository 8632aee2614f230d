#pragma once
// Minimal leveled logging to stderr: "2026-11-23T10:00:00.123Z info  message".
// Thread-safe (one write per line). Pure: standard library only.

#include <optional>
#include <string>
#include <string_view>

namespace hc::log {

enum class level { error = 0, warn = 1, info = 2, debug = 3 };

std::optional<level> parse_level(std::string_view name) noexcept;
void set_level(level l) noexcept;
bool enabled(level l) noexcept;
void write(level l, std::string_view message);

inline void error(std::string_view m) {
  write(level::error, m);
}
inline void warn(std::string_view m) {
  write(level::warn, m);
}
inline void info(std::string_view m) {
  write(level::info, m);
}
inline void debug(std::string_view m) {
  if (enabled(level::debug)) write(level::debug, m);
}

}  // namespace hc::log
