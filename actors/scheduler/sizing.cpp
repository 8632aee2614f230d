#include "actors/scheduler/sizing.hpp"

#include <algorithm>
#include <cmath>

#include "actors/scheduler/tracking.hpp"

namespace hc {
namespace {

error bad(std::string msg) {
  return {errc::invalid_config, std::move(msg)};
}

}  // namespace

result<validated_strategy> validate_strategy(const strategy_options& o) {
  validated_strategy v;
  v.strat = o.strat;
  v.page_size = o.page_size;
  v.overlap = o.overlap;
  v.radix_cache = o.radix_cache;
  if (o.page_size == 0) return bad("--page-size must be >= 1");
  if (o.track_interval == 0) return bad("--mamba-track-interval must be >= 1");

  // PD decode without a decode-side radix cache runs chunk cache => no_buffer (§6).
  if (o.pd == pd_mode::decode && !o.decode_radix_cache) {
    v.radix_cache = false;
    if (uses_track_buffer(v.strat)) {
      v.warnings.push_back(
          "decode node without --disaggregation-decode-enable-radix-cache uses "
          "chunk cache: --mamba-scheduler-strategy " +
          std::string(to_string(v.strat)) + " rewritten to no_buffer");
      v.strat = strategy::no_buffer;
    }
  }
  if (o.pd == pd_mode::decode && o.decode_radix_cache && o.spec_draft_tokens > 0)
    return bad("--disaggregation-decode-enable-radix-cache does not support speculative decoding");
  if (o.pd == pd_mode::decode && o.decode_radix_cache && v.strat == strategy::extra_buffer_lazy)
    return bad(
        "--mamba-scheduler-strategy extra_buffer_lazy is unsupported with "
        "--disaggregation-decode-enable-radix-cache (the decode pool runs eager ping-pong)");

  switch (v.strat) {
    case strategy::no_buffer:
      if (v.radix_cache) {
        if (v.page_size != 1) {
          v.warnings.push_back(
              "--mamba-scheduler-strategy no_buffer requires --page-size 1: page size " +
              std::to_string(v.page_size) + " forced to 1");
          v.page_size = 1;
        }
        if (o.spec_draft_tokens > 0)
          return bad(
              "--mamba-scheduler-strategy no_buffer with radix cache does not support "
              "speculative decoding (--speculative-num-draft-tokens); use extra_buffer "
              "or --disable-radix-cache");
        if (v.overlap) {
          v.warnings.push_back(
              "--mamba-scheduler-strategy no_buffer with radix cache disables "
              "overlap scheduling");
          v.overlap = false;
        }
      }
      break;
    case strategy::extra_buffer:
    case strategy::extra_buffer_lazy: {
      const std::string name(to_string(v.strat));
      if (!v.radix_cache)
        return bad("--mamba-scheduler-strategy " + name +
                   " requires the radix cache (remove "
                   "--disable-radix-cache)");
      if (o.track_interval % v.page_size != 0)
        return bad("--mamba-track-interval " + std::to_string(o.track_interval) +
                   " must be a multiple of --page-size " + std::to_string(v.page_size));
      if (v.strat == strategy::extra_buffer_lazy) {
        if (!v.overlap)
          return bad(
              "--mamba-scheduler-strategy extra_buffer_lazy requires overlap scheduling "
              "(remove --disable-overlap-schedule)");
        if (o.spec_draft_tokens > 0)
          return bad(
              "--mamba-scheduler-strategy extra_buffer_lazy does not support speculative "
              "decoding (--speculative-num-draft-tokens)");
      }
      if (o.spec_draft_tokens > 0 && o.track_interval < o.spec_draft_tokens)
        return bad("--mamba-track-interval " + std::to_string(o.track_interval) +
                   " must be >= --speculative-num-draft-tokens " +
                   std::to_string(o.spec_draft_tokens));
      if (o.backend == chunk_convention::mamba2) {
        if (o.conv_kernel == 0 || o.conv_kernel - 1 >= o.model_chunk)
          return bad("Mamba2 backend requires conv kernel - 1 (" +
                     std::to_string(o.conv_kernel == 0 ? 0 : o.conv_kernel - 1) +
                     ") < mamba_chunk_size (" + std::to_string(o.model_chunk) + ")");
        if (o.track_interval < o.model_chunk)
          return bad("Mamba2 backend requires --mamba-track-interval (" +
                     std::to_string(o.track_interval) + ") >= mamba_chunk_size (" +
                     std::to_string(o.model_chunk) + ")");
      }
      v.pp_size = ping_pong_size(v.overlap);
      break;
    }
  }
  auto c = mamba_cache_chunk_size(o.model_chunk, v.page_size);
  if (!c)
    return bad("mamba_chunk_size " + std::to_string(o.model_chunk) + " and --page-size " +
               std::to_string(v.page_size) + " must divide one another");
  v.chunk_size = *c;
  return v;
}

result<std::size_t> mamba_ratio(strategy s, bool radix_cache, bool overlap) {
  if (!radix_cache) return std::size_t{1};
  switch (s) {
    case strategy::no_buffer:
      return std::size_t{3};
    case strategy::extra_buffer:
      return std::size_t{overlap ? 5u : 4u};
    case strategy::extra_buffer_lazy:
      if (!overlap) return bad("extra_buffer_lazy without overlap scheduling has no slot ratio");
      return std::size_t{4};
  }
  return std::size_t{3};
}

std::size_t alloc_factor(strategy s, bool radix_cache) noexcept {
  if (!radix_cache) return 1;
  return s == strategy::extra_buffer_lazy ? 2 : 3;
}

result<slot_sizing> size_slot_pool(const slot_budget& b, std::size_t ratio, bool radix_cache) {
  slot_sizing out;
  const std::size_t dp = std::max<std::size_t>(1, b.dp_size);
  if (b.explicit_slots) {
    out.slots = *b.explicit_slots / dp;
  } else if (!radix_cache && b.max_running_requests) {
    out.slots = *b.max_running_requests / dp;
  } else {
    if (b.bytes_per_slot == 0) return bad("bytes per SSM slot must be > 0");
    if (b.full_memory_ratio <= 0) return bad("--mamba-full-memory-ratio must be > 0");
    const double r = b.full_memory_ratio;
    const double budget = static_cast<double>(b.rest_bytes) * r / (1.0 + r);
    double per = static_cast<double>(b.bytes_per_slot);
    if (b.spec_draft_tokens > 0)
      per *= 1.0 + static_cast<double>(b.spec_draft_tokens) / static_cast<double>(ratio);
    out.slots = static_cast<std::size_t>(std::floor(budget / per));
  }
  if (out.slots == 0)
    return bad(
        "the SSM pool gets 0 slots: raise the memory budget, --max-mamba-cache-size or "
        "--mamba-full-memory-ratio");
  std::size_t used = out.slots * b.bytes_per_slot;
  if (b.spec_draft_tokens > 0)
    used += b.bytes_per_slot *
            std::min(b.max_running_requests.value_or(out.slots / ratio), out.slots / ratio) *
            b.spec_draft_tokens;
  out.kv_bytes = b.rest_bytes > used ? b.rest_bytes - used : 0;
  return out;
}

result<std::size_t> admission_bound(std::size_t token_bound, std::size_t slots, std::size_t ratio) {
  const std::size_t by_slots = ratio == 0 ? 0 : slots / ratio;
  const std::size_t n = std::min(token_bound, by_slots);
  if (n == 0)
    return bad("max_running_requests would be 0: " + std::to_string(slots) + " SSM slots / ratio " +
               std::to_string(ratio) + ", token bound " + std::to_string(token_bound));
  return n;
}

pd_decode_sizing size_pd_decode(const pd_decode_inputs& in) {
  pd_decode_sizing s;
  s.pre_alloc = in.max_running_requests <= 32 ? 2 * in.max_running_requests : in.pre_alloc_env;
  s.request_rows = in.max_running_requests + s.pre_alloc;
  const std::size_t pp = static_cast<std::size_t>(ping_pong_size(in.overlap));
  s.slots_per_req = 1 + (uses_track_buffer(in.strat) ? pp : 0);
  s.max_slots_needed = s.request_rows * s.slots_per_req;
  if (in.configured_slots) {
    s.slots = std::max(*in.configured_slots, s.max_slots_needed);
    if (s.slots > *in.configured_slots)
      s.warnings.push_back(
          "--max-mamba-cache-size " + std::to_string(*in.configured_slots) + " raised to " +
          std::to_string(s.slots) +
          " = (max_running_requests + pre_alloc) * slots_per_req on the decode node");
  } else {
    s.slots = s.max_slots_needed;
  }
  return s;
}

}  // namespace hc
