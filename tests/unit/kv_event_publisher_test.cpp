// The KV events' replay socket (events/zmq_kv_event_publisher.hpp) against DEALER clients:
// a replay is every kept batch from the asked sequence on, in order, then the end marker —
// however many batches and however late the client starts reading — or, for a client
// that does not take it, no end marker (and the next client is served). The kept
// batches are bounded in bytes as well as in count. Before, a ROUTER past its high-water
// mark (1,000 messages) dropped the rest of a replay, end marker included, without a word.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.hpp>

#include <cerrno>
#include <chrono>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "events/zmq_kv_event_publisher.hpp"
#include "tests/support/raw_tcp.hpp"

namespace hc::events {
namespace {

using namespace std::chrono_literals;

std::string be64(std::int64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) >> 8))
    out[static_cast<std::size_t>(i)] = static_cast<char>(static_cast<std::uint64_t>(v) & 0xff);
  return out;
}

std::int64_t from_be64(const zmq::message_t& m) {
  if (m.size() != 8) return -2;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i)
    v = (v << 8) | static_cast<const unsigned char*>(m.data())[i];
  return static_cast<std::int64_t>(v);
}

/// A batch of one stored page of `tokens` tokens.
std::vector<kv_event> page_of(std::size_t tokens, std::int64_t hash) {
  kv_event e;
  e.block_hash = hash;
  e.token_ids.assign(tokens, 7);
  e.block_size = static_cast<std::uint32_t>(tokens);
  return {e};
}

struct replayed {
  std::vector<std::int64_t> sequences;  ///< of the batches, in arrival order
  std::size_t payload_bytes = 0;
  bool ended = false;  ///< the end marker came
};

/// Asks `endpoint` for the batches from `start` on, waits `before_reading`, then reads
/// until the end marker or `quiet` without a message.
replayed replay(zmq::context_t& ctx, const std::string& endpoint, std::int64_t start,
                std::chrono::milliseconds before_reading = 0ms,
                std::chrono::milliseconds quiet = 5000ms) {
  zmq::socket_t d(ctx, zmq::socket_type::dealer);
  d.set(zmq::sockopt::linger, 0);
  d.set(zmq::sockopt::ipv6, endpoint.find("://[") != std::string::npos);
  d.connect(endpoint);
  const std::string s = be64(start);
  d.send(zmq::message_t(), zmq::send_flags::sndmore);
  d.send(zmq::message_t(s.data(), s.size()), zmq::send_flags::none);
  std::this_thread::sleep_for(before_reading);
  replayed out;
  d.set(zmq::sockopt::rcvtimeo, static_cast<int>(quiet.count()));
  for (;;) {
    std::vector<zmq::message_t> parts;
    for (;;) {
      zmq::message_t m;
      if (!d.recv(m)) return out;  // quiet for too long
      const bool more = m.more();
      parts.push_back(std::move(m));
      if (!more) break;
    }
    EXPECT_EQ(parts.size(), 4u);  // ["", topic, sequence, payload]
    if (parts.size() != 4) return out;
    const std::int64_t seq = from_be64(parts[2]);
    if (seq == -1 && parts[1].size() == 0) {
      out.ended = true;
      return out;
    }
    out.sequences.push_back(seq);
    out.payload_bytes += parts[3].size();
  }
}

std::unique_ptr<zmq_kv_event_publisher> start(publisher_config cfg) {
  cfg.endpoint = "tcp://127.0.0.1:*";
  cfg.replay_endpoint = "tcp://127.0.0.1:*";
  auto p = zmq_kv_event_publisher::start(cfg);
  EXPECT_TRUE(p.ok()) << p.err().message;
  return p.ok() ? std::move(*p) : nullptr;
}

/// first, first + 1, ..., last.
std::vector<std::int64_t> from_to(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(last - first + 1));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(KvEventPublisher, AReplayPastTheHighWaterMarkIsWholeEvenIfTheClientReadsLate) {
  auto p = start({});
  ASSERT_TRUE(p);
  for (int i = 1; i <= 5000; ++i)
    p->publish("kv/x/", page_of(64, i));
  ASSERT_EQ(p->last_sequence(), 5000u);
  zmq::context_t ctx;
  const replayed r = replay(ctx, p->replay_endpoint(), 1, 500ms);
  EXPECT_EQ(r.sequences, from_to(1, 5000)) << "got " << r.sequences.size();
  EXPECT_TRUE(r.ended);
  const replayed tail = replay(ctx, p->replay_endpoint(), 4990);
  EXPECT_EQ(tail.sequences, from_to(4990, 5000));
  EXPECT_TRUE(tail.ended);
}

