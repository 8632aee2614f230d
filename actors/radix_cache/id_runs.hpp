#pragma once
// Shape checks of KV id lists: is a list one run of consecutive ids, or whole pages? A tree
// node checks its ids once, while they are hot, so that evicting it later can free them
// without reading them (kv_allocator::free_units). The checks read every id, a vector at
// a time with the widest vectors the CPU has (AVX-512, AVX2 or SSE2, picked once at run
// time), so that the check costs the insert little beside the copy it follows.

#include <cstddef>
#include <span>

#include "actors/common/ids.hpp"

namespace hc {

/// True if ids[i] == ids[0] + i for every i (an empty list is one run).
bool is_one_run(std::span<const kv_index> ids) noexcept;

/// True if ids are whole pages of `page_size` ids in order: ids.size() is a multiple of
/// page_size and each aligned group of page_size ids is some page q's ids qP, qP + 1, ...,
/// qP + P - 1 (q >= 0). REQUIRES: page_size is a power of two.
bool is_whole_pages(std::span<const kv_index> ids, std::size_t page_size) noexcept;

}  // namespace hc
