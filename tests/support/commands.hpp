#pragma once
// Builders for scheduler commands in tests (what a worker puts in a step).

#include <cstdint>
#include <utility>
#include <vector>

#include "actors/common/command.hpp"

namespace hc::test {

inline command cmd(cmd_kind k, request_handle req = 0) {
  command c;
  c.kind = k;
  c.req = req;
  return c;
}
inline command with_tokens(cmd_kind k, request_handle req, std::vector<token_id> t) {
  command c = cmd(k, req);
  c.tokens = std::move(t);
  return c;
}
inline command create(request_handle req, std::vector<token_id> prompt) {
  return with_tokens(cmd_kind::create, req, std::move(prompt));
}
inline command with_n(cmd_kind k, request_handle req, std::uint64_t start, std::uint64_t n) {
  command c = cmd(k, req);
  c.start = start;
  c.n = n;
  return c;
}
inline command evict(std::uint64_t tokens, std::uint64_t slots) {
  command c = cmd(cmd_kind::evict);
  c.n = tokens;
  c.m = slots;
  return c;
}

}  // namespace hc::test
