#pragma once
// The `sglang-mamba-trace` v1 format (spec/trace-format.md): header, token generator and
// parsed operations. Reading accepts plain or gzip'd JSONL.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"

namespace hc::replay {

/// The `config` header (line 1).
struct trace_config {
  std::size_t page_size = 1;
  std::string strategy = "no_buffer";
  int ping_pong_size = 2;
  std::size_t chunk_size = 64;
  std::size_t track_interval = 256;
  std::size_t state_per_req = 3;
  std::size_t kv_pool_tokens = 0;
  std::size_t mamba_pool_slots = 0;
  std::size_t req_pool_rows = 0;
  std::size_t max_context_len = 0;
  // tokens.generator = splitmix64-v1
  std::uint64_t seed = 0;
  std::uint64_t vocab = 0;
  std::size_t sys_len = 0;
  std::size_t sys_groups = 1;
  std::vector<std::size_t> conv_lengths;
  nlohmann::json self_test;
};

enum class op_kind {
  match,
  lock,
  unlock,
  alloc_req,
  alloc_kv,
  track,
  cache_unfinished,
  finish,
  evict,
  check
};

/// One operation line.
struct trace_op {
  op_kind kind = op_kind::check;
  std::string name;         ///< the "op" string
  std::size_t line = 0;     ///< 1-based line number in the file
  std::int64_t index = -1;  ///< "i"
  std::string phase;
  std::uint64_t req = 0;
  std::size_t conv = 0, input_len = 0, start = 0, n = 0, seqlen = 0, output_len = 0;
  std::size_t num_tokens = 0, mamba_num = 0;
  bool flip = false, sanity = false;
  nlohmann::json expect;  ///< null if the line has none
};

struct trace {
  trace_config config;
  std::vector<trace_op> ops;
};

/// Reads and validates a whole trace; errors name the line and the problem. A path of "-"
/// reads standard input (plain or gzip, as a file).
result<trace> read_trace(const std::string& path);

/// How messages name the trace at `path`: the path, or <stdin> for "-".
inline std::string trace_name(const std::string& path) {
  return path == "-" ? std::string("<stdin>") : path;
}

/// splitmix64-v1 token generator of the trace (trace-format.md §1).
class token_generator {
 public:
  explicit token_generator(const trace_config& cfg) : cfg_(cfg) {}
  static std::uint64_t splitmix64(std::uint64_t x) noexcept;
  token_id token(std::uint64_t stream, std::uint64_t i) const noexcept;
  /// Tokens [0, n) of conversation c.
  std::vector<token_id> conversation(std::size_t c, std::size_t n) const;
  /// Checks the header's self_test values; error names the first mismatch.
  status self_test() const;

 private:
  const trace_config& cfg_;
};

}  // namespace hc::replay
