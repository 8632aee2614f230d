#pragma once
// The messages the actors exchange, as one typed interface per actor (CAF 0.17
// typed_actor): the compiler checks every send, request and handler against them. Each
// atom has one payload shape per actor. Jobs from outside the actor system travel as
// shared_ptr: the actor that finishes a job completes it; nobody shares its state.

#include <caf/all.hpp>

#include <memory>
#include <string>

#include "actors/forward_stream/stream_rules.hpp"
#include "actors/node/inspect_document.hpp"
#include "actors/node/jobs.hpp"
#include "actors/node/l3_jobs.hpp"
#include "actors/radix_cache/instance_stats.hpp"
#include "actors/radix_cache/radix_tree.hpp"
#include "actors/scheduler/forward_ops.hpp"
#include "actors/scheduler/request_manager.hpp"
#include "gpu/shm_region.hpp"

namespace hc::msg {

using open_atom = caf::atom_constant<caf::atom("open")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using fence_atom = caf::atom_constant<caf::atom("fence")>;
using bytes_atom = caf::atom_constant<caf::atom("bytes")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using attach_atom = caf::atom_constant<caf::atom("attach")>;
using detach_atom = caf::atom_constant<caf::atom("detach")>;
using ops_atom = caf::atom_constant<caf::atom("ops")>;
using inspect_atom = caf::atom_constant<caf::atom("inspect")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using detached_atom = caf::atom_constant<caf::atom("detached")>;
using tier_atom = caf::atom_constant<caf::atom("tier")>;
using store_atom = caf::atom_constant<caf::atom("store")>;
using prefetch_atom = caf::atom_constant<caf::atom("prefetch")>;
using ext_store_atom = caf::atom_constant<caf::atom("extstore")>;
using donate_atom = caf::atom_constant<caf::atom("donate")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using fenced_atom = caf::atom_constant<caf::atom("fenced")>;
using read_after_atom = caf::atom_constant<caf::atom("readafter")>;
using events_atom = caf::atom_constant<caf::atom("events")>;
using tier_done_atom = caf::atom_constant<caf::atom("tierdone")>;

using writer_marks = std::vector<writer_mark>;
/// What a batch of tier copies is, which decides when forward_stream runs it
/// (stream_rules.hpp).
using tier_kind = hc::tier_kind;
using tier_copies = std::vector<tier_copy>;

using open_ptr = std::shared_ptr<open_job>;
using step_ptr = std::shared_ptr<step_job>;
using fence_ptr = std::shared_ptr<fence_job>;
using bytes_ptr = std::shared_ptr<bytes_job>;
using close_ptr = std::shared_ptr<close_job>;
using stats_ptr = std::shared_ptr<stats_job>;
using drain_ptr = std::shared_ptr<drain_job>;
using store_ptr = std::shared_ptr<store_job>;
/// A region of a session's shared memory; null where the session has none.
using rows_ptr = std::shared_ptr<shm_region>;
/// An instance's device pages for inspect --blocks (radix_cache -> scheduler).
using block_listing_ptr = std::shared_ptr<const block_listing>;
/// A session's shared memory: its request rows (InstanceSpec.sharedRows) and its token
/// arena (InstanceSpec.sharedTokens).
struct session_shm {
  rows_ptr rows;
  rows_ptr tokens;
};

/// forward_stream (one per instance): the L1 bytes and their ordered stream.
using stream_actor = caf::typed_actor<
    /// A session of the instance opened / closed.
    caf::reacts_to<attach_atom, session_id>, caf::reacts_to<detach_atom, session_id>,
    /// The clears / COWs / snapshots of a take_ops, for the session's batch.
    caf::reacts_to<ops_atom, session_id, std::uint64_t, forward_ops>,
    /// Donation copies (no_buffer): run before anything queued after them.
    caf::reacts_to<donate_atom, session_id, forward_ops>,
    /// The session's next begin waits until these forwards of other sessions ended.
    caf::reacts_to<read_after_atom, session_id, writer_marks>,
    /// A worker's begin_forward / end_forward, completed when the rules answer it.
    caf::reacts_to<fence_atom, fence_ptr>,
    /// A worker's byte access to a KV page or a slot.
    caf::reacts_to<bytes_atom, bytes_ptr>,
    /// Tier copies, answered once they ran.
    caf::replies_to<tier_atom, tier_kind, session_id, tier_copies>::with<tier_copies>,
    /// A device pool's completion callback: the tier job's queued copies are done.
    caf::reacts_to<tier_done_atom, std::uint64_t>,
    /// A session's fence events on a device pool (l1_pool::open_events): the IPC handles
    /// of `ready` and `done`, and an error message ("" = none; empty handles on host pools).
    caf::replies_to<events_atom, session_id>::with<std::string, std::string, std::string>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// host_storage (one per node, detached: it blocks on L3 I/O).
using storage_actor = caf::typed_actor<
    /// A backup of one node's host copy to L3.
    caf::replies_to<store_atom, l3_write_ptr>::with<l3_write_ptr>,
    /// A prefetch's existence check and reads into the host pools.
    caf::replies_to<prefetch_atom, l3_read_ptr>::with<l3_read_ptr>,
    /// An external client's L3 batch (completed on this thread).
    caf::reacts_to<ext_store_atom, store_ptr>, caf::replies_to<inspect_atom>::with<std::string>>;

/// radix_cache (one per instance): the tree and the sessions' request tables.
using cache_actor = caf::typed_actor<
    /// Creates the session's request table (in the shared rows when not null; it keeps
    /// its shared memory while the session lives); answers with the instance's stream.
    caf::replies_to<attach_atom, session_id, request_config, std::string,
                    session_shm>::with<stream_actor>,
    /// A worker's scheduling step (checked for size by the caller).
    caf::reacts_to<step_atom, step_ptr>,
    /// The session closed: its requests are released; completes the job.
    caf::reacts_to<close_atom, close_ptr>,
    /// From its stream: a forward of the session began (ended false) or ended.
    caf::reacts_to<fenced_atom, session_id, std::uint64_t, bool>,
    /// Answers once none of its tier work is in flight.
    caf::replies_to<drain_atom>::with<bool>,
    /// What the instance holds and served (summed by the scheduler for `stats`).
    caf::replies_to<stats_atom>::with<instance_stats>,
    /// Its tree summary as JSON text; with true, also every device KV page (or why not:
    /// more than the given count), for the scheduler to render; null with false.
    caf::replies_to<inspect_atom, bool, std::uint64_t>::with<std::string, block_listing_ptr>>;

/// scheduler (one per node): the instances and the sessions.
using scheduler_actor_type =
    caf::typed_actor<caf::reacts_to<open_atom, open_ptr>, caf::reacts_to<stats_atom, stats_ptr>,
                     caf::reacts_to<drain_atom, drain_ptr>,
                     /// From a radix_cache: a session of instance `id` is gone.
                     caf::reacts_to<detached_atom, std::uint64_t, close_ptr>,
                     caf::reacts_to<shutdown_atom>>;

}  // namespace hc::msg

// Local-only payloads (never serialized).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::open_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::step_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::fence_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::bytes_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::close_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::stats_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::drain_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::store_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::rows_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::session_shm)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::block_listing_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::forward_ops)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::request_config)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::tier_kind)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::tier_copies)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::writer_marks)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::l3_write_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::l3_read_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::instance_stats)
