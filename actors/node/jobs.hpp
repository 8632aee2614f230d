#pragma once
// Work items that enter the node from outside the actor system (the RPC thread, tests).
// A job carries its inputs, receives its outputs, and is completed exactly once by the
// actor that finishes it, which calls `done` on its own thread (the RPC layer hands the
// result back to its event loop from there). No CAF types appear here.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/common/status.hpp"
#include "actors/scheduler/command.hpp"
#include "actors/scheduler/instance_spec.hpp"

namespace hc {

using session_id = std::uint64_t;

struct pool_info {
  std::string kv_shm;  ///< "" when the instance has no KV bytes
  std::uint64_t kv_bytes = 0;
  std::string ssm_shm;  ///< "" when the instance has no slot bytes
  std::uint64_t ssm_bytes = 0;
  std::uint64_t kv_bytes_per_token = 0;
  std::uint64_t ssm_slot_bytes = 0;
  std::uint64_t instance_id = 0;
};

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

struct stats_job : job_base<stats_job> {
  std::vector<std::pair<std::string, double>> stats;
  std::string inspect_json;  ///< filled when want_inspect
  bool want_inspect = false;
};

}  // namespace hc