/// Whether this host can listen on the IPv6 loopback (a container may have none).
bool ipv6_loopback() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// An [IPv6] endpoint binds and serves (ZeroMQ said "No such device" without the socket's
// IPv6 option) — the live stream and the replay alike.
TEST(KvEventPublisher, AnIpv6EndpointBindsAndServes) {
  if (!ipv6_loopback()) GTEST_SKIP() << "this host cannot listen on ::1";
  publisher_config cfg;
  cfg.endpoint = "tcp://[::1]:*";
  cfg.replay_endpoint = "tcp://[::1]:*";
  auto p = zmq_kv_event_publisher::start(cfg);
  ASSERT_TRUE(p.ok()) << p.err().message;
  EXPECT_EQ((*p)->endpoint().rfind("tcp://[::1]:", 0), 0u) << (*p)->endpoint();
  for (int i = 1; i <= 3; ++i)
    (*p)->publish("kv/x/", page_of(4, i));
  zmq::context_t ctx;
  const replayed r = replay(ctx, (*p)->replay_endpoint(), 1);
  EXPECT_EQ(r.sequences, from_to(1, 3));
  EXPECT_TRUE(r.ended);
}

TEST(KvEventPublisher, KeptBatchesAreBoundedInBytesAsWellAsInCount) {
  publisher_config cfg;
  cfg.buffer = 1000;
  cfg.buffer_bytes = 64 << 10;
  auto p = start(cfg);
  ASSERT_TRUE(p);
  for (int i = 1; i <= 200; ++i)  // ~4.6 KB a batch (1,024 tokens)
    p->publish("kv/x/", page_of(1024, i));
  zmq::context_t ctx;
  const replayed r = replay(ctx, p->replay_endpoint(), 0);
  ASSERT_TRUE(r.ended);
  ASSERT_FALSE(r.sequences.empty());
  EXPECT_EQ(r.sequences, from_to(r.sequences.front(), 200)) << "the newest, in order";
  EXPECT_LE(r.payload_bytes, cfg.buffer_bytes);
  EXPECT_GE(r.payload_bytes + 2 * 4700, cfg.buffer_bytes) << "as many as fit";

  cfg.buffer = 10;  // the count still bounds them too
  auto q = start(cfg);
  for (int i = 1; i <= 50; ++i)
    q->publish("kv/y/", page_of(8, i));
  EXPECT_EQ(replay(ctx, q->replay_endpoint(), 0).sequences, from_to(41, 50));

  cfg.buffer_bytes = 1000;  // a batch larger than the bound: the newest one stays
  auto big = start(cfg);
  big->publish("kv/z/", page_of(2048, 1));
  big->publish("kv/z/", page_of(2048, 2));
  EXPECT_EQ(replay(ctx, big->replay_endpoint(), 0).sequences, std::vector<std::int64_t>{2});
}

TEST(KvEventPublisher, AClientThatDoesNotReadIsCutOffWithoutTheEndAndOthersAreServed) {
  publisher_config cfg;
  cfg.replay_stall = 300ms;
  auto p = start(cfg);
  ASSERT_TRUE(p);
  for (int i = 1; i <= 3000; ++i)  // ~20 KB a batch: 60 MB, more than the queues on the way
    p->publish("kv/x/", page_of(4096, i));
  zmq::context_t ctx;
  zmq::socket_t stuck(ctx, zmq::socket_type::dealer);  // asks, then reads nothing for 2 s
  stuck.set(zmq::sockopt::linger, 0);
  stuck.set(zmq::sockopt::rcvhwm, 100);
  stuck.connect(p->replay_endpoint());
  const std::string from = be64(1);
  stuck.send(zmq::message_t(), zmq::send_flags::sndmore);
  stuck.send(zmq::message_t(from.data(), from.size()), zmq::send_flags::none);
  std::this_thread::sleep_for(100ms);

  const replayed other = replay(ctx, p->replay_endpoint(), 2900);
  EXPECT_EQ(other.sequences, from_to(2900, 3000)) << "served once the stuck one was cut off";
  EXPECT_TRUE(other.ended);

  std::this_thread::sleep_for(2s);
  stuck.set(zmq::sockopt::rcvtimeo, 500);
  std::size_t batches = 0;
  bool ended = false;
  for (zmq::message_t m; stuck.recv(m);) {
    if (m.more()) continue;  // a batch's last part is its payload, the end's an empty one
    ++batches;
    ended = ended || m.size() == 0;
  }
  EXPECT_LT(batches, 3000u);
  EXPECT_FALSE(ended) << "a cut replay has no end marker";
}

