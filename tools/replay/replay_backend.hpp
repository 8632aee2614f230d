#pragma once
// Where a replay runs its commands: in this process (local_backend) or in a running
// node over RPC (tools/hcctl rpc_backend). Both execute the same commands with the same
// executor, so their results must agree field by field.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "actors/common/command.hpp"
#include "actors/radix_cache/radix_cache.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "actors/scheduler/request_manager.hpp"
#include "tools/replay/trace.hpp"

namespace hc::replay {

class replay_backend {
 public:
  virtual ~replay_backend() = default;
  /// Runs a batch in order; fills one result per command (a transport failure fails
  /// every command with io_error). Returns the nanoseconds the op cost: the cache call
  /// of the last command in process, the round trip over RPC.
  virtual std::uint64_t run(std::span<const command> cmds,
                            std::vector<command_result>& results) = 0;
};

/// The instance a trace's header describes (bookkeeping only: no pool bytes). Both
/// backends size their cache from it (cache_config_of / request_config_of).
instance_spec spec_of(const trace_config& c);

class local_backend final : public replay_backend {
 public:
  explicit local_backend(const trace_config& cfg);
  std::uint64_t run(std::span<const command> cmds, std::vector<command_result>& results) override;
  radix_cache& cache() noexcept { return *cache_; }
  request_manager& requests() noexcept { return *mgr_; }

 private:
  std::unique_ptr<radix_cache> cache_;
  std::unique_ptr<request_manager> mgr_;
};

}  // namespace hc::replay
