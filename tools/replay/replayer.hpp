#pragma once
// Executes a trace against a fresh in-process cache (radix_cache + request_manager) and
// produces, per operation, the same result fields as the trace's `expect`
// (spec/trace-format.md §4). Timing covers only the cache call of each op.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/radix_cache/radix_cache.hpp"
#include "actors/scheduler/request_manager.hpp"
#include "tools/replay/trace.hpp"

namespace hc::replay {

/// Raw results of one op (converted to JSON only when printed or checked).
struct outcome {
  std::string error;              ///< non-empty if the cache rejected the op
  std::vector<kv_index> indices;  ///< for kv_crc32
  bool has_crc = false;
  std::optional<std::int64_t> prefix_len, node_mamba, req_mamba, row, keep_slot, protected_len,
      tokens_evicted, mamba_evicted, tree_tokens, tree_mamba;
  bool has_branching = false;
  std::optional<std::size_t> branching;
  bool has_pingpong = false;
  std::optional<std::vector<std::int64_t>> pingpong;
  std::optional<bool> sanity;
  std::string sanity_detail;
  std::size_t kv_avail = 0, mamba_avail = 0, req_avail = 0;
  std::size_t full_evictable = 0, full_protected = 0, mamba_evictable = 0, mamba_protected = 0;
};

/// First field where a result differs from `expect`.
struct divergence {
  std::size_t line = 0;
  std::int64_t index = -1;
  std::string op, field;
  nlohmann::json expected, actual;
  std::string describe() const;
};

/// zlib CRC32 of the little-endian int64 encoding of the indices (0 for none).
std::uint32_t kv_crc32(std::span<const kv_index> indices);

class replayer {
 public:
  /// REQUIRES: the config passed read_trace(). Builds empty pools of the trace's sizes.
  explicit replayer(const trace_config& cfg);

  /// Runs one op; returns nanoseconds spent inside the cache call.
  std::uint64_t execute(const trace_op& op, outcome& out);

  /// The result line of an op: {"i", "op", <expect fields>, ["error"]}.
  static nlohmann::json to_json(const trace_op& op, const outcome& out);
  /// Compares a result line with the op's expect; nullopt if every expected field agrees.
  static std::optional<divergence> compare(const trace_op& op, const nlohmann::json& result);

  radix_cache& cache() noexcept { return *cache_; }
  request_manager& requests() noexcept { return *mgr_; }

 private:
  const std::vector<token_id>& conv_tokens(std::size_t c);
  void fill_state(outcome& out) const;
  /// The live request of op and its conversation's tokens; false (error set) if unknown.
  bool lookup(const trace_op& op, outcome& out, const request_record*& rec,
              const std::vector<token_id>*& conv);

  trace_config cfg_;
  token_generator gen_;
  std::unique_ptr<radix_cache> cache_;
  std::unique_ptr<request_manager> mgr_;
  std::vector<std::vector<token_id>> conv_cache_;
  std::unordered_map<std::uint64_t, std::size_t> req_conv_;
};

}  // namespace hc::replay
