#include "actors/radix_cache/node_kv.hpp"

#include <algorithm>
#include <cassert>

#include "actors/radix_cache/id_runs.hpp"

namespace hc {

void node_kv::assign(std::span<const kv_index> ids) {
  // A fresh buffer of exactly the size (assign() would keep a larger old one).
  std::vector<kv_index>(ids.begin(), ids.end()).swap(stored_);
  run_len_ = 0;
}

void node_kv::set_runs(std::vector<kv_index> firsts, std::size_t run_len) {
  assert(!firsts.empty() && run_len > 0);
  run_len_ = static_cast<std::uint32_t>(run_len);
  if (firsts.size() == 1) {
    one_ = firsts[0];
    release_storage();
  } else {
    stored_.swap(firsts);
  }
}

void node_kv::assign_runs(std::span<const kv_index> ids, std::size_t run_len) {
  assert(run_len > 0 && ids.size() % run_len == 0);
  if (ids.empty()) return release();
  if (ids.size() == run_len) {  // one run, inline: no allocation
    assert(static_cast<std::size_t>(ids.back() - ids.front()) + 1 == run_len);
    release_storage();
    one_ = ids.front();
    run_len_ = static_cast<std::uint32_t>(run_len);
    return;
  }
  std::vector<kv_index> firsts(ids.size() / run_len);
  for (std::size_t r = 0; r < firsts.size(); ++r)
    firsts[r] = ids[r * run_len];
  assert(static_cast<std::size_t>(ids.back() - firsts.back()) + 1 == run_len);
  set_runs(std::move(firsts), run_len);
}

void node_kv::copy_to(kv_index* out, std::size_t from) const noexcept {
  assert(from <= size());
  if (run_len_ == 0) {
    std::copy(stored_.begin() + static_cast<std::ptrdiff_t>(from), stored_.end(), out);
    return;
  }
  fill_runs(out, stored(), run_len_, from);
}

void node_kv::append_to(std::vector<kv_index>& v) const {
  if (run_len_ == 0) {
    v.insert(v.end(), stored_.begin(), stored_.end());
    return;
  }
  const std::size_t at = v.size();
  // resize() zero-fills what copy_to then writes: the runs form has no ids to insert from.
  v.resize(at + size());
  copy_to(v.data() + at);
}

std::vector<kv_index> node_kv::to_vector() const {
  std::vector<kv_index> v;
  v.reserve(size());
  append_to(v);
  return v;
}

node_kv node_kv::split_front(std::size_t at) {
  assert(at > 0 && at < size());
  node_kv front;
  if (one_run()) {  // one run: a run on either side
    front.run_len_ = static_cast<std::uint32_t>(at);
    front.one_ = one_;
    one_ = static_cast<kv_index>(one_ + static_cast<kv_index>(at));
    run_len_ -= static_cast<std::uint32_t>(at);
    return front;
  }
  assert(run_len_ == 0 || at % run_len_ == 0);
  const std::size_t cut = run_len_ == 0 ? at : at / run_len_;
  const auto mid = stored_.begin() + static_cast<std::ptrdiff_t>(cut);
  std::vector<kv_index> head(stored_.begin(), mid), tail(mid, stored_.end());  // exact storage
  if (run_len_ == 0) {
    front.stored_.swap(head);
    stored_.swap(tail);
  } else {
    front.set_runs(std::move(head), run_len_);
    set_runs(std::move(tail), run_len_);
  }
  return front;
}

void node_kv::release() noexcept {
  release_storage();
  run_len_ = 0;
  one_ = 0;
}

void node_kv::release_storage() noexcept {
  std::vector<kv_index>().swap(stored_);
}

}  // namespace hc
