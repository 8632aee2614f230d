#include "schema/client.hpp"

#include <optional>
#include <utility>

#include "gpu/shm_region.hpp"
#include "schema/node_connection.hpp"
#include "schema/store_parts.hpp"

namespace hc {

using wire_convert::guarded;
namespace wc = wire_convert;

/// The connection's event loop and call deadline, shared by the client and its sessions
/// and stores (each keeps the loop alive while it lives).
struct rpc_link {
  std::shared_ptr<wc::rpc_channel> channel;
  std::chrono::milliseconds deadline{0};
  interrupt_check interrupted;
  template <class T>
  T wait(kj::Promise<T>&& p) {
    return wc::wait_call(*channel, deadline, kj::mv(p), interrupted);
  }
};

struct client::impl {
  std::shared_ptr<rpc_link> link;
  wire::CacheNode::Client node = nullptr;
};

struct client_session::impl {
  std::shared_ptr<rpc_link> link;
  wire::Session::Client cap = nullptr;
  bool closed = false;
  /// The batch this session's last begin_forward began and no end_forward ended yet, as
  /// far as this client knows (cleared when a fence call's answer was lost: unknown).
  std::optional<std::uint64_t> in_flight;
};

result<std::unique_ptr<client>> client::connect(const std::string& address,
                                                const std::string& token,
                                                std::chrono::milliseconds call_timeout,
                                                interrupt_check interrupted) {
  auto c = wc::connect_node(address, token, call_timeout, interrupted);
  if (!c) return c.err();
  auto p = std::make_unique<impl>();
  p->link = std::make_shared<rpc_link>(
      rpc_link{std::move(c->channel), call_timeout, std::move(interrupted)});
  p->node = std::move(c->node);
  return std::unique_ptr<client>(new client(std::move(p)));
}

client::client(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
client::~client() = default;

void client::sever() noexcept {
  impl_->link->channel->sever();
}

void client::set_call_timeout(std::chrono::milliseconds t) noexcept {
  impl_->link->deadline = t;
}

void client::set_interrupt_check(interrupt_check check) {
  impl_->link->interrupted = std::move(check);
}

result<ping_reply> client::ping() {
  return guarded([&]() -> result<ping_reply> {
    auto r = impl_->link->wait(impl_->node.pingRequest().send());
    if (r.getError().getCode() != wire::ErrorCode::OK) return wc::get_error(r.getError());
    return ping_reply{r.getProtocolVersion(), r.getNodeVersion().cStr()};
  });
}

result<std::unique_ptr<client_session>> client::open(const instance_spec& spec) {
  return guarded([&]() -> result<std::unique_ptr<client_session>> {
    auto req = impl_->node.openRequest();
    if (status fits = wc::put_spec(req.initSpec(), spec); !fits) return fits.err();
    auto r = impl_->link->wait(wc::checked_send(req));
    if (r.getError().getCode() != wire::ErrorCode::OK) {
      error e = wc::get_error(r.getError());
      if (r.getError().getCode() == wire::ErrorCode::UNAUTHENTICATED ||
          r.getError().getCode() == wire::ErrorCode::VERSION_MISMATCH)
        e.code = errc::invalid_config;
      return e;
    }
    auto s = std::make_unique<client_session::impl>();
    s->link = impl_->link;
    s->cap = r.getSession();
    return std::unique_ptr<client_session>(
        new client_session(std::move(s), wc::get_pool_info(r.getInfo())));
  });
}

result<std::vector<std::pair<std::string, double>>> client::stats() {
  return guarded([&]() -> result<std::vector<std::pair<std::string, double>>> {
    auto r = impl_->link->wait(impl_->node.statsRequest().send());
    if (r.getError().getCode() != wire::ErrorCode::OK) return wc::get_error(r.getError());
    std::vector<std::pair<std::string, double>> out;
    for (auto s : r.getStats())
      out.emplace_back(s.getName().cStr(), s.getValue());
    return out;
  });
}

result<std::string> client::inspect(bool blocks) {
  return guarded([&]() -> result<std::string> {
    auto req = impl_->node.inspectRequest();
    req.setBlocks(blocks);
    auto r = impl_->link->wait(wc::checked_send(req));
    if (r.getError().getCode() != wire::ErrorCode::OK) return wc::get_error(r.getError());
    return std::string(r.getJson().cStr());
  });
}

status client::drain() {
  return guarded([&]() -> status {
    auto r = impl_->link->wait(impl_->node.drainRequest().send());
    if (r.getError().getCode() != wire::ErrorCode::OK) return wc::get_error(r.getError());
    return {};
  });
}

client_session::client_session(std::unique_ptr<impl> p, pool_info info)
    : impl_(std::move(p)), info_(std::move(info)) {}

client_session::~client_session() {
  if (impl_ && !impl_->closed) (void)close();
}

result<std::vector<command_result>> client_session::step(std::span<const command> cmds) {
  return guarded([&]() -> result<std::vector<command_result>> {
    auto req = impl_->cap.stepRequest(wc::step_request_size(cmds));
    auto l = req.initCommands(static_cast<unsigned>(cmds.size()));
    for (unsigned i = 0; i < l.size(); ++i)
      wc::put_command(l[i], cmds[i]);
    auto r = impl_->link->wait(wc::checked_send(req));
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    std::vector<command_result> out;
    out.reserve(r.getResults().size());
    for (auto x : r.getResults())
      out.push_back(wc::get_result(x));
    return out;
  });
}

namespace {

/// A call that failed this way may or may not have run on the node: its answer was lost
/// (the connection), not waited for (the deadline) or given up on (an interrupt).
bool answer_unknown(errc code) {
  return code == errc::timeout || code == errc::io_error || code == errc::interrupted;
}

}  // namespace

result<std::uint64_t> client_session::begin_forward(std::uint64_t batch) {
  // The node makes a later batch's begin wait for the end of the one in flight (an
  // asynchronous client may send that end meanwhile). This client waits for each answer,
  // and only it can end this session's forwards: such a begin would wait for its deadline
  // and then fail. Refused here, at once, saying what to call first. (An earlier or the
  // same batch goes to the node, which refuses it itself: batches must increase.)
  if (impl_->in_flight && batch > *impl_->in_flight)
    return error{errc::invalid_argument,
                 "begin_forward(" + std::to_string(batch) + "): forward " +
                     std::to_string(*impl_->in_flight) +
                     " of this session has not ended; call end_forward(" +
                     std::to_string(*impl_->in_flight) +
                     ") first (this client makes one call at a time, so the node would wait "
                     "for an end it cannot receive)"};
  auto begun = guarded([&]() -> result<std::uint64_t> {
    auto req = impl_->cap.beginForwardRequest();
    req.setBatch(batch);
    auto r = impl_->link->wait(wc::checked_send(req));
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return r.getWaitedNs();
  });
  if (begun.ok())
    impl_->in_flight = batch;
  else if (answer_unknown(begun.err().code))
    impl_->in_flight.reset();  // whether the node began it is unknown
  return begun;
}

status client_session::end_forward(std::uint64_t batch) {
  auto ended = guarded([&]() -> status {
    auto req = impl_->cap.endForwardRequest();
    req.setBatch(batch);
    auto r = impl_->link->wait(wc::checked_send(req));
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return {};
  });
  if (ended.ok() || answer_unknown(ended.err().code)) impl_->in_flight.reset();
  return ended;
}

namespace {

template <class Req>
result<std::vector<std::byte>> read_bytes(Req req, rpc_link& link) {
  return guarded([&]() -> result<std::vector<std::byte>> {
    auto r = link.wait(wc::checked_send(req));
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    auto d = r.getData();
    const auto* p = reinterpret_cast<const std::byte*>(d.begin());
    return std::vector<std::byte>(p, p + d.size());
  });
}

template <class Req>
status write_bytes(Req req, std::span<const std::byte> data, rpc_link& link) {
  return guarded([&]() -> status {
    req.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(data.data()), data.size()));
    auto r = link.wait(wc::checked_send(req));
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return {};
  });
}

}  // namespace

