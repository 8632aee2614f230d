#pragma once
// The connections of the RPC server: each accepted stream gets its own two-party RPC
// system with the flow limit and read backpressure (bounded_message_stream); a connection
// ends on its own when its client disconnects, which drops its capabilities (and closes its
// sessions).

#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "schema/server/bounded_message_stream.hpp"

namespace hc::rpc {

/// How a connection reads: Cap'n Proto's flow limit (words of unanswered calls) and the
/// bounds of bounded_message_stream; `on_pause` hears each time one stops reading, and why.
struct read_limits {
  std::size_t flow_limit_words = std::size_t{8} << 20;
  read_bounds bounds;
  std::function<void(const std::string& why)> on_pause;
};

/// What a listener serves each connection: its bootstrap capability, built per connection
/// (`logged_in`: what a locked bootstrap calls when the client logged in).
using bootstrap_factory = std::function<capnp::Capability::Client(std::function<void()> logged_in)>;

/// For a listener whose clients must log in (TCP): a connection that has not logged in
/// within `within` is closed, and while `max_waiting` connections wait to log in a new one
/// is closed at once — so connections without the token (a scanner, a flood) cannot hold
/// the node's file descriptors, which its Unix-socket clients and its L3 store need too.
struct login_rule {
  bool required = false;
  std::chrono::milliseconds within{10'000};
  std::size_t max_waiting = 256;
};

/// One client connection: its two-party network and RPC system, reading under `limits`.
/// Dropping it drops the client's capabilities, which closes its sessions.
struct connection {
  connection(kj::Own<kj::AsyncIoStream>&& s, capnp::Capability::Client bootstrap, kj::Timer& timer,
             const read_limits& limits)
      : stream(kj::mv(s)),
        messages(*stream, timer, limits.bounds, limits.on_pause),
        network(messages, capnp::rpc::twoparty::Side::SERVER),
        rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {
    messages.set_backlog_source([this] { return network.getCurrentQueueSize(); });
    rpc.setFlowLimit(limits.flow_limit_words);
  }
  kj::Own<kj::AsyncIoStream> stream;
  bounded_message_stream messages;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

/// Owns every live connection; each ends on its own when the client disconnects.
///
/// A failed accept does not end the listener: out of file descriptors (EMFILE / ENFILE, a
/// burst of clients past `ulimit -n`) or kernel memory, the connection waits in the
/// backlog, so accepting again at once would spin; the loop pauses (5 ms, doubling to 1 s
/// while the failures last, as Go's net/http server does) and goes on. `on_accept_error`
/// hears the first failure of a streak (`failures` = 1) and the first success after one
/// (`e` = null, `failures` = how many there were).
class connection_set final : private kj::TaskSet::ErrorHandler {
 public:
  using accept_observer = std::function<void(const kj::Exception* e, std::size_t failures)>;
  connection_set(read_limits limits, kj::Timer& timer, accept_observer on_accept_error)
      : limits_(std::move(limits)),
        timer_(timer),
        on_accept_error_(std::move(on_accept_error)),
        tasks_(*this) {}

  /// Serves every connection `l` accepts with `bootstrap(...)`, under `login`.
  kj::Promise<void> listen(kj::ConnectionReceiver& l, bootstrap_factory bootstrap,
                           login_rule login = {}) {
    // evalNow: kj's accept() makes the syscall at once, and throws when it fails.
    return kj::evalNow([&l] { return l.accept(); })
        .then(
            [this, &l, bootstrap,
             login](kj::Own<kj::AsyncIoStream>&& s) mutable -> kj::Promise<void> {
              // Serving it needs more descriptors than the accepted one (kj registers it with
              // its event port): a failure here is a failed accept too, and drops the stream.
              KJ_IF_MAYBE (e,
                           kj::runCatchingExceptions([&] { serve(kj::mv(s), bootstrap, login); })) {
                return retry(l, kj::mv(bootstrap), login, *e);
              }
              if (failures_ > 0 && on_accept_error_) on_accept_error_(nullptr, failures_);
              failures_ = 0;
              return listen(l, kj::mv(bootstrap), login);
            },
            [this, &l, bootstrap, login](kj::Exception&& e) mutable {
              return retry(l, kj::mv(bootstrap), login, e);
            });
  }
  /// Called for each connection closed for want of a login (late, or too many waiting),
  /// with which of the two it was.
  void on_login_refused(std::function<void(const std::string& why)> f) {
    on_login_refused_ = std::move(f);
  }

 private:
  void serve(kj::Own<kj::AsyncIoStream>&& s, const bootstrap_factory& bootstrap,
             const login_rule& login) {
    if (!login.required) {
      auto c = kj::heap<connection>(kj::mv(s), bootstrap({}), timer_, limits_);
      auto done = c->network.onDisconnect();
      tasks_.add(done.attach(kj::mv(c)));
      return;
    }
    if (waiting_ >= login.max_waiting) {
      if (on_login_refused_)
        on_login_refused_(std::to_string(waiting_) +
                          " other connections were already waiting to log in");
      return;  // dropping the stream closes it
    }
    // `waiting` is true until the client logged in, timed out or left; then the count is
    // given back once.
    auto waiting = std::make_shared<bool>(true);
    ++waiting_;
    auto stop_waiting = [this, waiting] {
      if (!*waiting) return;
      *waiting = false;
      --waiting_;
    };
    auto c = kj::heap<connection>(kj::mv(s), bootstrap(stop_waiting), timer_, limits_);
    tasks_.add(c->network.onDisconnect()
                   .exclusiveJoin(timer_.afterDelay(login.within.count() * kj::MILLISECONDS)
                                      .then([this, waiting, login]() -> kj::Promise<void> {
                                        if (!*waiting) return kj::NEVER_DONE;  // serve on
                                        if (on_login_refused_)
                                          on_login_refused_("none within " +
                                                            std::to_string(login.within.count()) +
                                                            " ms");
                                        return kj::READY_NOW;  // ends it
                                      }))
                   // A copy: then() would keep a reference to the local lambda.
                   .then([stop_waiting] { stop_waiting(); })
                   .attach(kj::mv(c)));
  }
  kj::Promise<void> retry(kj::ConnectionReceiver& l, bootstrap_factory bootstrap, login_rule login,
                          const kj::Exception& e) {
    if (++failures_ == 1 && on_accept_error_) on_accept_error_(&e, failures_);
    const std::uint64_t pause_ms =
        std::min<std::uint64_t>(1000, std::uint64_t{5} << std::min<std::size_t>(failures_ - 1, 8));
    return timer_.afterDelay(pause_ms * kj::MILLISECONDS)
        .then(
            [this, &l, bootstrap, login]() mutable { return listen(l, kj::mv(bootstrap), login); });
  }

  void taskFailed(kj::Exception&&) override {}  // a broken connection ends only itself
  read_limits limits_;
  kj::Timer& timer_;
  accept_observer on_accept_error_;
  std::size_t failures_ = 0;  ///< consecutive failed accepts (all listeners)
  std::size_t waiting_ = 0;   ///< connections waiting to log in (all listeners)
  std::function<void(const std::string&)> on_login_refused_;
  kj::TaskSet tasks_;
};

}  // namespace hc::rpc
