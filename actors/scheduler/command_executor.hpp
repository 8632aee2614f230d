#pragma once
// Executes commands against one session's request_manager and its instance's
// radix_cache. Used by the radix_cache actor (node) and by in-process replay, so both
// paths produce identical results.
//
// Thread safety: none; the caller owns both objects exclusively.

#include <functional>
#include <span>
#include <vector>

#include "actors/common/clock.hpp"
#include "actors/common/command.hpp"
#include "actors/scheduler/forward_ops.hpp"
#include "actors/scheduler/request_manager.hpp"

namespace hc {

/// Runs one command; never throws. Data ops produced by take_ops are appended to `ops`.
/// `time` measures the result's elapsed_ns.
void execute_command(request_manager& m, radix_cache& cache, const command& c, command_result& out,
                     forward_ops& ops, const clock& time = steady());

/// Runs a batch in order, one result per command. A command whose request already had a
/// failed command earlier in the batch is skipped (errc::invalid_argument, "skipped: ...");
/// other requests' commands are unaffected.
/// Each successful take_ops command and its ops (only take_ops yields ops) go to `on_ops`.
using ops_sink = std::function<void(const cmd::take_ops&, forward_ops&&)>;
/// A command the caller runs itself (the node's prefetch): returns true if it filled the
/// result, false to let the executor run the command.
using command_hook = std::function<bool(const command&, command_result&)>;
void execute_batch(request_manager& m, radix_cache& cache, std::span<const command> cmds,
                   std::vector<command_result>& results, const ops_sink& on_ops,
                   const command_hook& hook = {}, const clock& time = steady());

/// Validates the limits of a command that came from outside (token lists, counts); the
/// error names the field. Does not look at the session's state.
status validate_command(const command& c, std::size_t max_tokens);

}  // namespace hc