result<std::vector<std::byte>> client_session::read_slot(slot_id s) {
  auto req = impl_->cap.readSlotRequest();
  req.setSlot(s);
  return read_bytes(std::move(req), *impl_->link);
}

status client_session::write_slot(slot_id s, std::span<const std::byte> data) {
  auto req = impl_->cap.writeSlotRequest();
  req.setSlot(s);
  return write_bytes(std::move(req), data, *impl_->link);
}

result<std::vector<std::byte>> client_session::read_kv_page(std::uint64_t page) {
  auto req = impl_->cap.readKvPageRequest();
  req.setPage(page);
  return read_bytes(std::move(req), *impl_->link);
}

status client_session::write_kv_page(std::uint64_t page, std::span<const std::byte> data) {
  auto req = impl_->cap.writeKvPageRequest();
  req.setPage(page);
  return write_bytes(std::move(req), data, *impl_->link);
}

status client_session::close() {
  if (impl_->closed) return {};
  impl_->closed = true;
  return guarded([&]() -> status {
    auto r = impl_->link->wait(impl_->cap.closeRequest().send());
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return {};
  });
}

struct client_store::impl {
  std::shared_ptr<rpc_link> link;
  wire::Store::Client cap = nullptr;
  shm_region arena;
  std::size_t max_keys = 0;
};

