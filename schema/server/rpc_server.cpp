#include "schema/server/rpc_server.hpp"

#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "gpu/shm_region.hpp"
#include "schema/convert.hpp"

namespace hc {
namespace {

namespace wc = wire_convert;
using clk = std::chrono::steady_clock;

struct server_ctx {
  node& n;
  metrics_sink& metrics;
  std::string token;
  std::string version;
  std::size_t store_arena_bytes = 0;
  std::size_t max_store_keys = 0;
  std::uint64_t next_arena = 0;
};

/// Submits a job and returns a promise that resolves (on this kj thread) once an actor
/// completed it. A job destroyed uncompleted (node shutting down) rejects the promise.
template <class Job>
kj::Promise<void> submit(node& n, const std::shared_ptr<Job>& job) {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
  job->done = [f](Job&) { (*f)->fulfill(); };
  n.submit(job);
  return kj::mv(paf.promise);
}

class timed {
 public:
  timed(metrics_sink& m, const char* method) : m_(m), method_(method), t0_(clk::now()) {}
  void done() const { m_.rpc(method_, std::chrono::duration<double>(clk::now() - t0_).count()); }

 private:
  metrics_sink& m_;
  const char* method_;
  clk::time_point t0_;
};

// capnp's generated Server bases have protected non-virtual destructors behind a virtual
// Capability::Server one; GCC warns about the generated class, not about this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class session_impl final : public wire::Session::Server {
 public:
  session_impl(server_ctx& ctx, session_id id) : ctx_(ctx), id_(id) {}
  ~session_impl() noexcept(false) {
    if (closed_) return;
    auto j = std::make_shared<close_job>();  // the client went away: release everything
    j->session = id_;
    ctx_.n.submit(j);
  }

  kj::Promise<void> step(StepContext c) override {
    timed t(ctx_.metrics, "step");
    auto job = std::make_shared<step_job>();
    job->session = id_;
    auto cmds = c.getParams().getCommands();
    job->cmds.reserve(cmds.size());
    for (auto r : cmds)
      job->cmds.push_back(wc::get_command(r));
    return submit(ctx_.n, job).then([c, job, t]() mutable {
      auto res = c.getResults();
      wc::put_error(res.initError(), job->err);
      auto out = res.initResults(static_cast<unsigned>(job->results.size()));
      for (unsigned i = 0; i < out.size(); ++i)
        wc::put_result(out[i], job->results[i]);
      t.done();
    });
  }

  kj::Promise<void> beginForward(BeginForwardContext c) override {
    return fence(c, c.getParams().getBatch(), true, "begin_forward");
  }
  kj::Promise<void> endForward(EndForwardContext c) override {
    return fence(c, c.getParams().getBatch(), false, "end_forward");
  }

  kj::Promise<void> poolInfo(PoolInfoContext c) override {
    wc::put_error(c.getResults().initError(), {});
    wc::put_pool_info(c.getResults().initInfo(), info_);
    return kj::READY_NOW;
  }

  kj::Promise<void> readKvPage(ReadKvPageContext c) override {
    return read(c, bytes_job::what::read_kv_page,
                static_cast<std::int64_t>(c.getParams().getPage()));
  }
  kj::Promise<void> readSlot(ReadSlotContext c) override {
    return read(c, bytes_job::what::read_slot, c.getParams().getSlot());
  }
  kj::Promise<void> writeKvPage(WriteKvPageContext c) override {
    return write(c, bytes_job::what::write_kv_page,
                 static_cast<std::int64_t>(c.getParams().getPage()), c.getParams().getData());
  }
  kj::Promise<void> writeSlot(WriteSlotContext c) override {
    return write(c, bytes_job::what::write_slot, c.getParams().getSlot(), c.getParams().getData());
  }

  kj::Promise<void> close(CloseContext c) override {
    timed t(ctx_.metrics, "close");
    auto job = std::make_shared<close_job>();
    job->session = id_;
    closed_ = true;
    return submit(ctx_.n, job).then([c, job, t]() mutable {
      wc::put_error(c.getResults().initError(), job->err);
      t.done();
    });
  }

  void set_info(const pool_info& p) { info_ = p; }

