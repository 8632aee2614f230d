#pragma once
// Tokens passed by reference (InstanceSpec.sharedTokens): a create, append, lookup or pin command
// may name a range of the session's token arena instead of carrying its tokens; before the
// step runs, the node copies each range into its command, so what runs is the same step
// as if the worker had sent the lists (and the worker may reuse the range once the step
// returned).
//
// Thread safety: none; the caller owns the commands. The arena is read, never written:
// a worker that writes a range while its step runs gets those tokens in some mix, never
// more (plain copies of 32-bit words).

#include <span>

#include "actors/common/command.hpp"
#include "actors/common/status.hpp"

namespace hc {

/// Replaces every create / append / lookup / pin range in `cmds` by the arena's tokens (the range
/// is cleared). An empty arena means the session has none. On error (a range past the arena's end,
/// or no arena), names the command and leaves every command as it was: the step must not run.
status resolve_shared_tokens(std::span<command> cmds, std::span<const token_id> arena);

}  // namespace hc
