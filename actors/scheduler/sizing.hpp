#pragma once
// Strategy validation and pool sizing (cache-semantics.md §4.1, §4.2, §6).
// Every rejected combination yields errc::invalid_config with a message naming the
// options involved; every automatic correction yields a warning string.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "actors/common/status.hpp"
#include "actors/common/strategy.hpp"

namespace hc {

/// The options that decide a strategy's legality (names follow SGLang's flags).
struct strategy_options {
  strategy strat = strategy::no_buffer;  ///< --mamba-scheduler-strategy. Default: no_buffer
  std::size_t page_size = 1;             ///< --page-size. Default: 1
  bool overlap = true;                   ///< overlap scheduling on. Default: true
  bool radix_cache = true;               ///< prefix cache on. Default: true
  std::size_t spec_draft_tokens = 0;     ///< D; 0 = no speculative decoding. Default: 0
  std::size_t track_interval = 256;      ///< --mamba-track-interval. Default: 256
  std::size_t model_chunk = 64;          ///< FLA 64, Mamba2 256/128. Default: 64
  chunk_convention backend = chunk_convention::fla;  ///< kernel family. Default: fla
  std::size_t conv_kernel = 4;                       ///< K of the causal conv. Default: 4
  pd_mode pd = pd_mode::none;                        ///< disaggregation role. Default: none
  bool decode_radix_cache = false;                   ///< --disaggregation-decode-enable-radix-cache
};

/// What the node will actually run, after corrections.
struct validated_strategy {
  strategy strat = strategy::no_buffer;
  std::size_t page_size = 1;
  bool overlap = true;
  bool radix_cache = true;
  std::size_t chunk_size = 64;  ///< C
  int pp_size = 0;              ///< ping-pong entries per request (0 for no_buffer)
  std::vector<std::string> warnings;
};

/// Applies SGLang's corrections and rejects invalid combinations.
result<validated_strategy> validate_strategy(const strategy_options& o);

/// Ping-pong size: 2 with overlap scheduling, else 1.
constexpr int ping_pong_size(bool overlap) noexcept {
  return overlap ? 2 : 1;
}

/// Slots reserved per running request in the ratio split: 1 without radix cache, else
/// 3 + (0 no_buffer | 2 extra_buffer+overlap | 1 extra_buffer | 1 lazy+overlap).
/// invalid_config for lazy without overlap.
result<std::size_t> mamba_ratio(strategy s, bool radix_cache, bool overlap);

/// Slots pre-evicted per request before row allocation (§3.8): 3, lazy 2, 1 if the tree
/// does not manage slots.
std::size_t alloc_factor(strategy s, bool radix_cache) noexcept;

/// Inputs of the SSM pool size computation (§4.2).
struct slot_budget {
  std::optional<std::size_t> explicit_slots;        ///< --max-mamba-cache-size
  std::optional<std::size_t> max_running_requests;  ///< --max-running-requests
  std::size_t dp_size = 1;                          ///< DP attention size
  std::size_t rest_bytes = 0;                       ///< memory left after weights
  double full_memory_ratio = 0.9;                   ///< --mamba-full-memory-ratio
  std::size_t bytes_per_slot = 0;                   ///< mamba_cache_per_req
  std::size_t spec_draft_tokens = 0;                ///< D
};

struct slot_sizing {
  std::size_t slots = 0;     ///< max_mamba_cache_size
  std::size_t kv_bytes = 0;  ///< memory left for the KV pool
};

result<slot_sizing> size_slot_pool(const slot_budget& b, std::size_t ratio, bool radix_cache);

/// max_running_requests = min(token bound, slots / ratio); invalid_config if 0.
result<std::size_t> admission_bound(std::size_t token_bound, std::size_t slots, std::size_t ratio);

/// PD decode-side pool (§6, seed PR 22462).
struct pd_decode_inputs {
  std::size_t max_running_requests = 0;         ///< size
  std::size_t pre_alloc_env = 0;                ///< SGLANG_DISAGGREGATION_NUM_PRE_ALLOCATE_REQS
  std::optional<std::size_t> configured_slots;  ///< --max-mamba-cache-size, if set
  strategy strat = strategy::no_buffer;         ///< after validation
  bool overlap = true;
};

struct pd_decode_sizing {
  std::size_t pre_alloc = 0;
  std::size_t request_rows = 0;  ///< size + pre_alloc (+1 dummy not counted)
  std::size_t slots_per_req = 0;
  std::size_t max_slots_needed = 0;
  std::size_t slots = 0;  ///< never capped below max_slots_needed
  std::vector<std::string> warnings;
};

pd_decode_sizing size_pd_decode(const pd_decode_inputs& in);

}  // namespace hc
