// The toy forward batch: its bounds check and its host run (gpu/toy_forward.hpp).
#include "gpu/toy_forward.hpp"

#include <algorithm>
#include <iterator>
#include <string>

namespace hc::toy {
namespace {

error bad(const std::string& what) {
  return error{errc::invalid_argument, "toy forward batch: " + what};
}

bool slot_ok(std::int32_t s, std::size_t slots) {
  return s >= 0 && static_cast<std::size_t>(s) < slots;
}

}  // namespace

status check_shape(const shape& s) {
  if (s.conv_kernel < 1 || s.conv_kernel > max_conv_kernel)
    return bad("conv kernel " + std::to_string(s.conv_kernel) + " is outside 1.." +
               std::to_string(max_conv_kernel));
  if (s.lanes == 0 || s.ssm_layers == 0) return bad("a slot needs layers and lanes");
  return {};
}

status forward_batch::check(const shape& s, std::size_t kv_rows_total,
                            std::size_t slots_total) const {
  if (status st = check_shape(s); !st) return st;
  if (positions.size() != tokens.size() || kv_rows.size() != tokens.size())
    return bad("tokens, positions and KV rows differ in number");
  for (std::int32_t r : kv_rows)
    if (r < 0 || static_cast<std::size_t>(r) >= kv_rows_total)
      return bad("KV row " + std::to_string(r) + " is outside the pool's " +
                 std::to_string(kv_rows_total));
  for (const scan_item& it : items) {
    if (!slot_ok(it.working, slots_total) ||
        (it.final_copy != -1 && !slot_ok(it.final_copy, slots_total)))
      return bad("slot " + std::to_string(it.working) + " / " + std::to_string(it.final_copy) +
                 " is outside the pool's " + std::to_string(slots_total));
    if (it.first_token > tokens.size() || it.n_tokens > tokens.size() - it.first_token)
      return bad("an item's tokens run past the batch's");
  }
  for (const capture& c : captures)
    if (c.item >= items.size() || c.count > items[c.item].n_tokens || !slot_ok(c.dst, slots_total))
      return bad("a capture names no item, a count past its tokens or a slot outside the pool");
  // The kernels run items, lanes and fixes in parallel: no slot may be written by two of
  // them (a capture and a fix may share one: lanes and conv windows, one after the other).
  std::vector<std::int32_t> scanned, captured, fixed;
  for (const scan_item& it : items) {
    scanned.push_back(it.working);
    if (it.final_copy != -1) scanned.push_back(it.final_copy);
  }
  for (const capture& c : captures)
    captured.push_back(c.dst);
  for (const conv_fix& f : fixes)
    fixed.push_back(f.dst);
  auto repeats = [](std::vector<std::int32_t> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) != v.end();
  };
  auto meets = [](std::vector<std::int32_t> a, std::vector<std::int32_t> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<std::int32_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    return !both.empty();
  };
  if (repeats(kv_rows)) return bad("two tokens write one KV row");
  if (repeats(scanned) || repeats(captured) || repeats(fixed) || meets(scanned, captured) ||
      meets(scanned, fixed))
    return bad("a slot is written by two items, captures or fixes, or both scanned and captured");
  const std::size_t k1 = s.conv_kernel - 1;
  for (const conv_fix& f : fixes)
    if (!slot_ok(f.dst, slots_total) || f.values > conv_values.size() ||
        k1 > conv_values.size() - f.values)
      return bad("a conv fix names a slot outside the pool or values past the batch's");
  return {};
}

void run_on_host(const shape& s, const forward_batch& b, std::span<std::byte> kv,
                 std::span<std::byte> ssm) {
  auto* kvp = reinterpret_cast<unsigned char*>(kv.data());
  auto* sp = reinterpret_cast<unsigned char*>(ssm.data());
  const std::size_t words = s.kv_layers * s.layer_words();
  for (std::size_t g = 0; g < b.tokens.size(); ++g)
    for (std::size_t w = 0; w < words; ++w)
      write_kv_word(s, kvp, b.kv_rows[g], b.positions[g], b.tokens[g], w);
  for (std::uint32_t i = 0; i < b.items.size(); ++i)
    for (std::size_t l = 0; l < s.ssm_layers; ++l) {
      for (std::size_t j = 0; j < s.lanes; ++j)
        scan_lane(s, sp, b.items[i], i, b.tokens.data(), b.captures.data(), b.captures.size(), l,
                  j);
      scan_conv(s, sp, b.items[i], b.tokens.data(), l);
    }
  for (const conv_fix& f : b.fixes)
    for (std::size_t l = 0; l < s.ssm_layers; ++l)
      apply_fix(s, sp, f, b.conv_values.data(), l);
}

}  // namespace hc::toy
