#pragma once
// KV events over ZeroMQ (README "Route on it"), framed as vLLM frames them:
//   PUB, one multipart message per batch: [topic, sequence (8 bytes, big-endian), payload]
//   with the payload of kv_event_encoding.hpp and one sequence across all topics.
//   ROUTER (replay, optional): a DEALER sends [empty, start sequence (8 bytes BE)] and gets
//   [empty, topic, sequence, payload] for every kept batch from `start` on, then
//   [empty, "", -1 (8 bytes BE, all ones), ""] as the end. Every batch is delivered or the
//   end marker is not sent: a client that does not take the replay within
//   publisher_config's bounds is cut off (it sees no end marker), never sent a replay with
//   holes (a ROUTER drops what passes its high-water mark: before, a replay of more than
//   ~1,000 batches lost the rest, end marker included, without a word).
// Topic = "kv/<instance fingerprint>/<namespace>" (the node's instance_fingerprint; the
// default namespace is ""), so a subscriber can filter by prefix.
//
// Thread safety: publish() and last_sequence() from any thread; the replay socket is
// served by the publisher's own thread.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "actors/common/status.hpp"
#include "actors/radix_cache/kv_events.hpp"

namespace hc::events {

struct publisher_config {
  /// Where the PUB socket binds (e.g. "tcp://127.0.0.1:5557", "ipc:///run/x.sock"); a TCP
  /// port "*" binds any free port (endpoint() tells which).
  std::string endpoint;
  /// Where the replay ROUTER binds; "" = no replay.
  std::string replay_endpoint;
  /// Batches kept for replay (the oldest go first). Default: 10000.
  std::size_t buffer = 10000;
  /// Bytes of batches kept for replay (topics and payloads; the oldest go first, the
  /// newest batch always stays). A page-1 insert of 16 K tokens is a ~230 KB batch, so the
  /// batch count alone let the buffer reach gigabytes. Default: 256 MiB.
  std::size_t buffer_bytes = std::size_t{256} << 20;
  /// A replay waits at most this long for a client to take its next message (then stops
  /// without the end marker, so the client knows it is cut short)...
  std::chrono::milliseconds replay_stall{2000};
  /// ...and takes at most this long in all (one thread serves every client in turn).
  std::chrono::milliseconds replay_limit{60000};
};

class zmq_kv_event_publisher final : public kv_event_sink {
 public:
  /// Binds the sockets; an error names the endpoint that failed.
  static result<std::unique_ptr<zmq_kv_event_publisher>> start(const publisher_config& cfg);
  ~zmq_kv_event_publisher() override;
  zmq_kv_event_publisher(const zmq_kv_event_publisher&) = delete;
  zmq_kv_event_publisher& operator=(const zmq_kv_event_publisher&) = delete;

  void publish(const std::string& topic, std::span<const kv_event> events) override;
  std::uint64_t last_sequence() const override { return seq_.load(); }
  /// The endpoints as bound (a wildcard port resolved); "" for no replay.
  const std::string& endpoint() const noexcept { return bound_; }
  const std::string& replay_endpoint() const noexcept { return replay_bound_; }

 private:
  struct impl;
  explicit zmq_kv_event_publisher(std::unique_ptr<impl> i);
  void serve_replay();
  std::unique_ptr<impl> impl_;
  std::string bound_, replay_bound_;
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<bool> stop_{false};
  std::thread replay_thread_;
};

}  // namespace hc::events
