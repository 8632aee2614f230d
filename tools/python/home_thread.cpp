#include "tools/python/home_thread.hpp"

#include "tools/python/errors.hpp"

#include <pthread.h>

namespace hc::python {

// ---- fork ---------------------------------------------------------------------------------
namespace {
/// Forks of this process so far, as seen by the child (pthread_atfork).
std::atomic<std::uint64_t> forks{0};
}  // namespace

std::uint64_t fork_generation() noexcept {
  static const bool registered = [] {
    ::pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  (void)registered;
  return forks.load(std::memory_order_relaxed);
}

// ---- the home thread ----------------------------------------------------------------------
namespace {

/// Runs each job (releases: their errors have nowhere to go) and destroys it, here.
void run_all(std::vector<std::function<void()>>& jobs) noexcept {
  for (auto& job : jobs) {
    try {
      job();
    } catch (...) {
    }
    job = nullptr;  // what it captured goes on this thread too
  }
  jobs.clear();
}

/// The calling thread's home_thread; ends it when the thread ends.
struct home_slot {
  std::shared_ptr<home_thread> home;
  ~home_slot() {
    if (home) home->end();
  }
};
thread_local home_slot this_thread_home;

}  // namespace

std::shared_ptr<home_thread> home_thread::current() {
  std::shared_ptr<home_thread>& slot = this_thread_home.home;
  if (slot && slot->generation_ != fork_generation()) {  // the parent's, copied by a fork
    if (slot->live_.load(std::memory_order_relaxed) > 0)
      throw unavailable_error(
          "io_error: this thread had connections with io_thread=False when the process "
          "forked, and their event loop (shared by every such connection of the thread) "
          "belongs to the parent: connect with io_thread=True here, or from a new thread");
    abandon(std::move(slot));  // never destroyed here: its jobs are the parent's
    slot = nullptr;
  }
  if (!slot) slot = std::make_shared<home_thread>();
  return slot;
}

bool home_thread::is_current() const noexcept {
  return this_thread_home.home.get() == this;
}

bool home_thread::ended() {
  std::lock_guard lk(mu_);
  return ended_;
}

bool home_thread::defer(std::function<void()> fn) {
  std::lock_guard lk(mu_);
  if (ended_) return false;
  deferred_.push_back(std::move(fn));
  pending_.store(true, std::memory_order_release);
  return true;
}

void home_thread::run_deferred() {
  if (!pending_.load(std::memory_order_acquire)) return;
  std::vector<std::function<void()>> jobs;
  {
    std::lock_guard lk(mu_);
    jobs.swap(deferred_);
    pending_.store(false, std::memory_order_relaxed);
  }
  run_all(jobs);
}

void home_thread::end() {
  if (generation_ != fork_generation()) {
    // A forked child's copy: the jobs would close the parent's connections, and the
    // mutex may have been held by a thread of the parent.
    abandon(std::move(deferred_));
    return;
  }
  std::vector<std::function<void()>> jobs;
  {
    std::lock_guard lk(mu_);
    ended_ = true;
    jobs.swap(deferred_);
    pending_.store(false, std::memory_order_relaxed);
  }
  run_all(jobs);
}

}  // namespace hc::python
