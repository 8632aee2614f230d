#pragma once
// Polling a node's inspect document until it shows what a test waits for.

#include <chrono>
#include <nlohmann/json.hpp>

#include "schema/client.hpp"

namespace hc::test {

/// Polls inspect (no sleeps: each poll is a round trip through the node) until `pred(doc)`
/// holds; returns the last document. For what the node learns on its own (a connection
/// that dropped); the 60 s bound is a hang guard, not a timing assertion.
template <class Pred>
nlohmann::json inspect_until(client& c, Pred pred) {
  nlohmann::json doc;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    auto d = c.inspect();
    if (!d.ok()) break;
    doc = nlohmann::json::parse(*d);
    if (pred(doc)) break;
  }
  return doc;
}

}  // namespace hc::test
