#pragma once
// Shape checks of KV id lists: is a list one run of consecutive ids, or whole pages? A tree
// node checks its ids once, while they are hot, and keeps whole units as runs (node_kv:
// one stored id per run), which its eviction frees by the run (kv_allocator::free_runs)
// and its match writes back with fill_runs. The checks and the fill work a vector at a time
// with the widest vectors the CPU has (AVX-512, AVX2 or SSE2, picked once at run time), so
// that the check costs the insert little beside the copy it follows.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "actors/common/ids.hpp"

namespace hc {

/// True if ids[i] == ids[0] + i for every i (an empty list is one run).
bool is_one_run(std::span<const kv_index> ids) noexcept;

/// True if ids are whole pages of `page_size` ids in order: ids.size() is a multiple of
/// page_size and each aligned group of page_size ids is some page q's ids qP, qP + 1, ...,
/// qP + P - 1 (q >= 0). REQUIRES: page_size is a power of two.
bool is_whole_pages(std::span<const kv_index> ids, std::size_t page_size) noexcept;

/// The length (>= 1) of the run of consecutive ids that starts `ids` (ids[i] == ids[0] + i):
/// how kv_allocator::free splits a list into runs. Inline: it runs once per run, and runs
/// are short where a pool is fragmented. Four 4-lane vectors (16 ids) a step: wider steps
/// would overshoot the short runs. REQUIRES: ids is not empty.
inline std::size_t leading_run_length(std::span<const kv_index> ids) noexcept {
  using u32x4 = std::uint32_t __attribute__((vector_size(16)));  // GCC and Clang
  // The same 32 bits read unsigned (int32_t and uint32_t may alias).
  const auto* id = reinterpret_cast<const std::uint32_t*>(ids.data());
  const std::uint32_t first = id[0];
  std::size_t j = 1;
  while (j + 16 <= ids.size()) {
    u32x4 want = u32x4{0, 1, 2, 3} + (first + static_cast<std::uint32_t>(j));
    u32x4 off = {};
    for (std::size_t q = 0; q < 4; ++q) {
      u32x4 got;
      std::memcpy(&got, id + j + 4 * q, sizeof got);
      off |= got ^ want;
      want += 4;
    }
    if ((off[0] | off[1] | off[2] | off[3]) != 0) break;
    j += 16;
  }
  while (j < ids.size() && id[j] == first + static_cast<std::uint32_t>(j))
    ++j;
  return j;
}

/// Writes the ids of runs of run_len consecutive ids, run r starting at firsts[r], leaving
/// out the first `skip` ids: out[0, firsts.size() * run_len - skip). REQUIRES: skip <=
/// firsts.size() * run_len; every id fits a kv_index.
void fill_runs(kv_index* out, std::span<const kv_index> firsts, std::size_t run_len,
               std::size_t skip) noexcept;

namespace id_runs_detail {

/// One build of the vector code above, for one instruction set.
struct implementation {
  const char* name;  ///< "avx512f", "avx2" or "baseline" (SSE2 on x86-64)
  /// OR over groups of `group` ids of id[at + i] ^ (id[at] + i) and of id[at] & first_bits:
  /// zero iff every group is a run whose first id has none of first_bits. REQUIRES: n %
  /// group == 0.
  std::uint32_t (*deviation)(const std::uint32_t* id, std::size_t n, std::size_t group,
                             std::uint32_t first_bits) noexcept;
  /// fill_runs on raw ids.
  void (*fill)(std::uint32_t* out, const std::uint32_t* firsts, std::size_t runs,
               std::size_t run_len, std::size_t skip) noexcept;
};

/// The builds this CPU can run, widest first: the first is the one the functions above use.
/// For tests, which check every build against a scalar reference — a host picks the widest
/// it has, so without this only that one would ever run here.
std::span<const implementation> runnable_implementations() noexcept;

}  // namespace id_runs_detail

}  // namespace hc
