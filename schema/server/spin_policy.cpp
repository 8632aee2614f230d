#include "schema/server/spin_policy.hpp"

namespace hc::rpc {

std::chrono::nanoseconds spin_policy::budget_for(std::uint64_t caller,
                                                 clock::time_point now) noexcept {
  if (budget_.count() <= 0) return {};
  if (caller != last_caller_) {
    last_caller_ = caller;
    callers_changed_at_ = now;
    return {};
  }
  return now - callers_changed_at_ < quiet ? std::chrono::nanoseconds{} : budget_;
}

}  // namespace hc::rpc
