#include "actors/scheduler/instance_config.hpp"

#include "actors/common/printable_text.hpp"
#include "actors/scheduler/sizing.hpp"

namespace hc {
namespace {

error bad(std::string msg) {
  return {errc::invalid_config, std::move(msg)};
}

/// A model id or namespace: printed by hcctl, in L3 keys and event topics, so no control
/// characters (a terminal escape, a newline) and no key-sized names.
bool good_name(const std::string& name) {
  return name.size() <= max_spec_name_bytes && is_printable_text(name);
}

}  // namespace

status validate(const instance_spec& s, const spec_limits& lim) {
  // Sessions whose specs agree share an instance (its tree, its pools' KV) and its L3 keys:
  // two models of one shape (fine-tunes of one base) that both left the id out would serve
  // each other's KV, without an error anywhere.
  if (s.model_id.empty())
    return bad(
        "modelId is empty: name the model (e.g. its path and revision); sessions of "
        "specs that agree share one cache, so two models of one shape without an id "
        "would serve each other's KV");
  if (!good_name(s.model_id))
    return bad("modelId must be printable text (no control characters) of at most " +
               std::to_string(max_spec_name_bytes) + " bytes");
  if (!good_name(s.ns))
    return bad("namespace must be printable text (no control characters) of at most " +
               std::to_string(max_spec_name_bytes) + " bytes");
  if (s.page_size == 0) return bad("pageSize must be > 0");
  if (s.kv_tokens == 0) return bad("kvTokens must be > 0");
  if (s.kv_tokens % s.page_size != 0)
    return bad("kvTokens (" + std::to_string(s.kv_tokens) + ") must be a multiple of pageSize (" +
               std::to_string(s.page_size) + ")");
  // KV ids are Int32 (kv_index): the pool's tokens, its reserved page 0 included, must
  // all have one; likewise slot ids 0..ssmSlots (slot_id). Past that the ids would wrap.
  if (s.page_size > max_pool_ids || s.kv_tokens > max_pool_ids - s.page_size)
    return bad("kvTokens + pageSize (" + std::to_string(s.kv_tokens) + " + " +
               std::to_string(s.page_size) + ") must be at most " + std::to_string(max_pool_ids) +
               ": KV ids are 32-bit");
  if (s.ssm_slots == 0) return bad("ssmSlots must be > 0");
  if (s.ssm_slots > max_pool_ids - 1)
    return bad("ssmSlots (" + std::to_string(s.ssm_slots) + ") must be at most " +
               std::to_string(max_pool_ids - 1) + ": slot ids are 32-bit");
  if (s.ssm_slots > lim.max_ssm_slots)
    return bad("ssmSlots (" + std::to_string(s.ssm_slots) + ") must be at most " +
               std::to_string(lim.max_ssm_slots) +
               ": a slot holds a whole SSM state (a slot count, not bytes)");
  if (s.slots_per_request > s.ssm_slots)
    return bad("slotsPerRequest (" + std::to_string(s.slots_per_request) +
               ") must be at most ssmSlots (" + std::to_string(s.ssm_slots) + ")");
  if (s.request_rows == 0 || s.request_rows > lim.max_rows)
    return bad("requestRows must be in 1.." + std::to_string(lim.max_rows));
  if (s.tp_size == 0 || s.tp_rank >= s.tp_size) return bad("tpRank must be < tpSize");
  if (s.chunk_size < s.page_size || s.chunk_size % s.page_size != 0)
    return bad("chunkSize (" + std::to_string(s.chunk_size) +
               ") must be a multiple of pageSize and >= it");
  if (s.track_interval == 0) return bad("trackInterval must be > 0");
  if (s.shared_rows && s.max_context_len == 0)
    return bad("sharedRows needs maxContextLen > 0 (the width of a shared row)");
  if (s.shared_rows &&
      s.max_context_len > lim.max_pool_bytes / sizeof(kv_index) / (s.request_rows + 1))
    return bad(
        "the shared rows ((requestRows + 1) x maxContextLen x 4 bytes) exceed the node's "
        "pool limit of " +
        std::to_string(lim.max_pool_bytes) + " bytes");
  if (s.shared_tokens > lim.max_pool_bytes / sizeof(token_id))
    return bad("the token arena (sharedTokens x 4 bytes) exceeds the node's pool limit of " +
               std::to_string(lim.max_pool_bytes) + " bytes");
  if (s.device == device_kind::cpu && s.device_ordinal != 0)
    return bad("deviceOrdinal (" + std::to_string(s.device_ordinal) +
               ") applies to device cuda only; leave it 0 for device cpu");
  if (!(s.hicache_ratio >= 0) || s.hicache_ratio > 1e6)
    return bad("hicacheRatio must be 0 (off) or a multiple of the device pools > 1");
  if (s.host_tier() && s.hicache_bytes == 0 && s.hicache_ratio <= 1)
    return bad("hicacheRatio (" + std::to_string(s.hicache_ratio) +
               ") must be > 1: the host pools must be larger than the device pools");
  if (s.hicache_ssm_bytes > 0 && !s.host_tier())
    return bad("hicacheSsmBytes sizes a host tier: it needs hicacheRatio or hicacheBytes");
  // Overflow-safe pool size checks.
  const std::size_t kv_rows = s.kv_tokens + s.page_size;
  if (s.kv_bytes_per_token != 0 && kv_rows > lim.max_pool_bytes / s.kv_bytes_per_token)
    return bad("kvTokens * kvBytesPerToken exceeds the node's pool limit of " +
               std::to_string(lim.max_pool_bytes) + " bytes");
  if (s.ssm_slot_bytes != 0 && s.ssm_slots + 1 > lim.max_pool_bytes / s.ssm_slot_bytes)
    return bad("ssmSlots * ssmSlotBytes exceeds the node's pool limit of " +
               std::to_string(lim.max_pool_bytes) + " bytes");
  auto v = validate_strategy(strategy_options_of(s));
  if (!v) return v.err();
  if (v->strat != s.strat)
    return bad("strategy " + std::string(to_string(s.strat)) + " is not valid here; use " +
               std::string(to_string(v->strat)));
  if (v->page_size != s.page_size)  // SGLang forces the page size; a node cannot
    return bad("strategy " + std::string(to_string(s.strat)) + " needs pageSize " +
               std::to_string(v->page_size) + " (SGLang forces it; pageSize " +
               std::to_string(s.page_size) + " needs extra_buffer or extra_buffer_lazy)");
  return {};
}

strategy_options strategy_options_of(const instance_spec& s) {
  strategy_options o;
  o.strat = s.strat;
  o.page_size = s.page_size;
  o.overlap = s.overlap;
  o.track_interval = s.track_interval;
  o.model_chunk = s.chunk_size;
  return o;
}

std::string instance_fingerprint(const instance_spec& s) {
  return s.model_id + "|tp" + std::to_string(s.tp_rank) + "/" + std::to_string(s.tp_size) + "|P" +
         std::to_string(s.page_size) + "|kv" + std::to_string(s.kv_tokens) + "x" +
         std::to_string(s.kv_bytes_per_token) + "|ssm" + std::to_string(s.ssm_slots) + "x" +
         std::to_string(s.ssm_slot_bytes) + "|C" + std::to_string(s.chunk_size) + "|" +
         std::string(to_string(s.strat)) +
         (s.device == device_kind::cuda ? "|cuda" + std::to_string(s.device_ordinal)
                                        : std::string()) +
         (s.host_tier()
              ? "|host" + std::to_string(s.hicache_ratio) + "/" + std::to_string(s.hicache_bytes) +
                    (s.hicache_ssm_bytes ? "/ssm" + std::to_string(s.hicache_ssm_bytes)
                                         : std::string()) +
                    "/w" + std::to_string(static_cast<int>(s.hicache_write_policy)) + "/p" +
                    std::to_string(static_cast<int>(s.prefetch_policy)) + "/t" +
                    std::to_string(s.prefetch_threshold) + "/l3" +
                    std::to_string(s.hicache_storage ? 1 : 0)
              : std::string());
}

std::size_t shared_tokens_bytes(const instance_spec& s) {
  return s.shared_tokens * sizeof(token_id);
}

std::size_t shared_rows_bytes(const instance_spec& s) {
  return s.shared_rows ? (s.request_rows + 1) * s.max_context_len * sizeof(kv_index) : 0;
}

cache_config cache_config_of(const instance_spec& s) {
  cache_config c;
  c.kv_tokens = s.kv_tokens;
  c.page_size = s.page_size;
  c.slots = s.ssm_slots;
  c.chunk_size = s.chunk_size;
  c.host_tier.policy = s.hicache_write_policy;  // host sizes: the node sizes the pools
  return c;
}

request_config request_config_of(const instance_spec& s) {
  request_config r;
  r.strat = s.strat;
  r.pp_size = ping_pong_size(s.overlap);
  r.chunk_size = s.chunk_size;
  r.track_interval = s.track_interval;
  r.rows = s.request_rows;
  r.max_context_len = s.max_context_len;
  r.alloc_factor = s.slots_per_request;
  return r;
}

}  // namespace hc