 private:
  template <class Ctx>
  kj::Promise<void> fence(Ctx c, std::uint64_t batch, bool begin, const char* name) {
    timed t(ctx_.metrics, name);
    auto job = std::make_shared<fence_job>();
    job->session = id_;
    job->batch = batch;
    job->begin = begin;
    return submit(ctx_.n, job).then([c, job, t]() mutable {
      wc::put_error(c.getResults().initError(), job->err);
      if constexpr (requires { c.getResults().setWaitedNs(0); })
        c.getResults().setWaitedNs(job->waited_ns);
      t.done();
    });
  }
  template <class Ctx>
  kj::Promise<void> read(Ctx c, bytes_job::what op, std::int64_t index) {
    auto job = std::make_shared<bytes_job>();
    job->session = id_;
    job->op = op;
    job->index = index;
    return submit(ctx_.n, job).then([c, job]() mutable {
      wc::put_error(c.getResults().initError(), job->err);
      if (job->err.code == errc::ok)
        c.getResults().setData(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(job->data.data()), job->data.size()));
    });
  }
  template <class Ctx>
  kj::Promise<void> write(Ctx c, bytes_job::what op, std::int64_t index, capnp::Data::Reader d) {
    auto job = std::make_shared<bytes_job>();
    job->session = id_;
    job->op = op;
    job->index = index;
    const auto* p = reinterpret_cast<const std::byte*>(d.begin());
    job->data.assign(p, p + d.size());
    return submit(ctx_.n, job).then([c, job]() mutable {
      wc::put_error(c.getResults().initError(), job->err);
    });
  }

  server_ctx& ctx_;
  session_id id_;
  pool_info info_;
  bool closed_ = false;
};

/// An external client's view of the node's L3 store, with its own arena.
class store_impl final : public wire::Store::Server {
 public:
  store_impl(server_ctx& ctx, std::string identity, std::shared_ptr<shm_region> arena)
      : ctx_(ctx), identity_(std::move(identity)), arena_(std::move(arena)) {}

  kj::Promise<void> arena(ArenaContext c) override {
    wc::put_error(c.getResults().initError(), {});
    c.getResults().setShm(arena_->name());
    c.getResults().setBytes(arena_->bytes().size());
    return kj::READY_NOW;
  }

  kj::Promise<void> exists(ExistsContext c) override {
    timed t(ctx_.metrics, "store_exists");
    auto job = make_job(store_job::what::exists);
    auto keys = c.getParams().getKvKeys();
    if (keys.size() > ctx_.max_store_keys) return too_many(c, keys.size());
    for (auto k : keys)
      job->keys.emplace_back(k.cStr());
    for (auto q : c.getParams().getSidecars())
      job->sidecars.push_back({q.getPool() == wire::StorePool::KV_PAGE ? store_job::pool::kv_page
                                                                       : store_job::pool::ssm_state,
                               q.getPolicy() == wire::HitPolicy::TRAILING_PAGES, q.getTrailing()});
    return submit(ctx_.n, job).then([c, job, t]() mutable {
      auto res = c.getResults();
      wc::put_error(res.initError(), job->err);
      res.setKvHitPages(job->kv_hit_pages);
      auto l = res.initRestorablePrefixPages(static_cast<unsigned>(job->restorable.size()));
      for (unsigned i = 0; i < l.size(); ++i)
        l.set(i, job->restorable[i]);
      t.done();
    });
  }
  kj::Promise<void> get(GetContext c) override {
    return transfer(c, store_job::what::get, "store_get");
  }
  kj::Promise<void> set(SetContext c) override {
    return transfer(c, store_job::what::set, "store_set");
  }

 private:
  std::shared_ptr<store_job> make_job(store_job::what op) {
    auto job = std::make_shared<store_job>();
    job->op = op;
    job->identity = identity_;
    job->arena_owner = arena_;
    job->arena = arena_->bytes();
    return job;
  }
  template <class Ctx>
  kj::Promise<void> too_many(Ctx c, std::size_t n) {
    wc::put_error(c.getResults().initError(),
                  {errc::invalid_argument, std::to_string(n) + " keys in one call; the limit is " +
                                               std::to_string(ctx_.max_store_keys)});
    return kj::READY_NOW;
  }
  template <class Ctx>
  kj::Promise<void> transfer(Ctx c, store_job::what op, const char* method) {
    timed t(ctx_.metrics, method);
    auto job = make_job(op);
    auto p = c.getParams();
    job->which = p.getPool() == wire::StorePool::KV_PAGE ? store_job::pool::kv_page
                                                         : store_job::pool::ssm_state;
    auto entries = p.getEntries();
    if (entries.size() > ctx_.max_store_keys) return too_many(c, entries.size());
    for (auto e : entries) {
      job->keys.emplace_back(e.getKey().cStr());
      auto& segs = job->segments.emplace_back();
      for (auto s : e.getSegments())
        segs.push_back({s.getOffset(), s.getLength()});
    }
    return submit(ctx_.n, job).then([c, job, t]() mutable {
      auto res = c.getResults();
      wc::put_error(res.initError(), job->err);
      auto l = res.initOk(static_cast<unsigned>(job->ok.size()));
      for (unsigned i = 0; i < l.size(); ++i)
        l.set(i, job->ok[i]);
      t.done();
    });
  }

