#include "actors/scheduler/shared_tokens.hpp"

#include <string>
#include <variant>

namespace hc {

status resolve_shared_tokens(std::span<command> cmds, std::span<const token_id> arena) {
  // Every range is checked before any is copied: a refused step changes nothing.
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const auto f = prompt_fields(cmds[i]);
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
    const auto f = prompt_fields(c);
    if (!f.shared || !*f.shared) continue;
    const std::span<const token_id> src = arena.subspan((*f.shared)->at, (*f.shared)->count);
    f.tokens->assign(src.begin(), src.end());
    f.shared->reset();
  }
  return {};
}

}  // namespace hc
