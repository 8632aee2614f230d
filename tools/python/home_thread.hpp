#pragma once
// Internal to hybridcache._native, without Python: what a thread that owns kj objects needs
// so that other threads can leave it work (call_site.hpp's calling-thread connections:
// a client must be destroyed on the thread that made it), and the fork generation that
// tells a forked child's copy of such objects from the parent's.
//
// Thread safety: home_thread::defer, ended and is_current may be called from any thread;
// run_deferred and end only on the home thread (end from its thread_local slot).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace hc::python {

/// A process-wide generation that changes in a forked child.
std::uint64_t fork_generation() noexcept;

/// Leaks what must not be destroyed here (a forked child's copy, or what belongs to a
/// thread that has ended).
template <class T>
void abandon(T&& x) {
  new std::decay_t<T>(std::forward<T>(x));
}

/// A thread that owns objects only it may destroy (connections made with io_thread=False):
/// what other threads leave it waits here until its next call or its end.
class home_thread {
 public:
  /// The calling thread's (made on its first use). In a child forked while this thread
  /// had connections (their clients share the thread's kj event loop, which the child has
  /// a copy of — the parent's epoll instance itself): throws unavailable_error, since a new
  /// connection here would register its socket there. Without such connections the
  /// thread's copied home is left as it is and a fresh one made.
  static std::shared_ptr<home_thread> current();
  /// A connection (its client) made on this thread, and its client destroyed; the count
  /// current() looks at after a fork.
  void connection_made() noexcept { live_.fetch_add(1, std::memory_order_relaxed); }
  void connection_gone() noexcept { live_.fetch_sub(1, std::memory_order_relaxed); }
  bool is_current() const noexcept;
  /// True once the thread has ended.
  bool ended();
  /// From another thread: fn runs on this thread before its next call, or when it ends.
  /// False (fn not kept) once the thread has ended.
  bool defer(std::function<void()> fn);
  /// On this thread: runs what other threads deferred to it.
  void run_deferred();
  /// At the thread's end (from its thread_local slot): runs the rest, refuses later defers.
  void end();

 private:
  std::mutex mu_;
  std::vector<std::function<void()>> deferred_;
  std::atomic<bool> pending_{false};
  std::atomic<int> live_{0};  ///< connection_made less connection_gone
  bool ended_ = false;
  const std::uint64_t generation_ = fork_generation();
};

}  // namespace hc::python
