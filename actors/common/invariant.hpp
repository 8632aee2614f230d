#pragma once
// Internal invariants that must hold (a free of an id the pool handed out, a lock the
// caller holds): must() checks one. A violation is a bug in hybridcache, never bad input —
// debug builds stop at the assert; release builds keep serving and count it, so it shows
// in `inspect` ("invariant_violations") and in /metrics
// (hybridcache_invariant_violations_total) instead of passing silently.
//
// Thread safety: the count is process-wide and atomic (every node in the process adds to it).

#include <cstdint>

#include "actors/common/status.hpp"

namespace hc {

/// Counts `s` as a violation unless it is ok; returns s.ok(). `what` names the invariant
/// (a string literal: it is kept as the first violation's name).
bool must(const status& s, const char* what) noexcept;
/// The same for a condition.
bool must(bool ok, const char* what) noexcept;
/// Counts a violation the caller already handles, without the debug builds' stop (an
/// actor that failed: the node reports it and stops serving; node_config::on_actor_failure).
void count_violation(const char* what) noexcept;

/// Violations counted so far in this process.
std::uint64_t invariant_violations() noexcept;
/// The name of the first violation ("" if none).
const char* first_invariant_violation() noexcept;

}  // namespace hc
