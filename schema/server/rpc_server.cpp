#include "schema/server/rpc_server.hpp"

#include <kj/async-io.h>
#include <kj/async.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <optional>
#include <string>
#include <thread>

#include "actors/common/log.hpp"
#include "actors/common/thread_name.hpp"
#include "gpu/shm_region.hpp"
#include "schema/server/listener.hpp"
#include "schema/server/node_service.hpp"
#include "schema/server/server_context.hpp"
#include "schema/server/unix_socket_path.hpp"

namespace hc {
namespace {

/// What an operator needs of kj's failure to resolve or bind an address: the resolver's
/// or the system call's words, without kj's call text ("DNS lookup failed.; params.host =
/// x; ...; gai_strerror(status) = Name or service not known" -> "host not found (Name or
/// service not known)"; "::bind(sockfd, ...): Address already in use; toString() = ..." ->
/// "Address already in use").
std::string listen_failure(const kj::Exception& e) {
  const std::string d = e.getDescription().cStr();
  constexpr std::string_view gai = "gai_strerror(status) = ";
  if (const auto at = d.find(gai); at != std::string::npos)
    return "host not found (" + d.substr(at + gai.size()) + ")";
  if (const auto call = d.find("): "); d.starts_with("::") && call != std::string::npos)
    return d.substr(call + 3, d.find(';', call) - (call + 3));
  return d;
}

}  // namespace

struct rpc_server::impl {
  impl(node& n, metrics_sink& m) : ctx(n, m) {}
  rpc::server_ctx ctx;
  rpc_server_config cfg;
  std::thread thread;
  const kj::Executor* executor = nullptr;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_fulfiller;
  std::string tcp_bound;
  rpc::socket_file own_socket;  ///< removed at stop only if the path still names it
  bool running = false;