  server_ctx& ctx_;
  std::string identity_;
  std::shared_ptr<shm_region> arena_;
};

/// A Store identity: 1..256 printable characters.
status check_identity(const std::string& id) {
  if (id.empty() || id.size() > 256)
    return {errc::invalid_argument, "store identity must have 1..256 characters"};
  for (char ch : id)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      return {errc::invalid_argument, "store identity must be printable text"};
  return {};
}

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;  // constant time in the length
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

class node_impl final : public wire::CacheNode::Server {
 public:
  node_impl(server_ctx& ctx, bool locked) : ctx_(ctx), locked_(locked) {}

  kj::Promise<void> ping(PingContext c) override {
    require_login();
    c.getResults().setProtocolVersion(wire::PROTOCOL_VERSION);
    c.getResults().setNodeVersion(ctx_.version);
    ctx_.metrics.rpc("ping", 0.0);
    return kj::READY_NOW;
  }

  kj::Promise<void> open(OpenContext c) override {
    if (locked_) {
      auto e = c.getResults().initError();
      e.setCode(wire::ErrorCode::UNAUTHENTICATED);
      e.setMessage("call login with the node's token first");
      return kj::READY_NOW;
    }
    timed t(ctx_.metrics, "open");
    auto spec_r = c.getParams().getSpec();
    if (spec_r.getProtocolVersion() != wire::PROTOCOL_VERSION) {
      auto e = c.getResults().initError();
      e.setCode(wire::ErrorCode::VERSION_MISMATCH);
      e.setMessage(kj::str("client speaks protocol ", spec_r.getProtocolVersion(),
                           ", this node speaks ", wire::PROTOCOL_VERSION));
      return kj::READY_NOW;
    }
    auto spec = wc::get_spec(spec_r);
    if (!spec) {
      wc::put_error(c.getResults().initError(), spec.err());
      return kj::READY_NOW;
    }
    auto job = std::make_shared<open_job>();
    job->spec = std::move(*spec);
    return submit(ctx_.n, job).then([ctx = &ctx_, c, job, t]() mutable {
      auto res = c.getResults();
      wc::put_error(res.initError(), job->err);
      if (job->err.code != errc::ok) return;
      auto s = kj::heap<session_impl>(*ctx, job->session);
      s->set_info(job->info);
      res.setSession(kj::mv(s));
      wc::put_pool_info(res.initInfo(), job->info);
      t.done();
    });
  }

  kj::Promise<void> stats(StatsContext c) override { return gather(c, false); }
  kj::Promise<void> inspect(InspectContext c) override { return gather(c, true); }
  kj::Promise<void> drain(DrainContext) override {
    require_login();
    return submit(ctx_.n, std::make_shared<drain_job>());
  }

  kj::Promise<void> login(LoginContext c) override {
    auto res = c.getResults();
    if (!same_secret(c.getParams().getToken().cStr(), ctx_.token) || ctx_.token.empty()) {
      auto e = res.initError();
      e.setCode(wire::ErrorCode::UNAUTHENTICATED);
      e.setMessage("wrong token");
      return kj::READY_NOW;
    }
    wc::put_error(res.initError(), {});
    res.setNode(kj::heap<node_impl>(ctx_, false));
    return kj::READY_NOW;
  }

  kj::Promise<void> store(StoreContext c) override {
    auto res = c.getResults();
    if (locked_) {
      auto e = res.initError();
      e.setCode(wire::ErrorCode::UNAUTHENTICATED);
      e.setMessage("call login with the node's token first");
      return kj::READY_NOW;
    }
    const std::string identity = c.getParams().getIdentity().cStr();
    if (status s = check_identity(identity); !s) {
      wc::put_error(res.initError(), s.err());
      return kj::READY_NOW;
    }
    const std::string name =
        ctx_.n.config().shm_prefix + "-store-" + std::to_string(++ctx_.next_arena);
    auto arena = shm_region::create(name, ctx_.store_arena_bytes);
    if (!arena) {
      wc::put_error(res.initError(), arena.err());
      return kj::READY_NOW;
    }
    wc::put_error(res.initError(), {});
    res.setStore(
        kj::heap<store_impl>(ctx_, identity, std::make_shared<shm_region>(std::move(*arena))));
    return kj::READY_NOW;
  }

