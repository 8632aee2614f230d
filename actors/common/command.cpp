#include "actors/common/command.hpp"

namespace hc {

const char* to_string(cmd_kind k) noexcept {
  static constexpr const char* names[cmd_kind_count] = {
      "create",         "append",         "match",          "lock",
      "unlock",         "alloc_req",      "alloc_kv",       "track",
      "prepare_extend", "prepare_decode", "process_decode", "cache_unfinished",
      "finish",         "abort",          "not_admitted",   "evict",
      "check",          "take_ops",       "lookup",         "prefetch"};
  const auto i = static_cast<std::size_t>(k);
  return i < cmd_kind_count ? names[i] : "?";
}

}  // namespace hc
