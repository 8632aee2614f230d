#pragma once
// The memory floor of a replayed trace's ops (issue 19): the least a cache must move to give
// the caller what it asked for, timed beside each op in the same run.
//
// An op's bytes (floor_work): a match reads the query and the cached key up to where they
// part and writes the prefix's KV ids for the caller; an insert (cache_unfinished, finish)
// reads the whole key against the cached one, writes the new tail's key and ids, and
// cache_unfinished also hands the request's new prefix ids back. The floor is a memcmp of
// the compared tokens, a memcpy of the new key tokens and ids, and a memcpy of the ids
// handed back — nothing else a cache does (walk, locks, recency, allocation) is counted.
//
// The bytes live in shadow buffers laid out as the tree holds them — one copy of each system
// prompt per group, one buffer per conversation past it — so they have the tree's footprint.
// Each op's floor is timed twice in a row:
//   * first: the shadows as the trace left them. They are touched when the tree's bytes are
//     (a match's floor reads them; finish reads the conversation's whole key and writes its
//     ids), so they are about as cold as the tree's — the comparison of hcbench's §2.1.
//   * warm: at once again, every byte now in the nearest cache: the least any cache could
//     take for these bytes on this machine, and a ratio against it errs against the cache.
// The destination of the ids handed back is one buffer allocated once (no allocation counted).
//
// Not thread-safe; one per replay run. REQUIRES: the trace's config passed read_trace().
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "tools/replay/trace.hpp"

namespace hc::replay {

/// What an op must move, in tokens of the conversation's key (each token: 4 B of key, 4 B of
/// KV id).
struct floor_work {
  std::size_t compared = 0;  ///< query[0, compared) read against the cached key
  std::size_t written = 0;   ///< key and ids [compared - written, compared) written (new tail)
  std::size_t copied = 0;    ///< ids [0, copied) copied out for the caller
};

struct floor_sample {
  floor_work work;             ///< what was timed (the counts as clamped)
  std::uint64_t first_ns = 0;  ///< the shadows as the trace left them
  std::uint64_t warm_ns = 0;   ///< the same again at once, all in cache
};

class op_floor {
 public:
  explicit op_floor(const trace_config& cfg);

  /// Times `w` for conversation `conv`. The counts are clamped to the query and the
  /// conversation (written to compared). A conversation the trace does not have: all zero.
  floor_sample time(std::size_t conv, std::span<const token_id> query, floor_work w);

  /// The tree touched conversation `conv`'s first `len` tokens of key and ids (finish):
  /// read the shadow key and write the shadow ids, untimed.
  void touch(std::size_t conv, std::size_t len);

 private:
  struct shadow {
    std::vector<token_id> key;
    std::vector<kv_index> ids;
  };
  /// The conversation's shadow past the system prompt (built on first use).
  shadow& conv_shadow(std::size_t conv);
  /// One pass of w's compares and copies (the caller reads the clock around it).
  void pass(const shadow& sys, shadow& own, std::span<const token_id> query, const floor_work& w);

  trace_config cfg_;
  token_generator gen_;
  std::vector<shadow> sys_;    ///< per system-prompt group: tokens [0, sys_len)
  std::vector<shadow> conv_;   ///< per conversation: tokens [sys_len, length)
  std::vector<kv_index> out_;  ///< destination of the ids handed back, allocated once
  std::vector<kv_index> row_;  ///< source of the new ids (the request's row), allocated once
  /// Folds in every compare's result and every touched token (a stored member, so the
  /// compiler cannot drop the reads; its value means nothing).
  std::int64_t sink_ = 0;
};

}  // namespace hc::replay
