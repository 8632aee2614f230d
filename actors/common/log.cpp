#include "actors/common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace hc::log {
namespace {

std::atomic<int> current{static_cast<int>(level::info)};
std::atomic<line_format> format{nullptr};

const char* name(level l) {
  switch (l) {
    case level::error:
      return "error";
    case level::warn:
      return "warn ";
    case level::info:
      return "info ";
    case level::debug:
      return "debug";
  }
  return "?    ";
}

std::string text_line(level l, std::string_view time, std::string_view message) {
  std::string line;
  line.reserve(time.size() + message.size() + 8);
  line.append(time).append(" ").append(name(l)).append(" ").append(message).append("\n");
  return line;
}

}  // namespace

std::string_view level_name(level l) noexcept {
  std::string_view n = name(l);
  while (!n.empty() && n.back() == ' ')
    n.remove_suffix(1);
  return n;
}

void set_format(line_format f) noexcept {
  format.store(f);
}

std::optional<level> parse_level(std::string_view n) noexcept {
  if (n == "error") return level::error;
  if (n == "warn" || n == "warning") return level::warn;
  if (n == "info") return level::info;
  if (n == "debug") return level::debug;
  return std::nullopt;
}

void set_level(level l) noexcept {
  current.store(static_cast<int>(l));
}

bool enabled(level l) noexcept {
  return static_cast<int>(l) <= current.load();
}

void write(level l, std::string_view message) {
  if (!enabled(l)) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  const std::string time =
      std::string(ts) + "." + (ms < 100 ? (ms < 10 ? "00" : "0") : "") + std::to_string(ms) + "Z";
  const line_format f = format.load();
  const std::string line = f != nullptr ? f(l, time, message) : text_line(l, time, message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace hc::log
