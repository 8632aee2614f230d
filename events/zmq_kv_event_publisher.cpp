#include "events/zmq_kv_event_publisher.hpp"

#include <zmq.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

#include "actors/common/thread_name.hpp"
#include "events/kv_event_encoding.hpp"

namespace hc::events {
namespace {

/// tcp://[IPV6]:PORT.
bool bracketed_host(const std::string& endpoint) {
  return endpoint.find("://[") != std::string::npos;
}

std::string be64(std::int64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(static_cast<std::uint64_t>(v) & 0xff);
    v = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) >> 8);
  }
  return out;
}

/// The largest frame a subscriber or a replay client may send (subscription topics and
/// 8-byte sequence numbers are far smaller).
constexpr std::int64_t kMaxInboundFrame = 4096;

std::int64_t from_be64(const zmq::message_t& m) {
  if (m.size() != 8) return -1;
  const auto* b = static_cast<const unsigned char*>(m.data());
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = (v << 8) | b[i];
  return static_cast<std::int64_t>(v);
}

struct batch {
  std::uint64_t seq;
  std::string topic, payload;
  std::size_t bytes() const noexcept { return topic.size() + payload.size(); }
};
/// Shared, so that a replay takes the batches from under the lock without copying them and
/// sends the payloads without copying them either (zero-copy messages hold a reference).
using kept = std::shared_ptr<const batch>;

/// A zero-copy message over a kept batch's payload: ZeroMQ drops the reference when sent.
zmq::message_t payload_message(const kept& k) {
  auto* hold = new kept(k);
  return zmq::message_t(
      const_cast<char*>(k->payload.data()), k->payload.size(),
      [](void*, void* hint) { delete static_cast<kept*>(hint); }, hold);
}

}  // namespace

/// How long the PUB socket may take at stop to send what it still has queued.
constexpr std::chrono::milliseconds kStopLinger{500};

struct zmq_kv_event_publisher::impl {
  zmq::context_t ctx{1};
  zmq::socket_t pub{ctx, zmq::socket_type::pub};
  std::unique_ptr<zmq::socket_t> replay;
  std::mutex mu;  ///< pub and the kept batches
  std::deque<kept> buffer;
  std::size_t buffer_bytes = 0;  ///< of the kept batches
  publisher_config cfg;
};

