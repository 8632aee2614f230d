#pragma once
// Minimal leveled logging to stderr: "2026-11-23T10:00:00.123Z info  message", or another
// line format set once at start (hybridcached --log-format json: actors/daemon/json_log.hpp).
// Thread-safe (one write per line). Pure: standard library only.

#include <optional>
#include <string>
#include <string_view>

namespace hc::log {

enum class level { error = 0, warn = 1, info = 2, debug = 3 };

std::optional<level> parse_level(std::string_view name) noexcept;
/// "error", "warn", "info" or "debug".
std::string_view level_name(level l) noexcept;

/// A log line from its level, its UTC time ("2026-11-23T10:00:00.123Z") and its message,
/// with its newline.
using line_format = std::string (*)(level l, std::string_view time, std::string_view message);
/// The lines' format from now on (nullptr: the default text). Set it before other threads
/// log (the pointer is atomic, a line written meanwhile has one format or the other).
void set_format(line_format f) noexcept;

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
