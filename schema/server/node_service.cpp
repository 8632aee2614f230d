#include "schema/server/node_service.hpp"

#include "actors/node/host_memory.hpp"
#include "gpu/shm_region.hpp"
#include "schema/convert.hpp"
#include "schema/server/session_service.hpp"
#include "schema/server/store_service.hpp"

namespace hc::rpc {
namespace {

namespace wc = wire_convert;

// capnp's generated Server bases have protected non-virtual destructors behind a virtual
// Capability::Server one; GCC warns about the generated class, not about this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;  // constant time in the length
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

class node_impl final : public wire::CacheNode::Server {
 public:
  node_impl(server_ctx& ctx, bool locked, std::uint64_t connection,
            std::function<void()> on_login = {})
      : ctx_(ctx), locked_(locked), connection_(connection), on_login_(std::move(on_login)) {}

  kj::Promise<void> ping(PingContext c) override {
    if (refused(c.getResults())) return kj::READY_NOW;
    wc::put_error(c.getResults().initError(), {});
    c.getResults().setProtocolVersion(wire::PROTOCOL_VERSION);
    c.getResults().setNodeVersion(ctx_.version);
    ctx_.metrics.rpc("ping", 0.0);
    return kj::READY_NOW;
  }

  kj::Promise<void> open(OpenContext c) override {
    if (refused(c.getResults())) return kj::READY_NOW;
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
    return submit(ctx_.n, job).then([ctx = &ctx_, connection = connection_, c, job, t]() mutable {
      auto res = c.getResults();
      wc::put_error(res.initError(), job->err);
      if (job->err.code != errc::ok) return;
      res.setSession(make_session(*ctx, job->session, job->info, connection));
      wc::put_pool_info(res.initInfo(), job->info);
      t.done();
    });
  }

  kj::Promise<void> stats(StatsContext c) override { return gather(c, false); }
  kj::Promise<void> inspect(InspectContext c) override { return gather(c, true); }
  kj::Promise<void> drain(DrainContext c) override {
    c.allowCancellation();  // may wait for a long time: a client that goes away stops it
    if (refused(c.getResults())) return kj::READY_NOW;
    auto job = std::make_shared<drain_job>();
    return submit(ctx_.n, job).then([c, job]() mutable {
      wc::put_error(c.getResults().initError(), job->err);
    });
  }

  kj::Promise<void> login(LoginContext c) override {
    auto res = c.getResults();
    if (!same_secret(wc::text(c.getParams().getToken()), ctx_.token) || ctx_.token.empty()) {
      auto e = res.initError();
      e.setCode(wire::ErrorCode::UNAUTHENTICATED);
      e.setMessage("wrong token");
      return kj::READY_NOW;
    }
    wc::put_error(res.initError(), {});
    res.setNode(kj::heap<node_impl>(ctx_, false, connection_));
    if (on_login_) on_login_();
    return kj::READY_NOW;
  }

  kj::Promise<void> store(StoreContext c) override {
    auto res = c.getResults();
    if (refused(res)) return kj::READY_NOW;
    const std::string identity = wc::text(c.getParams().getIdentity());
    if (status s = check_identity(identity); !s) {
      wc::put_error(res.initError(), s.err());
      return kj::READY_NOW;
    }
    // Refused here, not at every call: a client that took each failed call for an outage
    // would reconnect, and make a new arena, for as long as it runs.
    if (!ctx_.n.config().l3) {
      wc::put_error(res.initError(),
                    {errc::invalid_config,
                     "this node has no L3 store (hybridcached --l3 false): a Store has nothing "
                     "to read or write"});
      return kj::READY_NOW;
    }
    // Each arena holds its bytes of /dev/shm (which is memory) until released: a client that
    // opened stores without end once filled it, and the kernel's OOM killer took the node.
    auto open = ctx_.open_arenas;
    if (open->fetch_add(1) >= ctx_.max_stores) {
      open->fetch_sub(1);
      wc::put_error(res.initError(), {errc::out_of_memory,
                                      "the node serves at most " + std::to_string(ctx_.max_stores) +
                                          " stores at once (--max-stores); close one first"});
      return kj::READY_NOW;
    }
    // And the host must have the arena's memory to give, as for an instance's pools.
    if (const std::uint64_t memory = memory_for_pools(ctx_.n.config().host_memory_limit);
        memory > 0 && ctx_.store_arena_bytes > memory) {
      open->fetch_sub(1);
      wc::put_error(res.initError(),
                    {errc::out_of_memory,
                     "a store's arena needs " + std::to_string(ctx_.store_arena_bytes) +
                         " bytes of shared memory (--store-arena-bytes) but the host has " +
                         std::to_string(memory) +
                         " bytes of memory to give (MemAvailable, or what the node's cgroup "
                         "memory limit still allows, less a reserve)"});
      return kj::READY_NOW;
    }
    const std::string name =
        ctx_.n.config().shm_prefix + "-store-" + std::to_string(++ctx_.next_arena);
    auto arena = shm_region::create(name, ctx_.store_arena_bytes,
                                    shm_access_for(ctx_.n.config().group_access));
    if (!arena) {
      open->fetch_sub(1);
      wc::put_error(res.initError(), arena.err());
      return kj::READY_NOW;
    }
    wc::put_error(res.initError(), {});
    std::shared_ptr<shm_region> owned(new shm_region(std::move(*arena)), [open](shm_region* r) {
      delete r;
      open->fetch_sub(1);
    });
    res.setStore(make_store(ctx_, identity, std::move(owned), connection_));
    return kj::READY_NOW;
  }

 private:
  /// On a locked bootstrap: fills the results' error with UNAUTHENTICATED, true.
  template <class Results>
  bool refused(Results res) const {
    if (!locked_) return false;
    auto e = res.initError();
    e.setCode(wire::ErrorCode::UNAUTHENTICATED);
    e.setMessage("call login with the node's token first");
    return true;
  }
  template <class Ctx>
  kj::Promise<void> gather(Ctx c, bool inspect) {
    if (refused(c.getResults())) return kj::READY_NOW;
    auto job = std::make_shared<stats_job>();
    job->want_inspect = inspect;
    if constexpr (requires { c.getParams().getBlocks(); })
      job->inspect_blocks = c.getParams().getBlocks();
    return submit(ctx_.n, job).then([c, job]() mutable {
      wc::put_error(c.getResults().initError(), job->err);
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
  std::uint64_t connection_;        ///< spin_policy's caller
  std::function<void()> on_login_;  ///< locked only: tells the connection it logged in
};
#pragma GCC diagnostic pop

}  // namespace

kj::Own<wire::CacheNode::Server> make_node_service(server_ctx& ctx, bool locked,
                                                   std::function<void()> on_login) {
  return kj::heap<node_impl>(ctx, locked, ++ctx.next_connection, std::move(on_login));
}

}  // namespace hc::rpc