  void main(std::promise<status>& started) {
    name_this_thread("hc-rpc");
    try {
      auto io = kj::setupAsyncIo();
      kj::Own<kj::ConnectionReceiver> unix_listener, tcp_listener;
      rpc::read_limits limits;
      limits.flow_limit_words = cfg.flow_limit_words;
      limits.bounds = {cfg.max_calls_in_flight, cfg.max_reply_backlog_bytes};
      limits.on_pause = [c = &ctx](const std::string& why) {
        c->faults("rpc_backpressure",
                  "stopped reading a connection with " + why +
                      " (a client that floods calls or does not read its replies); it reads "
                      "on once under its bounds");
      };
      auto connections = kj::heap<rpc::connection_set>(
          std::move(limits), io.provider->getTimer(),
          [m = &ctx.metrics](const kj::Exception* e, std::size_t failures) {
            if (e == nullptr) {
              log::info("rpc server: accepting connections again after " +
                        std::to_string(failures) + " failed accepts");
              return;
            }
            m->fault("rpc_accept_error");
            log::warn(std::string("rpc server: cannot accept a connection (") +
                      e->getDescription().cStr() +
                      "); retrying, the clients wait in the backlog — out of file "
                      "descriptors? raise the node's limit (ulimit -n, LimitNOFILE=)");
          });
      connections->on_login_refused([c = &ctx](const std::string& why) {
        c->faults("rpc_login_refused", "a TCP connection was closed without a login: " + why +
                                           " (a client without the token, a scanner, a flood?)");
      });
      rpc::bootstrap_factory unix_boot = [c = &ctx](std::function<void()>) {
        return capnp::Capability::Client(rpc::make_node_service(*c, false));  // its own
      };
      rpc::bootstrap_factory tcp_boot = [c = &ctx](std::function<void()> logged_in) {
        return capnp::Capability::Client(rpc::make_node_service(*c, true, std::move(logged_in)));
      };
      rpc::login_rule tcp_login{true, cfg.login_timeout, cfg.max_waiting_logins};
      kj::Vector<kj::Promise<void>> serving;
      // A listener on `address` (kj's form: "unix:PATH" or "host:port"), or why not.
      auto listen_at = [&](const std::string& address,
                           kj::Own<kj::ConnectionReceiver>& into) -> std::optional<std::string> {
        KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                       into = io.provider->getNetwork()
                                  .parseAddress(address.c_str())
                                  .wait(io.waitScope)
                                  ->listen();
                     })) {
          return listen_failure(*e);
        }
        return std::nullopt;
      };
      if (!cfg.unix_path.empty()) {
        if (status s = rpc::claim_unix_socket_path(cfg.unix_path); !s) {
          started.set_value(s);
          return;
        }
        // Created 0600: only this user may connect (0660 with node_config::group_access:
        // also its group's users).
        const mode_t mode = shm_mode(shm_access_for(ctx.n.config().group_access));
        const mode_t old = ::umask(0777 & ~mode);
        const auto failed = listen_at("unix:" + cfg.unix_path, unix_listener);
        ::umask(old);
        if (failed) {
          started.set_value(error{
              errc::io_error,
              "cannot listen on " + cfg.unix_path + ": " + *failed +
                  (*failed == "No such file or directory" ? " (does its directory exist?)" : "")});
          return;
        }
        ::chmod(cfg.unix_path.c_str(), mode);
        own_socket = rpc::socket_file_at(cfg.unix_path);
        serving.add(connections->listen(*unix_listener, unix_boot));
      }
      if (!cfg.tcp_address.empty()) {
        if (const auto failed = listen_at(cfg.tcp_address, tcp_listener)) {
          unix_listener = nullptr;  // no Unix socket left behind by a node that did not start
          if (!cfg.unix_path.empty()) rpc::release_unix_socket_path(cfg.unix_path, own_socket);
          started.set_value(
              error{errc::io_error, "cannot listen on tcp " + cfg.tcp_address + ": " + *failed});
          return;
        }
        const std::string host = cfg.tcp_address.substr(0, cfg.tcp_address.rfind(':'));
        tcp_bound = host + ":" + std::to_string(tcp_listener->getPort());
        serving.add(connections->listen(*tcp_listener, tcp_boot, tcp_login));
      }
      auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
      stop_fulfiller = kj::mv(paf.fulfiller);
      executor = &kj::getCurrentThreadExecutor();
      started.set_value({});
      paf.promise.exclusiveJoin(kj::joinPromises(serving.releaseAsArray())).wait(io.waitScope);
      // Connections (and every session they hold) die here, while the loop still exists.
      connections = nullptr;
      tcp_listener = nullptr;
      unix_listener = nullptr;
      if (!cfg.unix_path.empty()) rpc::release_unix_socket_path(cfg.unix_path, own_socket);
    } catch (const kj::Exception& e) {
      try {
        started.set_value(
            error{errc::io_error, std::string("rpc server: ") + e.getDescription().cStr()});
      } catch (const std::future_error&) {
        // already started: the loop failed later; nothing to report to start()
      }
    }
  }
};

rpc_server::rpc_server(node& n, metrics_sink& metrics)
    : impl_(std::make_unique<impl>(n, metrics)) {}

rpc_server::~rpc_server() {
  stop();
}

status rpc_server::start(const rpc_server_config& cfg) {
  if (impl_->running) return {errc::invalid_argument, "rpc server already started"};
  if (cfg.unix_path.empty() && cfg.tcp_address.empty())
    return {errc::invalid_config, "no listen address: give a unix socket path or a TCP address"};
  if (!cfg.tcp_address.empty() && cfg.token.empty())
    return {errc::invalid_config, "TCP listening needs a shared-secret token (--token / token=)"};
  impl_->cfg = cfg;
  impl_->ctx.token = cfg.token;
  impl_->ctx.version = cfg.node_version;
  impl_->ctx.store_arena_bytes = cfg.store_arena_bytes;
  impl_->ctx.max_stores = cfg.max_stores;
  impl_->ctx.spin = rpc::spin_policy(cfg.step_spin);
  impl_->ctx.max_store_keys = cfg.max_store_keys;
  std::promise<status> started;
  auto fut = started.get_future();
  impl_->thread = std::thread([this, &started] { impl_->main(started); });
  status s = fut.get();
  if (!s) {
    impl_->thread.join();
    return s;
  }
  impl_->running = true;
  return {};
}

std::string rpc_server::tcp_address() const {
  return impl_->tcp_bound;
}

void rpc_server::stop() {
  if (!impl_ || !impl_->running) return;
  impl_->running = false;
  impl_->stop_fulfiller->fulfill();
  impl_->thread.join();
}

}  // namespace hc
