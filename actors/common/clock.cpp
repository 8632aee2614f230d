#include "actors/common/clock.hpp"

namespace hc {
namespace {

class steady_clock_source final : public clock {
 public:
  clock_ns now() const noexcept override {
    return std::chrono::duration_cast<clock_ns>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
};

}  // namespace

const clock& steady() noexcept {
  static const steady_clock_source source;
  return source;
}

}  // namespace hc
