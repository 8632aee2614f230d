#pragma once
// Data operations the index plane hands to the forward stream, to run in this order
// before the next forward pass that consumes them (architecture.md §1, rules 2-4):
//   1. snapshot copies (no_buffer donation: working slot -> fresh tree slot),
//   2. clears of freshly allocated working slots,
//   3. copy-on-write pairs (tree slot -> request working slot).

#include <utility>
#include <vector>

#include "actors/common/ids.hpp"

namespace hc {

struct forward_ops {
  std::vector<slot_copy> snapshots;
  std::vector<slot_id> clears;
  std::vector<slot_copy> cows;
  bool empty() const noexcept { return snapshots.empty() && clears.empty() && cows.empty(); }
};

}  // namespace hc
