#pragma once
// The scheduler actor (one per worker session): the session's front door. It checks each
// step against the node's limits, routes steps to the instance's radix_cache actor and
// fences / byte access to its forward_stream, and on close (or client disconnect)
// releases everything the session holds.
//
// Design note (differs from architecture.md §1, see README "Actors"): the request records
// live in the radix_cache actor next to the tree, keyed by session. Every request
// operation (match, cache_unfinished, finish, ...) is a read-modify-write of both the tree
// and the record; keeping them in one actor makes each step one message instead of one
// round trip per operation, and leaves no window in which a record and the tree disagree.
//
// Messages: (step, step_ptr), (fence, fence_ptr), (bytes, bytes_ptr), (close, close_ptr).

#include <caf/fwd.hpp>

#include <cstddef>

#include "actors/node/jobs.hpp"

namespace hc {

struct scheduler_limits {
  std::size_t max_step_commands = 65536;
  std::size_t max_command_tokens = std::size_t{1} << 20;
};

caf::behavior scheduler_actor(caf::event_based_actor* self, session_id session,
                              scheduler_limits limits, caf::actor radix_cache,
                              caf::actor forward_stream);

}  // namespace hc
