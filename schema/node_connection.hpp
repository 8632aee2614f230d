#pragma once
// Internal to schema/: opening a Cap'n Proto connection to a node (login for TCP, then a
// ping so a dead address fails at once), waiting for a call with an optional deadline and
// interrupt check, and turning kj exceptions into io_error (timeout for a missed deadline,
// interrupted for a stopped wait). Shared by the
// client library and the hcbench probe.

#include <kj/async-io.h>
#include <kj/exception.h>
#include <kj/io.h>
#include <kj/timer.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "actors/common/status.hpp"
#include "schema/client.hpp"  // interrupt_check
#include "schema/convert.hpp"
#include "schema/rpc_channel.hpp"
#include "schema/socket_connect.hpp"

namespace hc::wire_convert {

/// What wait_call throws when a call's deadline passed (the call is then cancelled).
struct call_timed_out {
  std::chrono::milliseconds after;
};

/// What wait_call throws when its interrupt check said stop (the call is then cancelled).
struct call_interrupted {};

/// What checked_send throws for a call too large for one Cap'n Proto message.
struct message_too_large {
  std::uint64_t words;
};

/// The most 8-byte words one message may carry: Cap'n Proto's default traversal limit
/// (64 MiB), which the node reads with. A little is left for the RPC call's own framing.
inline constexpr std::uint64_t max_message_words = 8 * 1024 * 1024 - 1024;

/// Sends req, or throws message_too_large when it could not be sent as one message (kj
/// would refuse it with an I/O error that reads like a lost connection).
template <class Request>
auto checked_send(Request& req) {
  const std::uint64_t words = req.totalSize().wordCount;
  if (words > max_message_words) throw message_too_large{words};
  return req.send();
}

/// Whether kj's exception is the peer closing or resetting the connection. kj also gives
/// framing errors (a peer that is not a node: "too many segments") the DISCONNECTED type.
inline bool peer_went_away(const kj::Exception& e) {
  if (e.getType() != kj::Exception::Type::DISCONNECTED) return false;
  const kj::StringPtr what = e.getDescription();
  for (const char* said : {"Peer disconnected", "reset by peer", "Broken pipe", "EOF"})
    if (std::string_view(what.cStr()).find(said) != std::string_view::npos) return true;
  return false;
}

/// Runs f(); a kj exception (disconnect, server-side failure) becomes io_error (a disconnect
/// saying that the node closed the connection), a missed deadline timeout, a call too large
/// to send invalid_argument.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const call_timed_out& t) {
    return error{errc::timeout,
                 "no answer within " + std::to_string(t.after.count()) + " ms (call cancelled)"};
  } catch (const call_interrupted&) {
    return error{errc::interrupted,
                 "the caller was interrupted while it waited (call cancelled; a step may "
                 "still have run on the node)"};
  } catch (const message_too_large& m) {
    return error{errc::invalid_argument,
                 "the call is " + std::to_string(m.words * 8) +
                     " bytes, more than one message may carry (64 MiB): split it (fewer "
                     "commands or tokens per step, prompts by reference, smaller store batches)"};
  } catch (const kj::Exception& e) {
    if (peer_went_away(e))
      return error{errc::io_error,
                   std::string("the node closed the connection (it stopped or restarted, or "
                               "dropped this client): ") +
                       e.getDescription().cStr()};
    return error{errc::io_error, std::string("rpc: ") + e.getDescription().cStr()};
  }
}

/// Asks `check` every interrupt_check_interval until it says stop: then sets `stopped` and
/// fails.
template <class T>
kj::Promise<T> poll_interrupt(kj::Timer& timer, const interrupt_check& check, bool& stopped) {
  return timer.afterDelay(interrupt_check_interval.count() * kj::MILLISECONDS)
      .then([&timer, &check, &stopped]() -> kj::Promise<T> {
        if (check()) {
          stopped = true;
          return KJ_EXCEPTION(FAILED, "call interrupted");
        }
        return poll_interrupt<T>(timer, check, stopped);
      });
}

