#pragma once
// A tree node's device KV ids (radix_node::value), kept as runs when they are whole units of
// the KV pool.
//
// Three forms, one sequence of ids:
//   * listed : every id is stored (run_length() == 0, !encoded());
//   * runs   : the ids are runs of run_length() consecutive ids each, and only each run's
//              first id is stored. The tree picks this form when the ids are whole units of
//              the pool (kv_allocator::is_whole_units): page size 1, one run of consecutive
//              ids (one stored id for the node); page size P, whole pages (one stored id per
//              page). A cached token then costs no bytes of KV ids, a match writes the ids
//              instead of reading them, and an eviction frees them by the run.
//   * encoded: page size 1, ids that are several runs (the allocations of requests that
//              interleave under pressure): each run of consecutive ids is stored as a
//              header (its first id with the top bit set) and a length, a lone id as itself
//              — run_ring's encoding. Chosen when it saves a quarter of the listed form.
// Readers see the same ids in the same order whatever the form (size, [], copy_to, ...).
//
// Invariants: listed: stored() are the ids. runs: run_length() > 0, stored() is not empty,
// size() == stored().size() * run_length(). A value of one run (page 1: every runs value)
// keeps its first id inline, with no heap storage at all; other storage is exact (no unused
// capacity) after every mutation, so a node holds no slack (radix_tree::check_invariants).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/radix_cache/id_runs.hpp"

namespace hc {

class node_kv {
 public:
  node_kv() = default;

  /// The listed form of ids.
  void assign(std::span<const kv_index> ids);
  /// The runs form of ids. REQUIRES: run_len > 0, ids.size() % run_len == 0, and every
  /// aligned group of run_len ids is consecutive (ids[k] + 1 == ids[k + 1] within a group).
  void assign_runs(std::span<const kv_index> ids, std::size_t run_len);
  /// The encoded form of ids, if every id is positive and the encoding takes at most three
  /// quarters of the listed form's entries (a value of one run takes the runs form);
  /// otherwise false, and the value is unchanged.
  bool assign_encoded(std::span<const kv_index> ids);

  std::size_t size() const noexcept {
    if (encoded()) return static_cast<std::size_t>(one_);
    if (run_len_ == 0) return stored_.size();
    return one_run() ? run_len_ : stored_.size() * run_len_;
  }
  bool empty() const noexcept { return run_len_ == 0 && stored_.empty(); }
  /// 0 in the listed and encoded forms, else the length of every run.
  std::size_t run_length() const noexcept { return run_len_; }
  bool encoded() const noexcept { return run_len_ == 0 && one_ != 0; }
  /// f(first, length) for runs of consecutive ids that spell the value in order: encoded
  /// form, its entries as stored; runs form, each stored run (consecutive runs are not
  /// merged); listed form, its maximal runs.
  template <class F>
  void for_each_run(F&& f) const;
  /// The ids (listed form), each run's first id (runs form) or the entries (encoded).
  std::span<const kv_index> stored() const noexcept {
    if (one_run()) return {&one_, 1};
    return stored_;
  }

  /// The i-th id. REQUIRES: i < size().
  kv_index operator[](std::size_t i) const noexcept {
    if (encoded()) return encoded_at(i);
    if (run_len_ == 0) return stored_[i];
    return static_cast<kv_index>(stored()[i / run_len_] + static_cast<kv_index>(i % run_len_));
  }
  /// Writes the ids from position `from` on to out[0, size() - from). REQUIRES: from <=
  /// size(); out has room for them.
  void copy_to(kv_index* out, std::size_t from = 0) const noexcept;
  /// Appends the ids to v (one allocation at most).
  void append_to(std::vector<kv_index>& v) const;
  std::vector<kv_index> to_vector() const;

  /// Moves the ids [0, at) into the result and keeps [at, size()), both halves in exact
  /// storage. Runs stay runs: a one-run value splits anywhere; several runs only between
  /// runs; an encoded value anywhere (a half that is one run takes the runs form).
  /// REQUIRES: 0 < at < size(); in the runs form with more than one run, at is a multiple
  /// of run_length() (the tree splits at page boundaries).
  node_kv split_front(std::size_t at);

  /// Empties the value and gives its storage back.
  void release() noexcept;
  /// True if the storage holds unused capacity (an invariant violation in a live node).
  bool has_slack() const noexcept { return stored_.capacity() != stored_.size(); }
  /// True if any storage is held (a pooled node holds none).
  bool holds_storage() const noexcept { return stored_.capacity() != 0; }

  /// Test hook: the stored ids, writable (to break an invariant on purpose).
  std::span<kv_index> stored_for_test() noexcept {
    if (one_run()) return {&one_, 1};
    return stored_;
  }

 private:
  /// The runs form with a single run, whose first id is one_ (stored_ is empty).
  bool one_run() const noexcept { return run_len_ != 0 && stored_.empty(); }
  /// The runs form of these first ids (one: inline).
  void set_runs(std::vector<kv_index> firsts, std::size_t run_len);
  /// The encoded form of these entries holding n ids (exact storage); one run: runs form.
  void set_encoded(const std::vector<kv_index>& entries, std::size_t n);
  kv_index encoded_at(std::size_t i) const noexcept;
  /// Appends the encoding of the run (first, len >= 1) to entries.
  static void put_run(std::vector<kv_index>& entries, kv_index first, std::size_t len);
  node_kv split_encoded(std::size_t at);
  void release_storage() noexcept;

  static constexpr std::uint32_t run_bit = 0x80000000u;

  std::vector<kv_index> stored_;  ///< the ids, the runs' first ids (two runs or more), or
                                  ///< the encoded entries
  /// The runs form with a single run: its first id. The encoded form: its number of ids
  /// (> 0). The listed form: 0. (One field for the two: a node is as small as it was.)
  kv_index one_ = 0;
  std::uint32_t run_len_ = 0;  ///< the runs form: every run's length (> 0); other forms: 0
};

template <class F>
void node_kv::for_each_run(F&& f) const {
  if (encoded()) {
    for (std::size_t i = 0; i < stored_.size();) {
      const auto e = static_cast<std::uint32_t>(stored_[i]);
      if (e & run_bit) {
        f(static_cast<kv_index>(e & ~run_bit), static_cast<std::size_t>(stored_[i + 1]));
        i += 2;
      } else {
        f(static_cast<kv_index>(e), std::size_t{1});
        i += 1;
      }
    }
    return;
  }
  if (run_len_ != 0) {
    for (const kv_index first : stored())
      f(first, std::size_t{run_len_});
    return;
  }
  const std::span<const kv_index> ids(stored_);
  for (std::size_t i = 0; i < ids.size();) {
    const std::size_t k = leading_run_length(ids.subspan(i));
    f(ids[i], k);
    i += k;
  }
}

}  // namespace hc
