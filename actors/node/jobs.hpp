#pragma once
// Work items that enter the node from outside the actor system (the RPC thread, tests):
// the entry vocabulary of hc::node. Not part of the client package (workers see the
// vocabulary of actors/common only).
// A job carries its inputs, receives its outputs, and is completed exactly once by the
// actor that finishes it, which calls `done` on its own thread (the RPC layer hands the
// result back to its event loop from there). No CAF types appear here.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "actors/common/command.hpp"
#include "actors/common/instance_spec.hpp"
#include "actors/common/pool_info.hpp"
#include "actors/common/status.hpp"
#include "actors/common/store_types.hpp"

namespace hc {

template <class Self>
struct job_base {
  error err;  ///< code ok unless the job failed as a whole
  std::function<void(Self&)> done;
  void complete() {
    if (done) std::exchange(done, nullptr)(static_cast<Self&>(*this));
  }
};

struct open_job : job_base<open_job> {
  instance_spec spec;
  session_id session = 0;
  pool_info info;
};

struct step_job : job_base<step_job> {
  session_id session = 0;
  std::vector<command> cmds;
  std::vector<command_result> results;
};

struct fence_job : job_base<fence_job> {
  session_id session = 0;
  std::uint64_t batch = 0;
  bool begin = true;
  std::uint64_t waited_ns = 0;
  std::uint64_t started_ns = 0;  ///< steady-clock ns when the job entered the node
};

struct bytes_job : job_base<bytes_job> {
  enum class what { read_kv_page, write_kv_page, read_slot, write_slot };
  session_id session = 0;
  what op = what::read_slot;
  std::int64_t index = 0;
  std::vector<std::byte> data;  ///< in for writes, out for reads
};

struct close_job : job_base<close_job> {
  session_id session = 0;
};

/// A batch of an external client's L3 operations (the Store capability). Values live in
/// the arena as segment lists.
struct store_job : job_base<store_job> {
  enum class what { exists, get, set, clear };
  using pool = store_pool;
  using segment = store_segment;
  using sidecar = store_sidecar;
  what op = what::exists;
  std::string identity;  ///< the client's namespace
  pool which = pool::kv_page;
  std::vector<std::string> keys;
  std::vector<std::vector<segment>> segments;  ///< get / set: one list per key
  std::vector<sidecar> sidecars;               ///< exists
  std::shared_ptr<void> arena_owner;           ///< keeps the arena mapped while in flight
  std::span<std::byte> arena;
  // out
  std::vector<bool> ok;  ///< get / set
  std::uint32_t kv_hit_pages = 0;
  std::vector<std::uint32_t> restorable;  ///< exists
  std::uint64_t removed = 0;              ///< clear: values erased
};

/// Completes once no tier work of any instance is in flight (CacheNode.drain).
struct drain_job : job_base<drain_job> {};

struct stats_job : job_base<stats_job> {
  std::vector<std::pair<std::string, double>> stats;  ///< filled unless want_inspect
  std::string inspect_json;                           ///< filled when want_inspect
  bool want_inspect = false;
  bool inspect_blocks = false;  ///< inspect: list every instance's device KV pages
};

}  // namespace hc
