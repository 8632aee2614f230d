#include "actors/scheduler/command_executor.hpp"
#include "tools/replay/replay_backend.hpp"

namespace hc::replay {

instance_spec spec_of(const trace_config& c) {
  instance_spec s;
  s.model_id = "trace";
  s.page_size = c.page_size;
  s.kv_tokens = c.kv_pool_tokens;
  s.ssm_slots = c.mamba_pool_slots;
  s.chunk_size = c.chunk_size;
  s.strat = parse_strategy(c.strategy).value_or(strategy::no_buffer);  // read_trace checked it
  s.track_interval = c.track_interval;
  s.overlap = c.ping_pong_size == 2;
  s.request_rows = c.req_pool_rows;
  s.max_context_len = c.max_context_len;
  s.slots_per_request = c.state_per_req;
  return s;
}

local_backend::local_backend(const trace_config& cfg)
    : cache_(std::make_unique<radix_cache>(cache_config_of(spec_of(cfg)))),
      mgr_(std::make_unique<request_manager>(request_config_of(spec_of(cfg)), *cache_)) {}

std::uint64_t local_backend::run(std::span<const command> cmds,
                                 std::vector<command_result>& results) {
  execute_batch(*mgr_, *cache_, cmds, results, nullptr);  // a replay has no forward stream
  return results.empty() ? 0 : results.back().elapsed_ns;
}

}  // namespace hc::replay
