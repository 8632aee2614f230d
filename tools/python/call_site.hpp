#pragma once
// Internal to hybridcache._native: where a connection's calls run.
//
// hc::client is bound to the thread that created it (its kj event loop) and must be
// destroyed there. A connection runs its calls one of two ways (hybridcache.connect's
// `io_thread`):
//
// - On an I/O thread of its own (the default). Any Python thread may call: a call posts
//   its work to that thread and waits with the GIL released; calls of several threads are
//   queued in order. The hand-over costs two thread wake-ups per call. The client cancels a
//   call that got no answer within the connection's timeout (errc::timeout ->
//   hybridcache.Timeout) and stays usable; the Python side also stops waiting for a call
//   still queued behind others once its own deadline (timeout plus the queue's) passed.
// - On the calling thread. The client lives on the thread that connected (its "home") and
//   only that thread may call (another gets InvalidArgument). What another thread drops —
//   the last reference to a session, a store or the connection — cannot be destroyed
//   there: it is deferred to the home thread, which runs it before its next call or when
//   it ends; a connection dropped elsewhere is severed as well (its socket shut down at
//   once, so the node releases its sessions and stores without waiting for that).
//
// Ctrl-C: a call waiting for a node that does not answer lets Python's signal handlers run
// (every 50 ms, on the thread that waits; Python runs them on its main thread only), as
// time.sleep does. When one raises (KeyboardInterrupt), the call is cancelled — by the
// client's interrupt check on the thread where it runs — and the caller raises what the
// handler raised at once; the connection stays usable (a step may still have run on the
// node, as after a timeout).
//
// Fork: a child process has a copy of the connection's memory but not its I/O thread, and
// shares its socket with the parent. A connection used in a child refuses the call
// (hybridcache.Unavailable: connect again there) instead of waiting for a thread that is
// not there, and what it owns is left as it is (never destroyed there: that would touch
// the parent's event loop, or join a thread that does not exist).
//
// Thread safety: a connection's members are called with the GIL held; post/defer are the
// cross-thread paths and lock what they share.

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "schema/client.hpp"
#include "tools/python/errors.hpp"
#include "tools/python/home_thread.hpp"

namespace hc::python {

/// A connection's own thread; runs queued jobs in order.
class io_thread {
 public:
  io_thread();
  /// REQUIRES: !forked() (a forked child abandons the object instead: its thread is not
  /// there, its mutex and condition variable may be held by the parent's threads).
  ~io_thread();
  io_thread(const io_thread&) = delete;
  io_thread& operator=(const io_thread&) = delete;

  /// True in a child forked after this thread started (the thread is not there).
  bool forked() const noexcept { return generation_ != fork_generation(); }

  /// Queues fn on the I/O thread without waiting (ignored once the thread stops; kept as
  /// it is in a forked child).
  void post(std::function<void()> fn);

  /// Runs fn on the I/O thread; waits (GIL released by the caller) at most `timeout`,
  /// asking `stop_waiting` (if any) every interrupt_check_interval: true stops the wait
  /// (interrupted_error; fn goes on there).
  template <class R>
  R run(std::function<R()> fn, std::chrono::milliseconds timeout,
        const std::function<bool()>& stop_waiting = {}) {
    if (forked()) {
      abandon(std::move(fn));
      throw unavailable_error(
          "io_error: this connection was opened before the process forked; its I/O thread "
          "and socket belong to the parent: connect again in this process");
    }
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    std::future<R> done = task->get_future();
    {
      std::lock_guard lk(mu_);
      if (stop_) throw unavailable_error("io_error: the connection is closed");
      queue_.emplace_back([task] { (*task)(); });
    }
    cv_.notify_one();
    const auto due = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto wait = due - std::chrono::steady_clock::now();
      if (stop_waiting && wait > interrupt_check_interval) wait = interrupt_check_interval;
      if (done.wait_for(wait) == std::future_status::ready) break;
      if (std::chrono::steady_clock::now() >= due)
        throw timeout_error("timeout: no answer within " + std::to_string(timeout.count()) +
                            " ms (calls queued before it on this connection were slow; it "
                            "still runs when its turn comes)");
      if (stop_waiting && stop_waiting())
        throw interrupted_error("interrupted: a signal handler raised while the call waited");
    }
    return done.get();
  }

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  const std::uint64_t generation_ = fork_generation();
  std::thread thread_;  // last: starts after the members it uses
};

