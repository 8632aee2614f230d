#include "actors/common/fault_log.hpp"

#include "actors/common/log.hpp"
#include "actors/common/metrics_sink.hpp"

namespace hc {

std::optional<std::string> line_limiter::line(std::string_view kind, std::string_view text,
                                              clock_ns now) {
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) {
    if (kinds_.size() >= max_kinds) kinds_.clear();
    kinds_.emplace(std::string(kind), streak{now, 0});
    return std::string(text);
  }
  streak& s = it->second;
  if (now - s.last_line < interval_) {
    ++s.unlogged;
    return std::nullopt;
  }
  std::string out(text);
  if (s.unlogged > 0)
    out += " (and " + std::to_string(s.unlogged) + " more of this kind, not logged, in the " +
           std::to_string(
               std::chrono::duration_cast<std::chrono::seconds>(now - s.last_line).count()) +
           " s before it)";
  s = streak{now, 0};
  return out;
}

void fault_reporter::operator()(std::string_view kind, std::string_view detail) {
  metrics_->fault(kind);
  if (auto text = lines_.line(kind, "fault " + std::string(kind) + ": " + std::string(detail),
                              time_->now()))
    log::warn(*text);
}

}  // namespace hc