client_store::client_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
client_store::~client_store() = default;

std::span<std::byte> client_store::arena() const noexcept {
  return impl_->arena.bytes();
}

const std::string& client_store::arena_name() const noexcept {
  return impl_->arena.name();
}

std::size_t client_store::max_keys() const noexcept {
  return impl_->max_keys;
}

result<std::unique_ptr<client_store>> client::open_store(const std::string& identity) {
  return guarded([&]() -> result<std::unique_ptr<client_store>> {
    auto req = impl_->node.storeRequest();
    req.setIdentity(wc::text(identity));
    auto r = impl_->link->wait(wc::checked_send(req));
    if (r.getError().getCode() != wire::ErrorCode::OK) return wc::get_error(r.getError());
    auto s = std::make_unique<client_store::impl>();
    s->link = impl_->link;
    s->cap = r.getStore();
    auto a = impl_->link->wait(s->cap.arenaRequest().send());
    if (a.getError().getCode() != wire::ErrorCode::OK) return wc::get_error(a.getError());
    auto m = shm_region::map(a.getShm().cStr(), a.getBytes());
    if (!m) return m.err();
    s->arena = std::move(*m);
    // A node from before the field says 0: its limit was a fixed 65536.
    s->max_keys = a.getMaxKeys() != 0 ? a.getMaxKeys() : 65536;
    return std::unique_ptr<client_store>(new client_store(std::move(s)));
  });
}

namespace {

wire::StorePool pool_to_wire(store_pool p) {
  return p == store_pool::kv_page ? wire::StorePool::KV_PAGE : wire::StorePool::SSM_STATE;
}

template <class Req>
void put_entries(Req& req, std::span<const store_entry> entries) {
  auto l = req.initEntries(static_cast<unsigned>(entries.size()));
  for (unsigned i = 0; i < l.size(); ++i) {
    l[i].setKey(wc::text(entries[i].key));
    auto segs = l[i].initSegments(static_cast<unsigned>(entries[i].segments.size()));
    for (unsigned k = 0; k < segs.size(); ++k) {
      segs[k].setOffset(entries[i].segments[k].offset);
      segs[k].setLength(entries[i].segments[k].length);
    }
  }
}

template <class Resp>
result<std::vector<bool>> ok_list(Resp& r) {
  error e = wc::get_error(r.getError());
  if (e.code != errc::ok) return e;
  std::vector<bool> out;
  for (bool b : r.getOk())
    out.push_back(b);
  return out;
}

}  // namespace

result<store_exists_reply> client_store::exists(std::span<const std::string> kv_keys,
                                                std::span<const store_sidecar> sidecars) {
  return guarded([&]() -> result<store_exists_reply> {
    auto req = impl_->cap.existsRequest();
    auto k = req.initKvKeys(static_cast<unsigned>(kv_keys.size()));
    for (unsigned i = 0; i < k.size(); ++i)
      k.set(i, wc::text(kv_keys[i]));
    auto q = req.initSidecars(static_cast<unsigned>(sidecars.size()));
    for (unsigned i = 0; i < q.size(); ++i) {
      q[i].setPool(pool_to_wire(sidecars[i].which));
      q[i].setPolicy(sidecars[i].trailing ? wire::HitPolicy::TRAILING_PAGES
                                          : wire::HitPolicy::ALL_PAGES);
      q[i].setTrailing(sidecars[i].n);
      q[i].setKeySuffix(wc::text(sidecars[i].key_suffix));
    }
    auto r = impl_->link->wait(wc::checked_send(req));
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    store_exists_reply out;
    out.kv_hit_pages = r.getKvHitPages();
    for (std::uint32_t p : r.getRestorablePrefixPages())
      out.restorable_pages.push_back(p);
    return out;
  });
}

result<std::vector<bool>> client_store::get(store_pool pool, std::span<const store_entry> entries) {
  return guarded([&]() -> result<std::vector<bool>> {
    auto req = impl_->cap.getRequest();
    req.setPool(pool_to_wire(pool));
    put_entries(req, entries);
    auto r = impl_->link->wait(wc::checked_send(req));
    return ok_list(r);
  });
}

result<std::uint64_t> client_store::clear() {
  return guarded([&]() -> result<std::uint64_t> {
    auto r = impl_->link->wait(impl_->cap.clearRequest().send());
    error e = wc::get_error(r.getError());
    if (e.code != errc::ok) return e;
    return r.getRemoved();
  });
}