/// Waits for a call's answer on the connection's loop; with a deadline (> 0) the call is
/// cancelled when it passes and call_timed_out thrown; with an interrupt check, asked
/// every interrupt_check_interval on this thread, the call is cancelled when it returns true and
/// call_interrupted thrown. The loop stays usable either way.
template <class T>
T wait_call(rpc_channel& channel, std::chrono::milliseconds deadline, kj::Promise<T>&& p,
            const interrupt_check& interrupted = {}) {
  if (deadline.count() <= 0 && !interrupted) return p.wait(channel.wait_scope());
  bool late = false, stopped = false;
  if (deadline.count() > 0) {
    // From the clock, not the timer's now(): that is the time of the loop's last wait, and
    // a client's loop waits only inside its calls — after an idle spell longer than the
    // deadline, afterDelay() would have fired at once and failed a call that was never late.
    const kj::TimePoint due =
        kj::systemPreciseMonotonicClock().now() + deadline.count() * kj::MILLISECONDS;
    p = p.exclusiveJoin(channel.timer().atTime(due).then([&late]() -> kj::Promise<T> {
      late = true;
      return KJ_EXCEPTION(OVERLOADED, "call deadline passed");
    }));
  }
  if (interrupted) p = p.exclusiveJoin(poll_interrupt<T>(channel.timer(), interrupted, stopped));
  try {
    return p.wait(channel.wait_scope());
  } catch (const kj::Exception&) {
    if (stopped) throw call_interrupted{};
    if (late) throw call_timed_out{deadline};
    throw;
  }
}

struct node_connection {
  std::shared_ptr<rpc_channel> channel;
  wire::CacheNode::Client node = nullptr;
};

/// A channel to `address` ("unix:/path" or "host:port"), nothing sent yet: the node's
/// bootstrap is `channel->node()`. `deadline` (> 0) bounds the connect.
inline result<std::shared_ptr<rpc_channel>> open_channel(const std::string& address,
                                                         std::chrono::milliseconds deadline = {},
                                                         const interrupt_check& interrupted = {}) {
  auto socket = connect_stream_socket(address, deadline, interrupted);
  if (!socket) return socket.err();
  kj::AutoCloseFd fd(*socket);
  return guarded([&]() -> result<std::shared_ptr<rpc_channel>> {
    return std::make_shared<rpc_channel>(kj::mv(fd));
  });
}

/// address: "unix:/path" or "host:port"; a non-empty `token` logs in (TCP). `deadline`
/// (> 0) bounds the connect, the login and the ping, each; `interrupted` may stop each
/// of their waits (wait_call, connect_stream_socket).
inline result<node_connection> connect_node(const std::string& address, const std::string& token,
                                            std::chrono::milliseconds deadline = {},
                                            const interrupt_check& interrupted = {}) {
  auto channel = open_channel(address, deadline, interrupted);
  if (!channel) return channel.err();
  auto connected = guarded([&]() -> result<node_connection> {
    node_connection c;
    c.channel = std::move(*channel);
    c.node = c.channel->node();
    if (!token.empty()) {
      auto req = c.node.loginRequest();
      req.setToken(text(token));
      auto resp = wait_call(*c.channel, deadline, req.send(), interrupted);
      if (resp.getError().getCode() != wire::ErrorCode::OK)
        return error{errc::invalid_argument,
                     "login refused: " + std::string(resp.getError().getMessage().cStr())};
      c.node = resp.getNode();
    }
    // Fail fast when the node needs a login this connection did not make, or when what
    // answers is not a node.
    auto ping = wait_call(*c.channel, deadline, c.node.pingRequest().send(), interrupted);
    if (ping.getError().getCode() != wire::ErrorCode::OK) return get_error(ping.getError());
    return c;
  });
  // A peer that is not a node (an HTTP server such as the node's --metrics port) answers
  // bytes that kj reads as a message of absurd size or segment count.
  if (!connected && connected.err().code == errc::io_error &&
      (connected.err().message.find("too many segments") != std::string::npos ||
       connected.err().message.find("traversalLimitInWords") != std::string::npos))
    return error{errc::io_error, address +
                                     " did not answer as a hybridcache node: its bytes are not "
                                     "a Cap'n Proto message (an HTTP server — the node's "
                                     "--metrics address? — or another service); " +
                                     connected.err().message};
  return connected;
}

}  // namespace hc::wire_convert