/// Notes Python's main thread, the one thread its signal handlers run on (GIL held; at
/// import). A waiting call on any other thread never takes the GIL to look for them — nor
/// during the interpreter's finalization, which only the main thread runs.
void note_python_main_thread();

/// Where a connection's calls run.
enum class call_site { io_thread, calling_thread };

/// A connection: where its calls run and the client they use, shared by the Node and its
/// Sessions and Stores. Jobs may capture the connection by raw pointer: it outlives them
/// (~connection runs or joins every queued job first). Arguments are copied into the
/// jobs (a job may outlive a call that timed out).
class connection {
 public:
  connection(call_site where, std::chrono::milliseconds timeout);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Every call's deadline (the client's; the I/O thread's wait allows for the queue too).
  const std::chrono::milliseconds timeout;
  /// Created, used and destroyed where calls run.
  std::unique_ptr<client> c;

  /// Runs fn where calls run, the GIL released; its exceptions reach the caller, and so
  /// does a Python signal handler's exception raised while it waited (the call cancelled).
  template <class R>
  R call(std::function<R()> fn) {
    try {
      if (home_) {
        check_caller();
        pybind11::gil_scoped_release unlocked;
        home_->run_deferred();
        armed_ = true;  // the client's waits in fn may now stop for a signal
        struct disarm {
          bool& armed;
          ~disarm() { armed = false; }
        } disarm_at_end{armed_};
        return fn();
      }
      const std::uint64_t n = ++made_;
      pybind11::gil_scoped_release unlocked;
      return io_->run<R>(
          [this, n, fn = std::move(fn)] {
            // Given up before its turn: not run at all (its caller has gone on).
            if (cancelled_.load() == n) throw interrupted_error("interrupted before it ran");
            running_ = n;  // what interrupted_now() may cancel
            struct done {
              std::atomic<std::uint64_t>& running;
              ~done() { running = 0; }
            } done_at_end{running_};
            return fn();
          },
          2 * timeout + std::chrono::milliseconds(1000), [this, n] { return signal_raised(n); });
    } catch (const interrupted_error&) {
      // The GIL is back; the handler's exception is this thread's Python error.
      if (PyErr_Occurred() != nullptr) throw pybind11::error_already_set();
      throw;
    }
  }
  /// The client's interrupt check (client::connect), asked where calls run while one waits:
  /// on the calling thread, whether a Python signal handler raised during a call; on the
  /// I/O thread, whether the caller of the call running there stopped for one.
  bool interrupted_now();
  /// Runs fn where calls run without waiting for it: a release (closing a session or a
  /// store) that any thread's drop may start.
  void post(std::function<void()> fn);
  client& live() {
    if (!c) throw unavailable_error("io_error: not connected");
    return *c;
  }
  /// Throws (changing nothing) when the calling thread may not call: another thread than
  /// the home one, or a forked child (calling-thread mode; the I/O thread's own checks
  /// come with the call).
  void check_caller();

 private:
  bool forked() const noexcept { return generation_ != fork_generation(); }

  /// I/O-thread mode, asked by the caller's wait with the GIL released: runs Python's
  /// signal handlers; when one raised, marks call n cancelled (for interrupted_now()).
  bool signal_raised(std::uint64_t n);

  std::shared_ptr<home_thread> home_;  ///< calling-thread mode
  /// Calling-thread mode: true while call() runs its fn (a release or the destruction
  /// waits unstopped).
  bool armed_ = false;
  /// I/O-thread mode: calls are numbered as they are made (GIL held); the I/O thread runs
  /// call running_ (0 between calls and for posted releases); call cancelled_ is the last
  /// one its caller gave up for a signal — one at a time: only Python's main thread runs
  /// signal handlers, and its calls follow one another.
  std::uint64_t made_ = 0;
  std::atomic<std::uint64_t> running_{0};
  std::atomic<std::uint64_t> cancelled_{0};
  const std::uint64_t generation_ = fork_generation();
  std::unique_ptr<io_thread> io_;  ///< I/O-thread mode; last: joined first
};

}  // namespace hc::python
