#pragma once
// Random toy-model forwards over pools of random bytes, for the tests that compare the
// device batch (gpu/toy_forward.hpp: its host run and its CUDA kernels) with the toy
// model's own extend() / decode() (tools/hcsim/toy_model.hpp).

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <random>
#include <vector>

#include "actors/scheduler/tracking.hpp"
#include "tools/hcsim/toy_model.hpp"

namespace hc::sim::testing {

struct toy_pools {
  std::vector<std::byte> kv, ssm;
  std::size_t kv_rows = 0, slots = 0;
};

/// One random forward: an extend batch or a decode batch, its tokens owned here.
struct random_forward {
  bool decode = false;
  std::vector<std::vector<token_id>> tokens;
  std::vector<extend_job> extends;
  std::vector<decode_job> decodes;
};

inline toy_pools random_pools(const toy_model& m, std::size_t kv_rows, std::size_t slots,
                              std::mt19937& rng) {
  toy_pools p;
  p.kv_rows = kv_rows;
  p.slots = slots;
  p.kv.resize(kv_rows * m.config().token_bytes());
  p.ssm.resize(slots * m.config().slot_bytes());
  for (auto* v : {&p.kv, &p.ssm})
    for (std::byte& b : *v)
      b = static_cast<std::byte>(rng());
  return p;
}

/// Distinct slots and rows per batch (as the node hands them out). Track positions mostly as
/// the node plans them, sometimes shifted or absent, so that every source a track can have
/// (a chunk state, the final state, outside the tensor) occurs.
inline random_forward random_forward_of(const toy_model& m, const toy_pools& p, std::mt19937& rng,
                                        bool decode) {
  random_forward f;
  f.decode = decode;
  std::vector<slot_id> slots(p.slots);
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<kv_index> rows(p.kv_rows);
  std::iota(rows.begin(), rows.end(), 0);
  std::shuffle(rows.begin(), rows.end(), rng);
  std::size_t next_slot = 0, next_row = 0;
  const std::size_t C = m.config().chunk;
  const std::size_t n = 1 + rng() % 4;
  for (std::size_t i = 0; i < n; ++i) {
    if (decode) {
      decode_job d;
      d.working = slots.at(next_slot++);
      d.track = rng() % 3 == 0 ? slots.at(next_slot++) : no_slot;
      d.pos = rng() % 5000;
      d.token = static_cast<token_id>(rng() % 60000);
      d.kv = rows.at(next_row++);
      f.decodes.push_back(d);
      continue;
    }
    const std::size_t prefix = (rng() % 4) * C + (rng() % 2 ? 0 : rng() % C);
    const std::size_t ext = 1 + rng() % (3 * C + 7);
    std::vector<token_id> t(ext);
    for (token_id& x : t)
      x = static_cast<token_id>(rng() % 60000);
    f.tokens.push_back(std::move(t));
    extend_job j;
    j.working = slots.at(next_slot++);
    j.prefix_len = prefix;
    for (std::size_t k = 0; k < ext; ++k)
      j.kv.push_back(rows.at(next_row++));
    std::optional<std::size_t> branching;
    if (rng() % 3 == 0) branching = prefix + (1 + rng() % 3) * C;
    const prefill_track plan = plan_prefill_track(prefix, ext, C, branching, false, 0, 2);
    j.mask = plan.mask;
    j.kernel_seqlen = plan.kernel_seqlen;
    if (rng() % 4 == 0)  // the node got it wrong: another chunk, or outside the tensor
      j.kernel_seqlen +=
          static_cast<std::int64_t>(rng() % (12 * C)) - static_cast<std::int64_t>(4 * C);
    if (rng() % 5 != 0) j.track = slots.at(next_slot++);
    f.extends.push_back(std::move(j));
  }
  for (std::size_t i = 0; i < f.extends.size(); ++i)
    f.extends[i].tokens = f.tokens[i];
  return f;
}

/// The toy model's own forward on host pools (the reference).
inline void run_model(const toy_model& m, const random_forward& f, toy_pools& p) {
  const std::size_t tb = m.config().token_bytes(), sb = m.config().slot_bytes();
  auto row = [&](kv_index r) { return std::span<std::byte>(p.kv).subspan(r * tb, tb); };
  auto slot = [&](slot_id s) { return std::span<std::byte>(p.ssm).subspan(s * sb, sb); };
  if (f.decode) {
    for (const decode_job& d : f.decodes)
      m.decode(slot(d.working), d.pos, d.token, row(d.kv),
               d.track == no_slot ? std::span<std::byte>() : slot(d.track));
    return;
  }
  std::vector<extend_item> items;
  for (const extend_job& j : f.extends) {
    extend_item it;
    it.working = slot(j.working);
    it.prefix_len = j.prefix_len;
    it.tokens = j.tokens;
    for (kv_index r : j.kv)
      it.kv.push_back(row(r));
    it.mask = j.mask;
    it.kernel_seqlen = j.kernel_seqlen;
    if (j.track != no_slot) it.track = slot(j.track);
    items.push_back(std::move(it));
  }
  m.extend(items);
}

inline toy::forward_batch plan_of(const toy_model& m, const random_forward& f) {
  return f.decode ? m.plan_decode(f.decodes) : m.plan_extend(f.extends);
}

}  // namespace hc::sim::testing
