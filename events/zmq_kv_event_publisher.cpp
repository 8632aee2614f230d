#include "events/zmq_kv_event_publisher.hpp"

#include <zmq.hpp>

#include <chrono>
#include <vector>

#include "events/kv_event_encoding.hpp"

namespace hc::events {
namespace {

std::string be64(std::int64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(static_cast<std::uint64_t>(v) & 0xff);
    v = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) >> 8);
  }
  return out;
}

std::int64_t from_be64(const zmq::message_t& m) {
  if (m.size() != 8) return -1;
  const auto* b = static_cast<const unsigned char*>(m.data());
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = (v << 8) | b[i];
  return static_cast<std::int64_t>(v);
}

struct kept {
  std::uint64_t seq;
  std::string topic, payload;
};

}  // namespace

struct zmq_kv_event_publisher::impl {
  zmq::context_t ctx{1};
  zmq::socket_t pub{ctx, zmq::socket_type::pub};
  std::unique_ptr<zmq::socket_t> replay;
  std::mutex mu;  ///< pub and the kept batches
  std::deque<kept> buffer;
  std::size_t capacity = 10000;
};

zmq_kv_event_publisher::zmq_kv_event_publisher(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

result<std::unique_ptr<zmq_kv_event_publisher>> zmq_kv_event_publisher::start(
    const publisher_config& cfg) {
  auto i = std::make_unique<impl>();
  i->capacity = cfg.buffer == 0 ? 1 : cfg.buffer;
  std::unique_ptr<zmq_kv_event_publisher> p;
  try {
    i->pub.set(zmq::sockopt::linger, 0);
    i->pub.bind(cfg.endpoint);
    std::string bound = i->pub.get(zmq::sockopt::last_endpoint);
    std::string replay_bound;
    if (!cfg.replay_endpoint.empty()) {
      i->replay = std::make_unique<zmq::socket_t>(i->ctx, zmq::socket_type::router);
      i->replay->set(zmq::sockopt::linger, 0);
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
    impl_->buffer.push_back({seq, topic, std::move(payload)});
    if (impl_->buffer.size() > impl_->capacity) impl_->buffer.pop_front();
  }
  seq_ = seq;
}

void zmq_kv_event_publisher::serve_replay() {
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
      std::vector<kept> out;
      {
        std::lock_guard lk(impl_->mu);
        for (const kept& k : impl_->buffer)
          if (start >= 0 && k.seq >= static_cast<std::uint64_t>(start)) out.push_back(k);
      }
      for (const kept& k : out) {
        s.send(zmq::buffer(id.data(), id.size()), zmq::send_flags::sndmore);
        s.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
        s.send(zmq::buffer(k.topic), zmq::send_flags::sndmore);
        s.send(zmq::buffer(be64(static_cast<std::int64_t>(k.seq))), zmq::send_flags::sndmore);
        s.send(zmq::buffer(k.payload), zmq::send_flags::none);
      }
      s.send(zmq::buffer(id.data(), id.size()), zmq::send_flags::sndmore);
      s.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
      s.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
      s.send(zmq::buffer(be64(-1)), zmq::send_flags::sndmore);
      s.send(zmq::buffer(std::string()), zmq::send_flags::none);
    } catch (const zmq::error_t&) {
      // A client that went away mid-reply: its messages are dropped; serve the next.
    }
  }
}

}  // namespace hc::events
