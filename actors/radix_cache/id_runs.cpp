#include "actors/radix_cache/id_runs.hpp"

#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>

namespace hc {
namespace {

// Vectors of 16, 8 and 4 lanes: each target's copy below uses its native width (a wider
// vector than the target has is split by the compiler through the stack).
using u32x16 = std::uint32_t __attribute__((vector_size(64)));  // GCC and Clang
using u32x8 = std::uint32_t __attribute__((vector_size(32)));
using u32x4 = std::uint32_t __attribute__((vector_size(16)));

/// For each group of `group` ids: the OR of id[at + i] ^ (id[at] + i) over the group and of
/// id[at] & first_bits. Zero iff every group is a run whose first id has none of first_bits.
/// REQUIRES: n % group == 0. V is a vector of L lanes; inlined into each target's copy
/// below, whose instruction set the vector code is then compiled for.
template <class V, std::size_t L>
[[gnu::always_inline]] inline std::uint32_t deviation(const std::uint32_t* id, std::size_t n,
                                                      std::size_t group,
                                                      std::uint32_t first_bits) noexcept {
  std::uint32_t bad = 0;
  V off = {};
  V lanes = {};
  for (std::size_t i = 0; i < L; ++i)
    lanes[i] = static_cast<std::uint32_t>(i);
  for (std::size_t at = 0; at < n; at += group) {
    const std::uint32_t first = id[at];
    bad |= first & first_bits;
    V want = lanes + first;
    std::size_t j = 0;
    // Four vectors a step, on four accumulators (no chain of dependent ORs between them).
    if (group >= 4 * L) {
      V o1 = {}, o2 = {}, o3 = {};
      const auto step = static_cast<std::uint32_t>(4 * L);
      for (; j + 4 * L <= group; j += 4 * L) {
        V g0, g1, g2, g3;
        std::memcpy(&g0, id + at + j, sizeof g0);
        std::memcpy(&g1, id + at + j + L, sizeof g1);
        std::memcpy(&g2, id + at + j + 2 * L, sizeof g2);
        std::memcpy(&g3, id + at + j + 3 * L, sizeof g3);
        off |= g0 ^ want;
        o1 |= g1 ^ (want + static_cast<std::uint32_t>(L));
        o2 |= g2 ^ (want + static_cast<std::uint32_t>(2 * L));
        o3 |= g3 ^ (want + static_cast<std::uint32_t>(3 * L));
        want += step;
      }
      off |= o1 | o2 | o3;
    }
    for (; j + L <= group; j += L) {
      V got;
      std::memcpy(&got, id + at + j, sizeof got);
      off |= got ^ want;
      want += static_cast<std::uint32_t>(L);
    }
    for (; j < group; ++j)
      bad |= id[at + j] ^ (first + static_cast<std::uint32_t>(j));
  }
  for (std::size_t i = 0; i < L; ++i)
    bad |= off[i];
  return bad;
}

/// The ids of runs of run_len consecutive ids from firsts[r], less the first `skip`, into
/// out, a vector of L lanes at a time.
template <class V, std::size_t L>
[[gnu::always_inline]] inline void fill(std::uint32_t* out, const std::uint32_t* firsts,
                                        std::size_t runs, std::size_t run_len,
                                        std::size_t skip) noexcept {
  V lanes = {};
  for (std::size_t i = 0; i < L; ++i)
    lanes[i] = static_cast<std::uint32_t>(i);
  std::size_t r = skip / run_len;
  std::size_t from = skip % run_len;
  for (; r < runs; ++r, from = 0) {
    const std::uint32_t first = firsts[r] + static_cast<std::uint32_t>(from);
    const std::size_t n = run_len - from;
    V v = lanes + first;
    std::size_t j = 0;
    for (; j + L <= n; j += L) {
      std::memcpy(out + j, &v, sizeof v);
      v += static_cast<std::uint32_t>(L);
    }
    for (; j < n; ++j)
      out[j] = first + static_cast<std::uint32_t>(j);
    out += n;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
[[gnu::target("avx512f")]] std::uint32_t deviation_avx512(const std::uint32_t* id, std::size_t n,
                                                          std::size_t group,
                                                          std::uint32_t first_bits) noexcept {
  return deviation<u32x16, 16>(id, n, group, first_bits);
}
[[gnu::target("avx2")]] std::uint32_t deviation_avx2(const std::uint32_t* id, std::size_t n,
                                                     std::size_t group,
                                                     std::uint32_t first_bits) noexcept {
  return deviation<u32x8, 8>(id, n, group, first_bits);
}
[[gnu::target("avx512f")]] void fill_avx512(std::uint32_t* out, const std::uint32_t* firsts,
                                            std::size_t runs, std::size_t run_len,
                                            std::size_t skip) noexcept {
  fill<u32x16, 16>(out, firsts, runs, run_len, skip);
}
[[gnu::target("avx2")]] void fill_avx2(std::uint32_t* out, const std::uint32_t* firsts,
                                       std::size_t runs, std::size_t run_len,
                                       std::size_t skip) noexcept {
  fill<u32x8, 8>(out, firsts, runs, run_len, skip);
}
#endif
void fill_base(std::uint32_t* out, const std::uint32_t* firsts, std::size_t runs,
               std::size_t run_len, std::size_t skip) noexcept {
  fill<u32x4, 4>(out, firsts, runs, run_len, skip);
}

std::uint32_t deviation_base(const std::uint32_t* id, std::size_t n, std::size_t group,
                             std::uint32_t first_bits) noexcept {
  return deviation<u32x4, 4>(id, n, group, first_bits);
}

/// The builds the CPU runs, widest first (the baseline, SSE2 on x86-64, always runs).
struct runnable {
  id_runs_detail::implementation impl[3];
  std::size_t n = 0;
  runnable() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) impl[n++] = {"avx512f", deviation_avx512, fill_avx512};
    if (__builtin_cpu_supports("avx2")) impl[n++] = {"avx2", deviation_avx2, fill_avx2};
#endif
    impl[n++] = {"baseline", deviation_base, fill_base};
  }
};

const runnable& runnables() noexcept {
  static const runnable r;
  return r;
}

std::uint32_t deviation_of(std::span<const kv_index> ids, std::size_t group,
                           std::uint32_t first_bits) noexcept {
  static const auto fn = runnables().impl[0].deviation;
  // The same 32 bits read unsigned (int32_t and uint32_t may alias); unsigned, so no id
  // overflows.
  return fn(reinterpret_cast<const std::uint32_t*>(ids.data()), ids.size(), group, first_bits);
}

}  // namespace

bool is_one_run(std::span<const kv_index> ids) noexcept {
  return ids.empty() || deviation_of(ids, ids.size(), 0) == 0;
}

bool is_whole_pages(std::span<const kv_index> ids, std::size_t page_size) noexcept {
  assert(std::has_single_bit(page_size));
  if (ids.size() % page_size != 0) return false;
  if (ids.empty()) return true;
  // A page's first id: a multiple of page_size, not negative.
  const auto first_bits = static_cast<std::uint32_t>(page_size - 1) | 0x80000000u;
  return deviation_of(ids, page_size, first_bits) == 0;
}

void fill_runs(kv_index* out, std::span<const kv_index> firsts, std::size_t run_len,
               std::size_t skip) noexcept {
  assert(run_len > 0 && skip <= firsts.size() * run_len);
  static const auto fn = runnables().impl[0].fill;
  // Unsigned, as in deviation_of: the same bits.
  fn(reinterpret_cast<std::uint32_t*>(out), reinterpret_cast<const std::uint32_t*>(firsts.data()),
     firsts.size(), run_len, skip);
}

namespace id_runs_detail {

std::span<const implementation> runnable_implementations() noexcept {
  const runnable& r = runnables();
  return {r.impl, r.n};
}

}  // namespace id_runs_detail

}  // namespace hc
