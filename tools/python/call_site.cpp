#include "tools/python/call_site.hpp"

#include "actors/common/thread_name.hpp"

namespace py = pybind11;

namespace hc::python {

// ---- the I/O thread ---------------------------------------------------------------------
io_thread::io_thread() : thread_([this] { loop(); }) {}

io_thread::~io_thread() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void io_thread::post(std::function<void()> fn) {
  if (forked()) {
    abandon(std::move(fn));
    return;
  }
  {
    std::lock_guard lk(mu_);
    if (stop_) return;
    queue_.emplace_back(std::move(fn));
  }
  cv_.notify_one();
}

void io_thread::loop() {
  name_this_thread("hc-client-io");
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

// ---- the connection -----------------------------------------------------------------------
connection::connection(call_site where, std::chrono::milliseconds timeout) : timeout(timeout) {
  if (where == call_site::calling_thread) {
    home_ = home_thread::current();
    home_->connection_made();
  } else
    io_ = std::make_unique<io_thread>();
}

connection::~connection() {
  if (home_) {
    if (forked()) {
      (void)c.release();
      return;
    }
    if (home_->is_current()) {
      if (c) {
        py::gil_scoped_release unlocked;
        home_->run_deferred();
        c.reset();
      }
      home_->connection_gone();
      return;
    }
    // Dropped by another thread: end the connection now (the node releases what it held)
    // and leave the objects to their thread — or to no one, if it has ended.
    if (c) c->sever();
    std::shared_ptr<client> owned(c.release());
    auto home = home_;
    if (!home_->defer([owned, home]() mutable {
          owned.reset();
          home->connection_gone();
        }))
      abandon(std::move(owned));
    return;
  }
  if (io_->forked()) {
    (void)io_.release();
    (void)c.release();
    return;
  }
  // The GIL stays released until the thread is joined: a job still running there (a call
  // that its caller stopped waiting for) ends only with the client's deadline, and the
  // process's other Python threads go on meanwhile.
  py::gil_scoped_release unlocked;
  try {
    io_->run<int>(
        [this] {
          c.reset();
          return 0;
        },
        std::chrono::milliseconds(10000));
  } catch (...) {  // timed out: the queued reset still runs before the thread is joined
  }
  io_.reset();
}

void connection::check_caller() {
  if (!home_) return;
  if (forked())
    throw unavailable_error(
        "io_error: this connection was opened before the process forked; its socket "
        "belongs to the parent: connect again in this process");
  if (home_->is_current()) return;
  if (home_->ended())
    throw unavailable_error(
        "io_error: the thread that made this connection (io_thread=False) has ended, and "
        "its calls ran on that thread: connect again");
  throw invalid_argument_error(
      "invalid_argument: this connection was made with io_thread=False on another thread; "
      "only that thread may use it and its sessions and stores (connect with "
      "io_thread=True to share a connection between threads)");
}

namespace {

std::atomic<unsigned long> python_main_thread{0};

/// Runs Python's signal handlers if this is its main thread (GIL released by the caller);
/// true when one raised (the exception is then this thread's Python error).
bool handler_raised() {
  if (PyThread_get_thread_ident() != python_main_thread.load()) return false;
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

}  // namespace

void note_python_main_thread() {
  python_main_thread =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
}

bool connection::interrupted_now() {
  if (home_) return armed_ && handler_raised();
  const std::uint64_t n = running_.load();
  return n != 0 && cancelled_.load() == n;
}

bool connection::signal_raised(std::uint64_t n) {
  if (!handler_raised()) return false;
  cancelled_ = n;
  return true;
}

void connection::post(std::function<void()> fn) {
  if (!home_) {
    io_->post(std::move(fn));
    return;
  }
  if (forked()) {
    abandon(std::move(fn));
    return;
  }
  if (home_->is_current()) {
    py::gil_scoped_release unlocked;
    try {
      fn();
    } catch (...) {  // a release: nowhere to report it
    }
    return;
  }
  if (!home_->defer(fn)) abandon(std::move(fn));
}

}  // namespace hc::python
