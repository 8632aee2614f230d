#include "actors/radix_cache/node_kv.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>

#include "actors/radix_cache/id_runs.hpp"

namespace hc {

void node_kv::put_run(std::vector<kv_index>& entries, kv_index first, std::size_t len) {
  if (len == 1) {
    entries.push_back(first);
    return;
  }
  entries.push_back(static_cast<kv_index>(static_cast<std::uint32_t>(first) | run_bit));
  entries.push_back(static_cast<kv_index>(len));
}

void node_kv::assign(std::span<const kv_index> ids) {
  // A fresh buffer of exactly the size (assign() would keep a larger old one).
  std::vector<kv_index>(ids.begin(), ids.end()).swap(stored_);
  run_len_ = 0;
  one_ = 0;
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

bool node_kv::assign_encoded(std::span<const kv_index> ids) {
  if (ids.empty()) return false;
  const std::size_t budget = ids.size() / 4 * 3;  // at most 3/4 of the listed entries
  std::vector<kv_index> entries;
  entries.reserve(std::min<std::size_t>(budget, 64));
  for (std::size_t i = 0; i < ids.size();) {
    const std::size_t k = leading_run_length(ids.subspan(i));
    const kv_index first = ids[i];
    // Not encodable: an id that is not positive (its top bit is the header mark) or a run
    // that wraps past the largest id into the negative ones.
    if (first <= 0 || static_cast<std::uint64_t>(first) + k - 1 > INT32_MAX) return false;
    put_run(entries, first, k);
    if (entries.size() > budget) return false;
    i += k;
  }
  set_encoded(entries, ids.size());
  return true;
}

void node_kv::set_encoded(const std::vector<kv_index>& entries, std::size_t n) {
  assert(!entries.empty() && n > 0);
  const bool one = entries.size() == 1 ||
                   (entries.size() == 2 && (static_cast<std::uint32_t>(entries[0]) & run_bit));
  if (one) {  // one run: the runs form, inline
    release_storage();
    one_ = static_cast<kv_index>(static_cast<std::uint32_t>(entries[0]) & ~run_bit);
    run_len_ = static_cast<std::uint32_t>(n);
    return;
  }
  std::vector<kv_index>(entries.begin(), entries.end()).swap(stored_);  // exact storage
  run_len_ = 0;
  one_ = static_cast<kv_index>(n);
}

kv_index node_kv::encoded_at(std::size_t i) const noexcept {
  std::size_t pos = 0;
  kv_index id = 0;
  bool found = false;
  for_each_run([&](kv_index first, std::size_t len) {
    if (!found && i < pos + len) {
      id = static_cast<kv_index>(first + static_cast<kv_index>(i - pos));
      found = true;
    }
    pos += len;
  });
  assert(found);
  return id;
}

void node_kv::copy_to(kv_index* out, std::size_t from) const noexcept {
  assert(from <= size());
  if (encoded()) {
    std::size_t pos = 0;
    for_each_run([&](kv_index first, std::size_t len) {
      if (pos + len > from) {
        const std::size_t skip = from > pos ? from - pos : 0;
        const kv_index one = static_cast<kv_index>(first + static_cast<kv_index>(skip));
        fill_runs(out, {&one, 1}, len - skip, 0);
        out += len - skip;
      }
      pos += len;
    });
    return;
  }
  if (run_len_ == 0) {
    std::copy(stored_.begin() + static_cast<std::ptrdiff_t>(from), stored_.end(), out);
    return;
  }
  fill_runs(out, stored(), run_len_, from);
}

void node_kv::append_to(std::vector<kv_index>& v) const {
  if (run_len_ == 0 && !encoded()) {
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
  if (encoded()) return split_encoded(at);
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

node_kv node_kv::split_encoded(std::size_t at) {
  std::vector<kv_index> head, tail;
  std::size_t pos = 0;
  for_each_run([&](kv_index first, std::size_t len) {
    if (pos >= at) {
      put_run(tail, first, len);
    } else if (pos + len <= at) {
      put_run(head, first, len);
    } else {  // the run the cut falls in: a run on either side
      const std::size_t k = at - pos;
      put_run(head, first, k);
      put_run(tail, static_cast<kv_index>(first + static_cast<kv_index>(k)), len - k);
    }
    pos += len;
  });
  node_kv front;
  front.set_encoded(head, at);
  set_encoded(tail, pos - at);
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
