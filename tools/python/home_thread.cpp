#include "tools/python/home_thread.hpp"

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
  if (!this_thread_home.home) this_thread_home.home = std::make_shared<home_thread>();
  return this_thread_home.home;
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
