#pragma once
// Executes a trace against a fresh cache (in process, or a node over RPC) and produces, per
// operation, the same result fields as the trace's `expect` (spec/trace-format.md §4). Timing: see
// replay_backend::run.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/replay/op_floor.hpp"
#include "tools/replay/replay_backend.hpp"
#include "tools/replay/trace.hpp"

namespace hc::replay {

/// Raw results of one op (converted to JSON only when printed or checked).
struct outcome {
  std::string error;              ///< non-empty if the cache rejected the op
  std::vector<kv_index> indices;  ///< for kv_crc32
  bool has_crc = false;
  std::size_t kv_matched = 0;  ///< match: tokens the KV walk matched (not in the JSON)
  /// The op's memory floor, timed right after it (enable_floors; match, cache_unfinished
  /// and finish without error only).
  std::optional<floor_sample> floor;
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
  /// REQUIRES: the config passed read_trace(). Without a backend, builds an in-process
  /// cache with empty pools of the trace's sizes.
  explicit replayer(const trace_config& cfg, std::unique_ptr<replay_backend> backend = nullptr);

  /// Runs one op; returns the nanoseconds the backend reports for it.
  std::uint64_t execute(const trace_op& op, outcome& out);
  /// From now on, times each match / cache_unfinished / finish's memory floor right after
  /// the op (outcome::floor; op_floor.hpp), on shadow buffers kept beside the cache. Call
  /// before the first op.
  void enable_floors();

  /// The result line of an op: {"i", "op", <expect fields>, ["error"]}.
  static nlohmann::json to_json(const trace_op& op, const outcome& out);
  /// Compares a result line with the op's expect; nullopt if every expected field agrees.
  static std::optional<divergence> compare(const trace_op& op, const nlohmann::json& result);

  replay_backend& backend() noexcept { return *backend_; }
  /// Hands the backend over (the replayer cannot execute afterwards): to measure or
  /// destroy it apart from the replayer's own buffers.
  std::unique_ptr<replay_backend> release_backend() noexcept { return std::move(backend_); }

 private:
  /// What the replayer knows of a live request (it never looks into the cache).
  struct request_view {
    std::size_t conv = 0;
    std::size_t input_len = 0;
    std::size_t tokens_sent = 0;
    std::size_t cached = 0;  ///< tokens of its key the tree held after its last op (floors)
  };
  const std::vector<token_id>& conv_tokens(std::size_t c);
  /// Builds the op's commands; false (error set) if the op cannot be sent.
  bool build(const trace_op& op, outcome& out, std::vector<command>& cmds);
  void convert(const trace_op& op, const std::vector<command_result>& results, outcome& out);
  /// Times the floor of an op that ran without error; `before` is its request as the op
  /// found it (nullopt for a match, which creates it).
  void time_floor(const trace_op& op, const std::optional<request_view>& before, outcome& out);
  /// The op's fields from the body of its last command; throws std::bad_variant_access
  /// when the body is of another kind.
  void read_body(const trace_op& op, const command_result& r, outcome& out) const;

  trace_config cfg_;
  token_generator gen_;
  std::unique_ptr<replay_backend> backend_;
  std::vector<std::vector<token_id>> conv_cache_;
  std::unordered_map<std::uint64_t, request_view> reqs_;
  std::vector<command> cmds_;
  std::vector<command_result> results_;
  std::unique_ptr<op_floor> floor_;  ///< set by enable_floors()
};

}  // namespace hc::replay
