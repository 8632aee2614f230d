#include "actors/scheduler/shared_tokens.hpp"

#include <string>
#include <variant>

namespace hc {

namespace {

/// The range and the token list of a create, append, lookup, pin or demote; null for other
/// kinds.
struct token_fields {
  std::optional<cmd::token_range>* shared = nullptr;
  std::vector<token_id>* tokens = nullptr;
};
token_fields fields_of(command& c) {
  if (auto* x = std::get_if<cmd::create>(&c)) return {&x->shared, &x->tokens};
  if (auto* x = std::get_if<cmd::append>(&c)) return {&x->shared, &x->tokens};
  if (auto* x = std::get_if<cmd::lookup>(&c)) return {&x->shared, &x->tokens};
  if (auto* x = std::get_if<cmd::pin>(&c)) return {&x->shared, &x->tokens};
  if (auto* x = std::get_if<cmd::demote>(&c)) return {&x->shared, &x->tokens};
  return {};
}

}  // namespace

status resolve_shared_tokens(std::span<command> cmds, std::span<const token_id> arena) {
  // Every range is checked before any is copied: a refused step changes nothing.
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const token_fields f = fields_of(cmds[i]);
    if (!f.shared || !*f.shared) continue;
    const cmd::token_range r = **f.shared;
    const std::string what = "command " + std::to_string(i) + " (" + to_string(kind_of(cmds[i])) +
                             "): shared tokens [" + std::to_string(r.at) + ", +" +
                             std::to_string(r.count) + ")";
    if (arena.empty())
      return {errc::invalid_argument,
              what + ", but the session has no token arena (open it with sharedTokens > 0)"};
    if (r.at > arena.size() || r.count > arena.size() - r.at)
      return {errc::invalid_argument, what + " past the end of the session's token arena (" +
                                          std::to_string(arena.size()) + " tokens)"};
  }
  for (command& c : cmds) {
    const token_fields f = fields_of(c);
    if (!f.shared || !*f.shared) continue;
    const std::span<const token_id> src = arena.subspan((*f.shared)->at, (*f.shared)->count);
    f.tokens->assign(src.begin(), src.end());
    f.shared->reset();
  }
  return {};
}

}  // namespace hc
