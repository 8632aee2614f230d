#include "actors/node/instance_events.hpp"

namespace hc {

void instance_events::publish(const std::string& topic, std::span<const kv_event> events) {
  std::lock_guard lk(mu_);
  if (!muted_) node_->publish(topic, events);
}

void instance_events::mute() {
  std::lock_guard lk(mu_);
  muted_ = true;
}

}  // namespace hc
