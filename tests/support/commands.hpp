#pragma once
// Builders for scheduler commands in tests (what a worker puts in a step), for the kinds
// whose fields need more than a brace list.

#include <cstdint>
#include <utility>
#include <vector>

#include "actors/common/command.hpp"

namespace hc::test {

inline command create(request_handle req, std::vector<token_id> prompt) {
  return cmd::create{req, 0, std::move(prompt), {}};
}
inline command lookup(std::vector<token_id> tokens, bool without_indices = false) {
  return cmd::lookup{0, std::move(tokens), without_indices, {}};
}
inline command evict(std::uint64_t tokens, std::uint64_t slots) {
  return cmd::evict{tokens, slots};
}
inline command take_ops(std::vector<request_handle> reqs, std::uint64_t batch) {
  return cmd::take_ops{std::move(reqs), batch};
}

}  // namespace hc::test
