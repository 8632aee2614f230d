#pragma once
// One cache instance's way to the node's KV events (README "Route on it"). Its topics are
// "kv/<instance fingerprint>/<namespace>", so two instances of one spec share them: that
// happens when an instance is retired (its shared memory was removed from under the node)
// and a fresh one of the same spec takes new sessions while the old one's sessions run on.
// From its retirement on, the old instance publishes nothing (its events would mix with its
// successor's), and the successor's first event on each topic is AllBlocksCleared, which
// takes the old instance's pages out of a subscriber's view.

#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "actors/radix_cache/kv_events.hpp"

namespace hc {

class instance_events final : public kv_event_sink {
 public:
  /// `node` must outlive this (the node's publisher outlives its actors).
  explicit instance_events(kv_event_sink& node) : node_(&node) {}

  /// Publishes through the node's sink, unless muted. Thread-safe: the instance's actor
  /// publishes while the scheduler may mute.
  void publish(const std::string& topic, std::span<const kv_event> events) override;
  std::uint64_t last_sequence() const override { return node_->last_sequence(); }

  /// From its return on, nothing this instance publishes goes out (a publish under way
  /// finished before it).
  void mute();

 private:
  kv_event_sink* node_;
  std::mutex mu_;
  bool muted_ = false;
};

}  // namespace hc