/// A monitor of `s`'s disconnects (set before `s` connects, so that none is missed).
zmq::socket_t watch_disconnects(zmq::context_t& ctx, zmq::socket_t& s, const std::string& name) {
  const std::string monitor = "inproc://" + name;
  EXPECT_EQ(zmq_socket_monitor(s.handle(), monitor.c_str(), ZMQ_EVENT_DISCONNECTED), 0);
  zmq::socket_t events(ctx, zmq::socket_type::pair);
  events.connect(monitor);
  return events;
}

/// Whether the monitor saw the peer drop its socket within `limit`.
bool dropped(zmq::socket_t& events, std::chrono::milliseconds limit) {
  events.set(zmq::sockopt::rcvtimeo, static_cast<int>(limit.count()));
  zmq::message_t event;
  return static_cast<bool>(events.recv(event));
}

/// Sends all of `bytes` (false if the peer went away).
bool send_all(int fd, const std::string& bytes) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

/// Reads exactly `n` bytes (false at the end or an error).
bool read_exactly(int fd, std::size_t n) {
  std::string buf(n, '\0');
  for (std::size_t got = 0; got < n;) {
    const ssize_t k = ::recv(fd, buf.data() + got, n - got, 0);
    if (k <= 0) return false;
    got += static_cast<std::size_t>(k);
  }
  return true;
}

/// A SUB peer spoken by hand (ZMTP 3.0, NULL mechanism, one step at a time as libzmq
/// expects) that subscribes to a topic of `topic_bytes` bytes: libzmq's own SUB keeps its
/// subscriptions in a trie one level per byte, whose teardown overflows the stack of the
/// process that holds a long one. -1 if the handshake failed.
int subscribe_by_hand(const std::string& endpoint, std::size_t topic_bytes) {
  const int fd = test::raw_tcp_connect(endpoint.substr(endpoint.find("://") + 3));
  if (fd < 0) return -1;
  std::string greeting(64, '\0');
  greeting[0] = '\xff';
  greeting[9] = '\x7f';
  greeting[10] = 3;  // version 3.0
  greeting.replace(12, 4, "NULL");
  const std::string ready =
      std::string("\x05READY") + "\x0bSocket-Type" + std::string(3, '\0') + "\x03SUB";
  unsigned char command[2];
  const bool handshake =
      send_all(fd, greeting) && read_exactly(fd, 64) &&
      send_all(fd, std::string("\x04") + static_cast<char>(ready.size()) + ready) &&
      ::recv(fd, command, 2, MSG_WAITALL) == 2 && command[0] == 0x04 &&
      read_exactly(fd, command[1]);
  if (!handshake) {
    ::close(fd);
    return -1;
  }
  const std::string message = "\x01" + std::string(topic_bytes, 'x');  // 1 = subscribe
  (void)send_all(fd, '\x02' + be64(static_cast<std::int64_t>(message.size())) + message);
  return fd;  // dropped while sending or not: what the caller checks
}

// A peer that sends a frame past what a subscription or a replay request takes (4 KiB) is
// dropped rather than buffered: the endpoints usually listen on every interface, and a
// frame's size is the sender's to declare. Other clients are served as before.
TEST(KvEventPublisher, AnOversizedFrameFromAPeerDropsThatPeer) {
  auto p = start({});
  ASSERT_TRUE(p);
  p->publish("kv/x/", page_of(16, 1));
  zmq::context_t ctx;
  const std::string big(1 << 20, 'x');

  zmq::socket_t asker(ctx, zmq::socket_type::dealer);
  asker.set(zmq::sockopt::linger, 0);
  asker.set(zmq::sockopt::reconnect_ivl, 60000);  // one connection: its drop is the event
  zmq::socket_t asker_events = watch_disconnects(ctx, asker, "asker");
  asker.connect(p->replay_endpoint());
  asker.send(zmq::message_t(), zmq::send_flags::sndmore);
  asker.send(zmq::message_t(big.data(), big.size()), zmq::send_flags::none);
  EXPECT_TRUE(dropped(asker_events, 5000ms)) << "the replay socket took 1 MiB";

  const int subscriber = subscribe_by_hand(p->endpoint(), 1 << 20);
  ASSERT_GE(subscriber, 0);
  EXPECT_TRUE(test::closed_by_peer(subscriber, 5000ms))
      << "the PUB socket took a 1 MiB subscription";
  ::close(subscriber);
  const int small = subscribe_by_hand(p->endpoint(), 16);  // the hand-made peer is sound
  ASSERT_GE(small, 0);
  EXPECT_FALSE(test::closed_by_peer(small, 1000ms)) << "a 16-byte subscription was refused";
  ::close(small);

  const replayed other = replay(ctx, p->replay_endpoint(), 1);
  EXPECT_EQ(other.sequences, from_to(1, 1));
  EXPECT_TRUE(other.ended);
}

}  // namespace
}  // namespace hc::events
