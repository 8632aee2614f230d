#include "schema/server/store_service.hpp"

#include <algorithm>
#include <limits>

#include "actors/common/log.hpp"
#include "actors/common/printable_text.hpp"
#include "schema/convert.hpp"

namespace hc::rpc {
namespace {

namespace wc = wire_convert;

// capnp's generated Server bases have protected non-virtual destructors behind a virtual
// Capability::Server one; GCC warns about the generated class, not about this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
/// An external client's view of the node's L3 store, with its own arena.
class store_impl final : public wire::Store::Server {
 public:
  store_impl(server_ctx& ctx, std::string identity, std::shared_ptr<shm_region> arena,
             std::uint64_t connection)
      : ctx_(ctx),
        identity_(std::move(identity)),
        arena_(std::move(arena)),
        connection_(connection) {
    log::debug("Store client opened (identity \"" + identity_ + "\", arena " + arena_->name() +
               ")");
  }
  ~store_impl() noexcept(false) {
    log::debug("Store client closed (identity \"" + identity_ + "\")");
  }

  kj::Promise<void> arena(ArenaContext c) override {
    wc::put_error(c.getResults().initError(), {});
    c.getResults().setShm(arena_->name());
    c.getResults().setBytes(arena_->bytes().size());
    c.getResults().setMaxKeys(static_cast<std::uint32_t>(
        std::min<std::size_t>(ctx_.max_store_keys, std::numeric_limits<std::uint32_t>::max())));
    return kj::READY_NOW;
  }

  kj::Promise<void> exists(ExistsContext c) override {
    timed t(ctx_.metrics, "store_exists");
    auto job = make_job(store_job::what::exists);
    auto keys = c.getParams().getKvKeys();
    if (keys.size() > ctx_.max_store_keys) return too_many(c, keys.size());
    for (auto k : keys)
      job->keys.emplace_back(wc::text(k));
    for (auto q : c.getParams().getSidecars())
      job->sidecars.push_back({q.getPool() == wire::StorePool::KV_PAGE ? store_job::pool::kv_page
                                                                       : store_job::pool::ssm_state,
                               q.getPolicy() == wire::HitPolicy::TRAILING_PAGES, q.getTrailing(),
                               wc::text(q.getKeySuffix())});
    // An index lookup per key, a few µs: polled for, as a step is.
    return submit_spinning(ctx_.n, job, ctx_.spin.budget_for(connection_))
        .then([c, job, t]() mutable {
          auto res = c.getResults();
          wc::put_error(res.initError(), job->err);
          res.setKvHitPages(job->kv_hit_pages);
          auto l = res.initRestorablePrefixPages(static_cast<unsigned>(job->restorable.size()));
          for (unsigned i = 0; i < l.size(); ++i)
            l.set(i, job->restorable[i]);
          t.done();
        });
  }
  kj::Promise<void> clear(ClearContext c) override {
    timed t(ctx_.metrics, "store_clear");
    auto job = make_job(store_job::what::clear);
    return submit(ctx_.n, job).then([c, job, t]() mutable {
      auto res = c.getResults();
      wc::put_error(res.initError(), job->err);
      res.setRemoved(job->removed);
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
      job->keys.emplace_back(wc::text(e.getKey()));
      auto& segs = job->segments.emplace_back();
      for (auto s : e.getSegments())
        segs.push_back({s.getOffset(), s.getLength()});
    }
    // Not polled for: a batch of pages is memory copies (and reads) of up to milliseconds,
    // which the polling thread would compete with for the CPU (measured: no gain on 2 vCPUs).
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
  std::uint64_t connection_;  ///< spin_policy's caller
};
#pragma GCC diagnostic pop

}  // namespace

status check_identity(const std::string& id) {
  if (id.empty() || id.size() > 256)
    return {errc::invalid_argument, "store identity must have 1..256 characters"};
  if (!is_printable_text(id))
    return {errc::invalid_argument, "store identity must be printable text"};
  return {};
}

kj::Own<wire::Store::Server> make_store(server_ctx& ctx, std::string identity,
                                        std::shared_ptr<shm_region> arena,
                                        std::uint64_t connection) {
  return kj::heap<store_impl>(ctx, std::move(identity), std::move(arena), connection);
}

}  // namespace hc::rpc