 private:
  void require_login() const {
    if (locked_) KJ_FAIL_REQUIRE("unauthenticated: call login with the node's token first");
  }
  template <class Ctx>
  kj::Promise<void> gather(Ctx c, bool inspect) {
    require_login();
    auto job = std::make_shared<stats_job>();
    job->want_inspect = inspect;
    return submit(ctx_.n, job).then([c, job]() mutable {
      if constexpr (requires { c.getResults().setJson(""); }) {
        c.getResults().setJson(job->inspect_json);
      } else {
        auto l = c.getResults().initStats(static_cast<unsigned>(job->stats.size()));
        for (unsigned i = 0; i < l.size(); ++i) {
          l[i].setName(job->stats[i].first);
          l[i].setValue(job->stats[i].second);
        }
      }
    });
  }

  server_ctx& ctx_;
  bool locked_;
};
#pragma GCC diagnostic pop

/// One client connection: its two-party network and RPC system (with the flow limit).
/// Dropping it drops the client's capabilities, which closes its sessions.
struct connection {
  connection(kj::Own<kj::AsyncIoStream>&& s, capnp::Capability::Client bootstrap,
             std::size_t flow_limit_words)
      : stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::SERVER),
        rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {
    rpc.setFlowLimit(flow_limit_words);
  }
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

/// Owns every live connection; each ends on its own when the client disconnects.
class connection_set final : private kj::TaskSet::ErrorHandler {
 public:
  explicit connection_set(std::size_t flow_limit_words) : flow_(flow_limit_words), tasks_(*this) {}
  kj::Promise<void> listen(kj::ConnectionReceiver& l, capnp::Capability::Client bootstrap) {
    return l.accept().then(
        [this, &l, bootstrap](kj::Own<kj::AsyncIoStream>&& s) mutable -> kj::Promise<void> {
          auto c = kj::heap<connection>(kj::mv(s), bootstrap, flow_);
          auto done = c->network.onDisconnect();
          tasks_.add(done.attach(kj::mv(c)));
          return listen(l, kj::mv(bootstrap));
        });
  }

 private:
  void taskFailed(kj::Exception&&) override {}  // a broken connection ends only itself
  std::size_t flow_;
  kj::TaskSet tasks_;
};

}  // namespace

struct rpc_server::impl {
  impl(node& n, metrics_sink& m) : ctx{n, m, {}, {}, 0, 0, 0} {}
  server_ctx ctx;
  rpc_server_config cfg;
  std::thread thread;
  const kj::Executor* executor = nullptr;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_fulfiller;
  std::string tcp_bound;
  bool running = false;

  void main(std::promise<status>& started) {
    try {
      auto io = kj::setupAsyncIo();
      kj::Own<kj::ConnectionReceiver> unix_listener, tcp_listener;
      auto connections = kj::heap<connection_set>(cfg.flow_limit_words);
      capnp::Capability::Client unix_boot = kj::heap<node_impl>(ctx, false);
      capnp::Capability::Client tcp_boot = kj::heap<node_impl>(ctx, true);
      kj::Vector<kj::Promise<void>> serving;
      if (!cfg.unix_path.empty()) {
        struct stat sb {};
        if (::lstat(cfg.unix_path.c_str(), &sb) == 0 && S_ISSOCK(sb.st_mode))
          ::unlink(cfg.unix_path.c_str());  // stale socket of a previous run
        auto addr = io.provider->getNetwork()
                        .parseAddress(kj::str("unix:", cfg.unix_path.c_str()))
                        .wait(io.waitScope);
        const mode_t old = ::umask(0177);  // created 0600: only this user may connect
        unix_listener = addr->listen();
        ::umask(old);
        ::chmod(cfg.unix_path.c_str(), 0600);
        serving.add(connections->listen(*unix_listener, unix_boot));
      }
      if (!cfg.tcp_address.empty()) {
        auto addr =
            io.provider->getNetwork().parseAddress(cfg.tcp_address.c_str()).wait(io.waitScope);
        tcp_listener = addr->listen();
        const std::string host = cfg.tcp_address.substr(0, cfg.tcp_address.rfind(':'));
        tcp_bound = host + ":" + std::to_string(tcp_listener->getPort());
        serving.add(connections->listen(*tcp_listener, tcp_boot));
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
      if (!cfg.unix_path.empty()) ::unlink(cfg.unix_path.c_str());
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
