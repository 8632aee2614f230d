#include "actors/scheduler/command_executor.hpp"
#include "tools/replay/replay_backend.hpp"

namespace hc::replay {

cache_config cache_config_of(const trace_config& c) {
  cache_config cc;
  cc.kv_tokens = c.kv_pool_tokens;
  cc.page_size = c.page_size;
  cc.slots = c.mamba_pool_slots;
  cc.chunk_size = c.chunk_size;
  return cc;
}

request_config request_config_of(const trace_config& c) {
  request_config rc;
  rc.strat = parse_strategy(c.strategy).value_or(strategy::no_buffer);
  rc.pp_size = c.ping_pong_size;
  rc.chunk_size = c.chunk_size;
  rc.track_interval = c.track_interval;
  rc.rows = c.req_pool_rows;
  rc.max_context_len = c.max_context_len;
  rc.alloc_factor = c.state_per_req;
  return rc;
}

local_backend::local_backend(const trace_config& cfg)
    : cache_(std::make_unique<radix_cache>(cache_config_of(cfg))),
      mgr_(std::make_unique<request_manager>(request_config_of(cfg), *cache_)) {}

std::uint64_t local_backend::run(std::span<const command> cmds,
                                 std::vector<command_result>& results) {
  execute_batch(*mgr_, *cache_, cmds, results, nullptr);  // a replay has no forward stream
  return results.empty() ? 0 : results.back().elapsed_ns;
}

}  // namespace hc::replay
