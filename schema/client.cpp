#include "schema/client.hpp"

#include "schema/node_connection.hpp"

namespace hc {

using wire_convert::guarded;
namespace wc = wire_convert;

struct client::impl {
  std::shared_ptr<capnp::EzRpcClient> ez;
  wire::CacheNode::Client node = nullptr;
  kj::WaitScope& ws() { return ez->getWaitScope(); }
};

struct client_session::impl {
  std::shared_ptr<capnp::EzRpcClient> ez;  // keeps the loop alive while the session lives
  wire::Session::Client cap = nullptr;
  bool closed = false;
  kj::WaitScope& ws() { return ez->getWaitScope(); }
};

result<std::unique_ptr<client>> client::connect(const std::string& address,
                                                const std::string& token) {
  auto c = wc::connect_node(address, token);
  if (!c) return c.err();
  auto p = std::make_unique<impl>();
  p->ez = std::move(c->ez);
  p->node = std::move(c->node);
  return std::unique_ptr<client>(new client(std::move(p)));
}

client::client(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
client::~client() = default;

result<ping_reply> client::ping() {
  return guarded([&]() -> result<ping_reply> {
    auto r = impl_->node.pingRequest().send().wait(impl_->ws());
    return ping_reply{r.getProtocolVersion(), r.getNodeVersion().cStr()};
  });
}

result<std::unique_ptr<client_session>> client::open(const instance_spec& spec) {
  return guarded([&]() -> result<std::unique_ptr<client_session>> {
    auto req = impl_->node.openRequest();
    wc::put_spec(req.initSpec(), spec);
    auto r = req.send().wait(impl_->ws());
    if (r.getError().getCode() != wire::ErrorCode::OK) {
      error e = wc::get_error(r.getError());
      if (r.getError().getCode() == wire::ErrorCode::UNAUTHENTICATED ||
          r.getError().getCode() == wire::ErrorCode::VERSION_MISMATCH)
        e.code = errc::invalid_config;
      return e;
    }
    auto s = std::make_unique<client_session::impl>();
    s->ez = impl_->ez;
    s->cap = r.getSession();
    return std::unique_ptr<client_session>(
        new client_session(std::move(s), wc::get_pool_info(r.getInfo())));
  });
}

result<std::vector<std::pair<std::string, double>>> client::stats() {
  return guarded([&]() -> result<std::vector<std::pair<std::string, double>>> {
    auto r = impl_->node.statsRequest().send().wait(impl_->ws());
    std::vector<std::pair<std::string, double>> out;
    for (auto s : r.getStats())
      out.emplace_back(s.getName().cStr(), s.getValue());
    return out;
  });
}

result<std::string> client::inspect() {
  return guarded([&]() -> result<std::string> {
    auto r = impl_->node.inspectRequest().send().wait(impl_->ws());
    return std::string(r.getJson().cStr());
  });
}

client_session::client_session(std::unique_ptr<impl> p, pool_info info)
    : impl_(std::move(p)), info_(std::move(info)) {}

client_session::~client_session() {
  if (impl_ && !impl_->closed) (void)close();
}

result<std::vector<command_result>> client_session::step(std::span<const command> cmds) {
  return guarded([&]() -> result<std::vector<command_result>> {
    auto req = impl_->cap.stepRequest();
    auto l = req.initCommands(static_cast<unsigned>(cmds.size()));
    for (unsigned i = 0; i < l.size(); ++i)
      wc::put_command(l[i], cmds[i]);
    auto r = req.send().wait(impl_->ws());
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    std::vector<command_result> out;
    out.reserve(r.getResults().size());
    for (auto x : r.getResults())
      out.push_back(wc::get_result(x));
    return out;
  });
}

result<std::uint64_t> client_session::begin_forward(std::uint64_t batch) {
  return guarded([&]() -> result<std::uint64_t> {
    auto req = impl_->cap.beginForwardRequest();
    req.setBatch(batch);
    auto r = req.send().wait(impl_->ws());
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return r.getWaitedNs();
  });
}

status client_session::end_forward(std::uint64_t batch) {
  return guarded([&]() -> status {
    auto req = impl_->cap.endForwardRequest();
    req.setBatch(batch);
    auto r = req.send().wait(impl_->ws());
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return {};
  });
}

namespace {

template <class Req>
result<std::vector<std::byte>> read_bytes(Req req, kj::WaitScope& ws) {
  return guarded([&]() -> result<std::vector<std::byte>> {
    auto r = req.send().wait(ws);
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    auto d = r.getData();
    const auto* p = reinterpret_cast<const std::byte*>(d.begin());
    return std::vector<std::byte>(p, p + d.size());
  });
}

template <class Req>
status write_bytes(Req req, std::span<const std::byte> data, kj::WaitScope& ws) {
  return guarded([&]() -> status {
    req.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(data.data()), data.size()));
    auto r = req.send().wait(ws);
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return {};
  });
}

}  // namespace

result<std::vector<std::byte>> client_session::read_slot(slot_id s) {
  auto req = impl_->cap.readSlotRequest();
  req.setSlot(s);
  return read_bytes(std::move(req), impl_->ws());
}

status client_session::write_slot(slot_id s, std::span<const std::byte> data) {
  auto req = impl_->cap.writeSlotRequest();
  req.setSlot(s);
  return write_bytes(std::move(req), data, impl_->ws());
}

result<std::vector<std::byte>> client_session::read_kv_page(std::uint64_t page) {
  auto req = impl_->cap.readKvPageRequest();
  req.setPage(page);
  return read_bytes(std::move(req), impl_->ws());
}

status client_session::write_kv_page(std::uint64_t page, std::span<const std::byte> data) {
  auto req = impl_->cap.writeKvPageRequest();
  req.setPage(page);
  return write_bytes(std::move(req), data, impl_->ws());
}

status client_session::close() {
  if (impl_->closed) return {};
  impl_->closed = true;
  return guarded([&]() -> status {
    auto r = impl_->cap.closeRequest().send().wait(impl_->ws());
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return {};
  });
}

}  // namespace hc
