#include "actors/common/command.hpp"

#include <concepts>
#include <type_traits>

namespace hc {

const char* to_string(cmd_kind k) noexcept {
  static constexpr const char* names[cmd_kind_count] = {
      "create",         "append",         "match",
      "lock",           "unlock",         "alloc_req",
      "alloc_kv",       "track",          "prepare_extend",
      "prepare_decode", "process_decode", "cache_unfinished",
      "finish",         "abort",          "not_admitted",
      "evict",          "check",          "take_ops",
      "lookup",         "prefetch",       "pin",
      "unpin",          "demote"};
  const auto i = static_cast<std::size_t>(k);
  return i < cmd_kind_count ? names[i] : "?";
}

namespace {
template <cmd_kind K>
using alternative = std::variant_alternative_t<static_cast<std::size_t>(K), command>;
static_assert(std::is_same_v<alternative<cmd_kind::create>, cmd::create>);
static_assert(std::is_same_v<alternative<cmd_kind::alloc_kv>, cmd::alloc_kv>);
static_assert(std::is_same_v<alternative<cmd_kind::finish>, cmd::finish>);
static_assert(std::is_same_v<alternative<cmd_kind::evict>, cmd::evict>);
static_assert(std::is_same_v<alternative<cmd_kind::prefetch>, cmd::prefetch>);
static_assert(std::is_same_v<alternative<cmd_kind::unpin>, cmd::unpin>);
static_assert(std::is_same_v<alternative<cmd_kind::demote>, cmd::demote>);

template <class T>
concept about_a_request = requires(const T& t) {
  { t.req } -> std::convertible_to<request_handle>;
};
}  // namespace

std::optional<request_handle> request_of(const command& c) noexcept {
  return std::visit(
      [](const auto& k) -> std::optional<request_handle> {
        if constexpr (about_a_request<std::decay_t<decltype(k)>>) {
          return k.req;
        } else {
          return std::nullopt;
        }
      },
      c);
}

}  // namespace hc
