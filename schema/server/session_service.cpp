#include "schema/server/session_service.hpp"

#include "schema/convert.hpp"

namespace hc::rpc {
namespace {

namespace wc = wire_convert;

// capnp's generated Server bases have protected non-virtual destructors behind a virtual
// Capability::Server one; GCC warns about the generated class, not about this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class session_impl final : public wire::Session::Server {
 public:
  session_impl(server_ctx& ctx, session_id id, std::uint64_t connection)
      : ctx_(ctx), id_(id), connection_(connection) {}
  ~session_impl() noexcept(false) {
    if (closed_) return;
    ctx_.faults("client_gone",
                "session " + std::to_string(id_) +
                    " ended with its connection, without close() (its worker died or "
                    "dropped the connection): its requests, locks and slots are released");
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
    for (unsigned i = 0; i < cmds.size(); ++i) {
      auto one = wc::get_command(cmds[i]);
      if (!one) {  // a kind this node does not know: the step is refused as a whole
        job->err = {one.err().code, "command " + std::to_string(i) + ": " + one.err().message};
        wc::put_error(c.getResults().initError(), job->err);
        return kj::READY_NOW;
      }
      job->cmds.push_back(std::move(*one));
    }
    return submit_spinning(ctx_.n, job, ctx_.spin.budget_for(connection_))
        .then([c, job, t]() mutable {
          auto res = c.getResults(wc::step_results_size(job->results));  // one segment
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

  void set_info(pool_info p) { info_ = std::move(p); }

 private:
  template <class Ctx>
  kj::Promise<void> fence(Ctx c, std::uint64_t batch, bool begin, const char* name) {
    // A begin may wait for an end that a client which went away never sends. capnp 0.9
    // does not cancel a call on disconnect unless the call allows it, and a call that
    // never returns keeps this session alive: it would never close, its requests, locks
    // and slots held for good (found by tests/fuzz/fuzz_rpc). Cancelled, the call drops
    // its reference; the node still completes the job into the void.
    c.allowCancellation();
    timed t(ctx_.metrics, name);
    auto job = std::make_shared<fence_job>();
    job->session = id_;
    job->batch = batch;
    job->begin = begin;
    // Two per forward pass, each answered at once unless a begin waits for queued ops:
    // polled for, as a step is (a begin that waits longer sleeps after the poll).
    return submit_spinning(ctx_.n, job, ctx_.spin.budget_for(connection_))
        .then([c, job, t]() mutable {
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
  std::uint64_t connection_;  ///< spin_policy's caller
  bool closed_ = false;
};
#pragma GCC diagnostic pop

}  // namespace

kj::Own<wire::Session::Server> make_session(server_ctx& ctx, session_id id, pool_info info,
                                            std::uint64_t connection) {
  auto s = kj::heap<session_impl>(ctx, id, connection);
  s->set_info(std::move(info));
  return s;
}

}  // namespace hc::rpc
