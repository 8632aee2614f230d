#pragma once
// What one cache instance holds and served, as plain numbers: the radix_cache actor fills
// one per instance, the scheduler sums them with += for the node's `stats`, and the same
// struct renders the instance's part of `inspect` (to_json is the one place its names
// are spelled). Thread safety: none (a value type).

#include <cstdint>
#include <string_view>

namespace hc {

struct instance_stats {
  // Pools and the tree, now.
  std::uint64_t live_requests = 0;
  std::uint64_t kv_capacity = 0, kv_available = 0, full_evictable = 0, full_protected = 0;
  std::uint64_t slot_capacity = 0, slot_available = 0, mamba_evictable = 0, mamba_protected = 0;
  /// Pins held (cmd::pin) and their pinned lengths summed (overlapping pins count twice).
  std::uint64_t pins = 0, pinned_tokens = 0;
  // Served since the instance started.
  std::uint64_t steps = 0, commands = 0, command_errors = 0;
  std::uint64_t matches = 0, queried_tokens = 0, matched_kv_tokens = 0,
                matched_resumable_tokens = 0, lookups = 0;
  std::uint64_t inserted_tokens = 0;
  std::uint64_t evicted_tokens = 0, evicted_slots = 0;
  std::uint64_t pressure_evicted_tokens = 0, pressure_evicted_slots = 0;
  std::uint64_t tombstones_by_eviction = 0, tombstones_by_split = 0;
  // The host tier (L2), all 0 without one: its pools now, and the tokens moved since the
  // instance started. `inspect` has them in the instance's "host" part, with the rest of
  // the tier; here for `stats`.
  std::uint64_t host_kv_capacity = 0, host_kv_available = 0;
  std::uint64_t host_slot_capacity = 0, host_slot_available = 0;
  std::uint64_t backed_up_tokens = 0, loaded_back_tokens = 0, demoted_tokens = 0,
                host_evicted_tokens = 0, host_evicted_slots = 0;

  instance_stats& operator+=(const instance_stats& o) noexcept {
    for_each_field([&o, this](std::string_view, std::string_view, std::uint64_t instance_stats::*f,
                              bool) { this->*f += o.*f; });
    return *this;
  }

  /// Calls f(stats_name, inspect_name, member, served) for every field in a fixed order:
  /// the name `stats` reports, the name in an instance's `inspect` document ("" for the
  /// host tier's, which inspect reports in its own part), and whether the field is a
  /// served counter (inspect puts those under "served").
  template <class F>
  static void for_each_field(F&& f) {
    using S = instance_stats;
    f("live_requests", "live_requests", &S::live_requests, false);
    f("kv_tokens_capacity", "kv_capacity", &S::kv_capacity, false);
    f("kv_tokens_free", "kv_available", &S::kv_available, false);
    f("kv_tokens_evictable", "full_evictable", &S::full_evictable, false);
    f("kv_tokens_protected", "full_protected", &S::full_protected, false);
    f("ssm_slots_capacity", "slot_capacity", &S::slot_capacity, false);
    f("ssm_slots_free", "slot_available", &S::slot_available, false);
    f("ssm_slots_evictable", "mamba_evictable", &S::mamba_evictable, false);
    f("ssm_slots_protected", "mamba_protected", &S::mamba_protected, false);
    f("pins", "pins", &S::pins, false);
    f("pinned_tokens", "pinned_tokens", &S::pinned_tokens, false);
    f("steps", "steps", &S::steps, true);
    f("commands", "commands", &S::commands, true);
    f("command_errors", "command_errors", &S::command_errors, true);
    f("matches", "matches", &S::matches, true);
    f("queried_tokens", "queried_tokens", &S::queried_tokens, true);
    f("matched_kv_tokens", "matched_kv_tokens", &S::matched_kv_tokens, true);
    f("matched_resumable_tokens", "matched_resumable_tokens", &S::matched_resumable_tokens, true);
    f("lookups", "lookups", &S::lookups, true);
    f("inserted_tokens", "inserted_tokens", &S::inserted_tokens, true);
    f("evicted_tokens", "evicted_tokens", &S::evicted_tokens, true);
    f("evicted_slots", "evicted_slots", &S::evicted_slots, true);
    f("pressure_evicted_tokens", "pressure_evicted_tokens", &S::pressure_evicted_tokens, true);
    f("pressure_evicted_slots", "pressure_evicted_slots", &S::pressure_evicted_slots, true);
    f("tombstones_by_eviction", "tombstones_by_eviction", &S::tombstones_by_eviction, true);
    f("tombstones_by_split", "tombstones_by_split", &S::tombstones_by_split, true);
    f("host_kv_tokens_capacity", "", &S::host_kv_capacity, false);
    f("host_kv_tokens_free", "", &S::host_kv_available, false);
    f("host_ssm_slots_capacity", "", &S::host_slot_capacity, false);
    f("host_ssm_slots_free", "", &S::host_slot_available, false);
    f("backed_up_tokens", "", &S::backed_up_tokens, true);
    f("loaded_back_tokens", "", &S::loaded_back_tokens, true);
    f("demoted_tokens", "", &S::demoted_tokens, true);
    f("host_evicted_tokens", "", &S::host_evicted_tokens, true);
    f("host_evicted_slots", "", &S::host_evicted_slots, true);
  }
  friend bool operator==(const instance_stats&, const instance_stats&) = default;
};

}  // namespace hc
