#include "actors/common/invariant.hpp"

#include <atomic>
#include <cassert>

namespace hc {
namespace {

std::atomic<std::uint64_t> violations{0};
std::atomic<const char*> first{nullptr};

}  // namespace

void count_violation(const char* what) noexcept {
  const char* none = nullptr;
  first.compare_exchange_strong(none, what);
  violations.fetch_add(1, std::memory_order_relaxed);
}

bool must(bool ok, const char* what) noexcept {
  if (ok) return true;
  count_violation(what);
  assert(ok && "internal invariant violated (see first_invariant_violation())");
  return false;
}

bool must(const status& s, const char* what) noexcept {
  return must(s.ok(), what);
}

std::uint64_t invariant_violations() noexcept {
  return violations.load(std::memory_order_relaxed);
}

const char* first_invariant_violation() noexcept {
  const char* f = first.load();
  return f ? f : "";
}

}  // namespace hc
