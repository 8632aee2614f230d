#include "actors/host_storage/host_pools.hpp"

#include <cassert>
#include <cmath>
#include <new>
#include <string>

namespace hc {

std::uint64_t host_pool_sizes::bytes() const noexcept {
  return static_cast<std::uint64_t>(kv_tokens) * kv_bytes_per_token +
         static_cast<std::uint64_t>(slots) * state_bytes;
}

result<host_pool_sizes> size_host_pools(const host_pool_request& req) {
  const std::size_t p = req.page_size == 0 ? 1 : req.page_size;
  if (req.kv_bytes_per_token == 0 || req.state_bytes == 0)
    return error{errc::invalid_config,
                 "host pools: KV bytes per token and SSM state bytes "
                 "must be positive"};
  host_pool_sizes s;
  s.kv_bytes_per_token = req.kv_bytes_per_token;
  s.state_bytes = req.state_bytes;
  auto d = [](auto v) { return static_cast<double>(v); };
  if (req.host_bytes == 0 && !(req.ratio > 1.0))
    return error{errc::invalid_config,
                 "--hicache-ratio must be greater than 1 (got " + std::to_string(req.ratio) + ")"};
  if (req.host_bytes > 0 && req.ssm_bytes >= req.host_bytes)
    return error{errc::invalid_config, "hicacheSsmBytes (" + std::to_string(req.ssm_bytes) +
                                           ") must be less than hicacheBytes (" +
                                           std::to_string(req.host_bytes) + ")"};
  // The KV pool's bytes from the budget: what the SSM pool's own bytes leave, or the
  // budget split in the device pools' proportion.
  double kv_budget = 0;
  if (req.host_bytes > 0 && req.ssm_bytes > 0) {
    kv_budget = d(req.host_bytes - req.ssm_bytes);
  } else if (req.host_bytes > 0) {
    const double dev_kv = d(req.device_kv_tokens) * d(req.kv_bytes_per_token);
    const double dev_ssm = d(req.device_slots) * d(req.state_bytes);
    const double share = dev_kv + dev_ssm > 0 ? dev_kv / (dev_kv + dev_ssm) : 0.5;
    kv_budget = d(req.host_bytes) * share;
  }
  s.kv_tokens =
      req.host_bytes > 0
          ? static_cast<std::size_t>(kv_budget / d(req.kv_bytes_per_token)) / p * p
          : static_cast<std::size_t>(std::floor(req.ratio * d(req.device_kv_tokens))) / p * p;
  if (req.ssm_bytes > 0)
    s.slots = static_cast<std::size_t>(req.ssm_bytes / req.state_bytes);
  else if (req.host_bytes > 0)
    s.slots = static_cast<std::size_t>((d(req.host_bytes) - kv_budget) / d(req.state_bytes));
  else
    s.slots = static_cast<std::size_t>(std::floor(req.ratio * d(req.device_slots)));
  s.slots += 1;  // the +1 rule of MambaPoolHost
  if (req.ssm_bytes > 0 && s.slots <= req.device_slots)
    return error{errc::invalid_config,
                 "hicacheSsmBytes (" + std::to_string(req.ssm_bytes) + ") gives " +
                     std::to_string(s.slots) + " host SSM slots of " +
                     std::to_string(req.state_bytes) +
                     " bytes; the host pool must be larger than the device's " +
                     std::to_string(req.device_slots) + " slots"};
  // The option that sized the pools, in SGLang's words (the worker's InstanceSpec field).
  const std::string option =
      req.host_bytes > 0 ? "--hicache-size (hicacheBytes)" : "--hicache-ratio (hicacheRatio)";
  if (s.kv_tokens <= req.device_kv_tokens || s.slots <= req.device_slots)
    return error{errc::invalid_config, option + ": host pools (" + std::to_string(s.kv_tokens) +
                                           " tokens, " + std::to_string(s.slots) +
                                           " SSM slots) must be larger than the device pools (" +
                                           std::to_string(req.device_kv_tokens) + " tokens, " +
                                           std::to_string(req.device_slots) + " slots)"};
  // Host ids are 32-bit like the device's (host_value holds kv_index): page 0 is reserved.
  if (s.kv_tokens > max_pool_ids - p || s.slots > max_pool_ids)
    return error{errc::invalid_config, option + ": host pools (" + std::to_string(s.kv_tokens) +
                                           " tokens, " + std::to_string(s.slots) +
                                           " SSM slots) exceed the 32-bit ids: at most " +
                                           std::to_string(max_pool_ids - p) + " tokens and " +
                                           std::to_string(max_pool_ids) + " slots"};
  if (req.host_ram_available > 0 && s.bytes() > req.host_ram_available)
    return error{errc::invalid_config, option + ": host pools need " + std::to_string(s.bytes()) +
                                           " bytes but only " +
                                           std::to_string(req.host_ram_available) +
                                           " bytes of host memory are available"};
  return s;
}

host_pool_request host_pool_request_of(const instance_spec& spec) {
  host_pool_request req;
  req.device_kv_tokens = spec.kv_tokens;
  req.device_slots = spec.ssm_slots;
  req.page_size = spec.page_size;
  req.kv_bytes_per_token = spec.kv_bytes_per_token;
  req.state_bytes = spec.ssm_slot_bytes;
  req.host_bytes = spec.hicache_bytes;
  req.ssm_bytes = spec.hicache_ssm_bytes;
  if (spec.hicache_ratio > 0) req.ratio = spec.hicache_ratio;
  return req;
}

host_bytes heap_host_bytes(std::size_t n) {
  if (n == 0) return {};
  std::shared_ptr<std::byte> p(new std::byte[n](), std::default_delete<std::byte[]>());
  return {p, {p.get(), n}};
}

host_pools::host_pools(const host_pool_sizes& sizes, std::size_t page_size,
                       host_bytes_source source)
    : page_size_(page_size == 0 ? 1 : page_size),
      token_bytes_(sizes.kv_bytes_per_token),
      state_bytes_(sizes.state_bytes),
      tokens_(sizes.kv_tokens + page_size_),  // + the unused page 0
      slots_(sizes.slots),
      kv_(source(tokens_ * token_bytes_)),
      states_(source(slots_ * state_bytes_)) {
  if (kv_.bytes.size() != tokens_ * token_bytes_ || states_.bytes.size() != slots_ * state_bytes_)
    throw std::bad_alloc();  // a source that gave less than asked
}

std::span<std::byte> host_pools::kv(kv_index first, std::size_t tokens) {
  assert(first >= 0 && static_cast<std::size_t>(first) + tokens <= tokens_);
  return kv_.bytes.subspan(static_cast<std::size_t>(first) * token_bytes_, tokens * token_bytes_);
}

std::span<std::byte> host_pools::state(slot_id s) {
  assert(s >= 1 && static_cast<std::size_t>(s) <= slots_);
  return states_.bytes.subspan(static_cast<std::size_t>(s - 1) * state_bytes_, state_bytes_);
}

}  // namespace hc
