#pragma once
// An instance spec checked against the node's limits and SGLang's strategy rules, and the
// engine configs derived from it: the cache instance's and the session's request table's.
// Pure.

#include <cstddef>
#include <string>

#include "actors/common/instance_spec.hpp"
#include "actors/common/status.hpp"
#include "actors/radix_cache/radix_cache.hpp"
#include "actors/scheduler/request_manager.hpp"
#include "actors/scheduler/sizing.hpp"

namespace hc {

/// Limits the node enforces on specs from outside.
struct spec_limits {
  std::size_t max_pool_bytes = std::size_t{64} << 30;  ///< per pool. Default: 64 GiB
  std::size_t max_rows = 1 << 20;
  /// Most SSM slots of an instance. A slot is a whole SSM state (hundreds of KiB to tens of
  /// MiB on a device), so real pools hold thousands; the node's own bookkeeping costs ~5
  /// bytes a slot whatever the slot's size, so a spec with billions (a byte count given
  /// as a slot count) would take gigabytes and tens of seconds to open. Default: 2^24.
  std::size_t max_ssm_slots = std::size_t{1} << 24;
};

/// Rejects invalid or oversize specs with invalid_config naming the option(s).
status validate(const instance_spec& s, const spec_limits& lim = {});

/// The strategy rules' options that `s` carries (strategy, page size, overlap, track
/// interval; its chunk size C as the model's chunk). What it does not carry keeps
/// strategy_options' defaults: the kernel family (FLA), no speculative decoding, no PD role.
strategy_options strategy_options_of(const instance_spec& s);

/// Instances are shared by sessions whose specs agree on everything but rows/namespace.
std::string instance_fingerprint(const instance_spec& s);

cache_config cache_config_of(const instance_spec& s);
/// The request config of a session of `s`; shared_rows (memory the node owns) is left empty.
request_config request_config_of(const instance_spec& s);
/// Bytes of the session's shared request rows: (request_rows + 1) x max_context_len KV ids;
/// 0 unless s.shared_rows.
std::size_t shared_rows_bytes(const instance_spec& s);
/// Bytes of the session's token arena: shared_tokens int32 tokens; 0 when it has none.
std::size_t shared_tokens_bytes(const instance_spec& s);

}  // namespace hc
