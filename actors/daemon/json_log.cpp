#include "actors/daemon/json_log.hpp"

#include <nlohmann/json.hpp>

namespace hc {

std::string json_log_line(log::level l, std::string_view time, std::string_view message) {
  nlohmann::ordered_json line;
  line["time"] = time;
  line["level"] = log::level_name(l);
  line["msg"] = message;
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace hc