zmq_kv_event_publisher::zmq_kv_event_publisher(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

result<std::unique_ptr<zmq_kv_event_publisher>> zmq_kv_event_publisher::start(
    const publisher_config& cfg) {
  auto i = std::make_unique<impl>();
  i->cfg = cfg;
  i->cfg.buffer = std::max<std::size_t>(cfg.buffer, 1);
  std::unique_ptr<zmq_kv_event_publisher> p;
  try {
    // At stop, what is queued (the instances' AllBlocksCleared among it) gets this long to
    // reach the subscribers before the socket closes; a subscriber that is not reading
    // holds the stop no longer than that.
    i->pub.set(zmq::sockopt::linger, static_cast<int>(kStopLinger.count()));
    // An [IPv6] host needs the socket's IPv6 option (ZeroMQ says "No such device" without
    // it); other endpoints keep ZeroMQ's default, IPv4 only.
    i->pub.set(zmq::sockopt::ipv6, bracketed_host(cfg.endpoint));
    // What a peer may send in one frame: a subscription topic here, a sequence number to the
    // replay socket. Beyond it ZeroMQ drops the peer; without it, anyone who reaches the
    // endpoint (tcp://*) could make the node buffer a frame of any size.
    i->pub.set(zmq::sockopt::maxmsgsize, kMaxInboundFrame);
    i->pub.bind(cfg.endpoint);
    std::string bound = i->pub.get(zmq::sockopt::last_endpoint);
    std::string replay_bound;
    if (!cfg.replay_endpoint.empty()) {
      i->replay = std::make_unique<zmq::socket_t>(i->ctx, zmq::socket_type::router);
      i->replay->set(zmq::sockopt::linger, 0);
      i->replay->set(zmq::sockopt::ipv6, bracketed_host(cfg.replay_endpoint));
      // Past a client's high-water mark a send waits (up to replay_stall) instead of the
      // ROUTER dropping the message; a client gone fails the send (EHOSTUNREACH).
      i->replay->set(zmq::sockopt::router_mandatory, 1);
      i->replay->set(zmq::sockopt::maxmsgsize, kMaxInboundFrame);
      i->replay->set(zmq::sockopt::sndtimeo, static_cast<int>(cfg.replay_stall.count()));
      try {
        i->replay->bind(cfg.replay_endpoint);
      } catch (const zmq::error_t& e) {
        return error{errc::invalid_config,
                     "kv events replay endpoint " + cfg.replay_endpoint + ": " + e.what()};
      }
      replay_bound = i->replay->get(zmq::sockopt::last_endpoint);
    }
    p.reset(new zmq_kv_event_publisher(std::move(i)));
    p->bound_ = std::move(bound);
    p->replay_bound_ = std::move(replay_bound);
  } catch (const zmq::error_t& e) {
    return error{errc::invalid_config, "kv events endpoint " + cfg.endpoint + ": " + e.what()};
  }
  if (p->impl_->replay) p->replay_thread_ = std::thread([q = p.get()] { q->serve_replay(); });
  return p;
}

zmq_kv_event_publisher::~zmq_kv_event_publisher() {
  stop_ = true;
  if (replay_thread_.joinable()) replay_thread_.join();
}

void zmq_kv_event_publisher::publish(const std::string& topic, std::span<const kv_event> events) {
  if (events.empty()) return;
  const double ts =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string payload = encode_batch(ts, events);
  std::lock_guard lk(impl_->mu);
  const std::uint64_t seq = seq_.load() + 1;
  const std::string seq_bytes = be64(static_cast<std::int64_t>(seq));
  try {  // PUB never blocks: past its high-water mark a slow subscriber loses messages
    impl_->pub.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    impl_->pub.send(zmq::buffer(seq_bytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    impl_->pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // A send failure loses this batch for live subscribers; replay still has it.
  }
  if (impl_->replay) {
    auto k = std::make_shared<const batch>(batch{seq, topic, std::move(payload)});
    impl_->buffer_bytes += k->bytes();
    impl_->buffer.push_back(std::move(k));
    while (impl_->buffer.size() > impl_->cfg.buffer ||
           (impl_->buffer_bytes > impl_->cfg.buffer_bytes && impl_->buffer.size() > 1)) {
      impl_->buffer_bytes -= impl_->buffer.front()->bytes();
      impl_->buffer.pop_front();
    }
  }
  seq_ = seq;
}

void zmq_kv_event_publisher::serve_replay() {
  name_this_thread("hc-kv-replay");
  zmq::socket_t& s = *impl_->replay;
  while (!stop_) {
    zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
      std::vector<zmq::message_t> req;
      while (true) {
        zmq::message_t part;
        if (!s.recv(part, zmq::recv_flags::dontwait)) break;
        const bool more = part.more();
        req.push_back(std::move(part));
        if (!more) break;
      }
      if (req.size() < 2) continue;  // [identity, ..., start]
      const zmq::message_t& id = req.front();
      const std::int64_t start = from_be64(req.back());
      std::vector<kept> out;  // references: the batches stay shared with the buffer
      {
        std::lock_guard lk(impl_->mu);
        for (const kept& k : impl_->buffer)
          if (start >= 0 && k->seq >= static_cast<std::uint64_t>(start)) out.push_back(k);
      }
      // A batch that cannot be queued within replay_stall, or past replay_limit, ends the
      // replay there, without the end marker.
      const auto give_up = std::chrono::steady_clock::now() + impl_->cfg.replay_limit;
      // The routing frame is where a client that does not read (its high-water mark
      // reached for replay_stall) or is gone fails; the rest of a message the ROUTER
      // accepted is queued whatever the mark.
      auto route = [&] {
        if (stop_ || std::chrono::steady_clock::now() >= give_up) return false;
        if (!s.send(zmq::message_t(id.data(), id.size()), zmq::send_flags::sndmore)) return false;
        s.send(zmq::message_t(), zmq::send_flags::sndmore);
        return true;
      };
      bool whole = true;
      for (const kept& k : out) {
        const std::string seq_bytes = be64(static_cast<std::int64_t>(k->seq));
        if (!route()) {
          whole = false;
          break;
        }
        s.send(zmq::message_t(k->topic.data(), k->topic.size()), zmq::send_flags::sndmore);
        s.send(zmq::message_t(seq_bytes.data(), seq_bytes.size()), zmq::send_flags::sndmore);
        s.send(payload_message(k), zmq::send_flags::none);
      }
      if (whole && route()) {
        const std::string end = be64(-1);
        s.send(zmq::message_t(), zmq::send_flags::sndmore);
        s.send(zmq::message_t(end.data(), end.size()), zmq::send_flags::sndmore);
        s.send(zmq::message_t(), zmq::send_flags::none);
      }
    } catch (const zmq::error_t&) {
      // A client gone (EHOSTUNREACH) mid-replay: the rest is not sent; serve the next.
    }
  }
}

}  // namespace hc::events
