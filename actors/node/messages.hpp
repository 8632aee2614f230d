#pragma once
// The messages the actors exchange (CAF 0.17 atoms and payload types). Jobs travel as
// shared_ptr: the actor that finishes a job completes it; nobody shares its state.

#include <caf/all.hpp>

#include <memory>

#include "actors/forward_stream/stream_rules.hpp"
#include "actors/node/host_storage_actor.hpp"
#include "actors/node/jobs.hpp"
#include "actors/radix_cache/radix_tree.hpp"
#include "actors/scheduler/forward_ops.hpp"
#include "actors/scheduler/request_manager.hpp"

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
/// node -> radix_cache: (drain_atom) -> bool, once none of its tier work is in flight.
using drain_atom = caf::atom_constant<caf::atom("drain")>;
/// forward_stream -> radix_cache: (fenced_atom, session, batch, ended) — a forward began
/// (ended false) or ended; released request ids wait in quarantine until it ended.
using fenced_atom = caf::atom_constant<caf::atom("fenced")>;
/// radix_cache -> forward_stream: (read_after_atom, session, writer_marks) — the session's
/// next begin_forward waits until these forwards of other sessions ended (their bytes,
/// cached while they ran, are what the session's requests reached).
using read_after_atom = caf::atom_constant<caf::atom("readafter")>;
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
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::forward_ops)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::request_config)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::tier_kind)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::tier_copies)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::msg::writer_marks)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::l3_write_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(hc::l3_read_ptr)