result<std::vector<bool>> client_store::set(store_pool pool, std::span<const store_entry> entries) {
  return guarded([&]() -> result<std::vector<bool>> {
    auto req = impl_->cap.setRequest();
    req.setPool(pool_to_wire(pool));
    put_entries(req, entries);
    auto r = impl_->link->wait(wc::checked_send(req));
    return ok_list(r);
  });
}

namespace {

/// The parts of a set_from / get_into whose input passed store_parts::check.
result<std::vector<store_parts::part>> plan(std::span<const store_entry> entries,
                                            std::span<const std::uintptr_t> addresses,
                                            std::uint64_t arena_bytes, std::uint64_t part_bytes,
                                            std::size_t max_keys) {
  if (status s = store_parts::check(entries, addresses, arena_bytes); !s) return s.err();
  return store_parts::split(entries, part_bytes, max_keys);
}

/// The call of one part at a time in flight, and the bools of the parts answered so far.
template <class Request>
class part_calls {
 public:
  part_calls(rpc_link& link, store_pool pool, std::span<const store_entry> entries)
      : link_(link), pool_(pool), entries_(entries) {
    out_.reserve(entries.size());
  }
  bool in_flight() const noexcept { return pending_.has_value(); }
  /// Sends `req` for part p's entries and pushes it out on the socket (the client's stream
  /// writes a loop turn's messages when the loop is about to wait): the node starts on it
  /// while this thread copies.
  void send(Request req, const store_parts::part& p) {
    req.setPool(pool_to_wire(pool_));
    put_entries(req, entries_.subspan(p.first, p.last - p.first));
    pending_.emplace(wc::checked_send(req));
    link_.channel->wait_scope().poll();
  }
  /// Waits for the call in flight: its part's bools (also added to all()).
  result<std::vector<bool>> finish() {
    auto r = link_.wait(kj::mv(*pending_));
    pending_.reset();
    auto got = ok_list(r);
    if (got) out_.insert(out_.end(), got->begin(), got->end());
    return got;
  }
  std::vector<bool>& all() noexcept { return out_; }

 private:
  rpc_link& link_;
  store_pool pool_;
  std::span<const store_entry> entries_;
  std::optional<decltype(std::declval<Request>().send())> pending_;
  std::vector<bool> out_;
};

}  // namespace

result<std::vector<bool>> client_store::set_from(store_pool pool,
                                                 std::span<const store_entry> entries,
                                                 std::span<const std::uintptr_t> addresses,
                                                 std::uint64_t part_bytes) {
  auto parts = plan(entries, addresses, impl_->arena.bytes().size(), part_bytes, impl_->max_keys);
  if (!parts) return parts.err();
  return guarded([&]() -> result<std::vector<bool>> {
    part_calls<decltype(impl_->cap.setRequest())> calls(*impl_->link, pool, entries);
    for (std::size_t k = 0; k < parts->size(); ++k) {
      const store_parts::part& p = (*parts)[k];
      if (calls.in_flight() && !store_parts::disjoint(p, (*parts)[k - 1]))
        if (auto r = calls.finish(); !r) return r.err();  // the node still reads that range
      store_parts::copy_in(p, entries, addresses, impl_->arena.bytes());
      if (calls.in_flight())
        if (auto r = calls.finish(); !r) return r.err();
      calls.send(impl_->cap.setRequest(), p);
    }
    if (calls.in_flight())
      if (auto r = calls.finish(); !r) return r.err();
    return std::move(calls.all());
  });
}

result<std::vector<bool>> client_store::get_into(store_pool pool,
                                                 std::span<const store_entry> entries,
                                                 std::span<const std::uintptr_t> addresses,
                                                 std::uint64_t part_bytes) {
  auto parts = plan(entries, addresses, impl_->arena.bytes().size(), part_bytes, impl_->max_keys);
  if (!parts) return parts.err();
  return guarded([&]() -> result<std::vector<bool>> {
    part_calls<decltype(impl_->cap.getRequest())> calls(*impl_->link, pool, entries);
    if (!parts->empty()) calls.send(impl_->cap.getRequest(), parts->front());
    for (std::size_t k = 0; k < parts->size(); ++k) {
      const store_parts::part& p = (*parts)[k];
      auto got = calls.finish();
      if (!got) return got.err();
      const store_parts::part* next = k + 1 < parts->size() ? &(*parts)[k + 1] : nullptr;
      const bool side_by_side = next && store_parts::disjoint(p, *next);
      if (side_by_side) calls.send(impl_->cap.getRequest(), *next);
      store_parts::copy_out(p, entries, addresses, impl_->arena.bytes(), *got);
      if (next && !side_by_side) calls.send(impl_->cap.getRequest(), *next);  // p's range
    }
    return std::move(calls.all());
  });
}

}  // namespace hc
