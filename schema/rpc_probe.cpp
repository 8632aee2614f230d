#include "schema/rpc_probe.hpp"

#include <deque>

#include "schema/node_connection.hpp"

namespace hc {

struct rpc_probe::impl {
  std::shared_ptr<wire_convert::rpc_channel> channel;
  wire::CacheNode::Client node = nullptr;
  wire::Session::Client session = nullptr;
  bool has_session = false;
  call kind = call::ping;
  std::deque<kj::Promise<void>> inflight;

  kj::Promise<void> send() {
    if (kind == call::ping) return node.pingRequest().send().ignoreResult();
    auto req = session.stepRequest();
    wire_convert::put_command(req.initCommands(1)[0], cmd::evict{});
    return req.send().ignoreResult();
  }
};

using wire_convert::guarded;

rpc_probe::rpc_probe(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
rpc_probe::~rpc_probe() {
  (void)drain();
}

result<std::unique_ptr<rpc_probe>> rpc_probe::connect(const std::string& address,
                                                      const std::string& token) {
  auto c = wire_convert::connect_node(address, token);
  if (!c) return c.err();
  auto p = std::make_unique<impl>();
  p->channel = std::move(c->channel);
  p->node = std::move(c->node);
  return std::unique_ptr<rpc_probe>(new rpc_probe(std::move(p)));
}

status rpc_probe::open(const instance_spec& spec) {
  return guarded([&]() -> status {
    auto req = impl_->node.openRequest();
    if (status fits = wire_convert::put_spec(req.initSpec(), spec); !fits) return fits;
    auto r = req.send().wait(impl_->channel->wait_scope());
    if (r.getError().getCode() != wire::ErrorCode::OK) return wire_convert::get_error(r.getError());
    impl_->session = r.getSession();
    impl_->has_session = true;
    return {};
  });
}

status rpc_probe::start(call kind, std::size_t window) {
  if (kind == call::small_step && !impl_->has_session)
    return {errc::invalid_argument, "small_step needs open() first"};
  if (status s = drain(); !s) return s;
  impl_->kind = kind;
  return guarded([&]() -> status {
    for (std::size_t i = 0; i < window; ++i)
      impl_->inflight.push_back(impl_->send());
    return {};
  });
}

status rpc_probe::complete_one() {
  if (impl_->inflight.empty()) return {errc::invalid_argument, "no call in flight"};
  return guarded([&]() -> status {
    impl_->inflight.front().wait(impl_->channel->wait_scope());
    impl_->inflight.pop_front();
    impl_->inflight.push_back(impl_->send());
    return {};
  });
}

status rpc_probe::drain() {
  return guarded([&]() -> status {
    while (!impl_->inflight.empty()) {
      auto p = std::move(impl_->inflight.front());
      impl_->inflight.pop_front();
      p.wait(impl_->channel->wait_scope());
    }
    return {};
  });
}

}  // namespace hc
