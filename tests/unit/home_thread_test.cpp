// home_thread (tools/python): work other threads leave to the thread that owns an object
// runs there — at its next run_deferred or when it ends — exactly once, and is refused
// once the thread has ended; a forked child does not take over a home with connections. Built
// without Python, so the sanitizer presets (ASan, TSan) check the cross-thread paths the Python
// extension takes.

#include "tools/python/home_thread.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tools/python/errors.hpp"

namespace hc::python {
namespace {

/// A thread that makes its home_thread, hands it out, then waits to be told to run what
/// was deferred (`run` times) and to end.
struct owner {
  std::promise<std::shared_ptr<home_thread>> made;
  std::promise<void> go_run, go_end;
  std::promise<void> ran;
  std::thread::id id;
  std::thread t;
  explicit owner(bool run_once) {
    auto run_now = go_run.get_future();
    auto end_now = go_end.get_future();
    t = std::thread(
        [this, run_once, run_now = std::move(run_now), end_now = std::move(end_now)]() mutable {
          id = std::this_thread::get_id();
          auto home = home_thread::current();
          EXPECT_TRUE(home->is_current());
          made.set_value(home);
          if (run_once) {
            run_now.wait();
            home->run_deferred();
            ran.set_value();
          }
          end_now.wait();
        });
  }
  ~owner() {
    if (t.joinable()) t.join();
  }
};

TEST(HomeThread, WorkLeftByAnotherThreadRunsOnTheOwnerAtItsNextRun) {
  owner o(true);
  auto home = o.made.get_future().get();
  EXPECT_FALSE(home->is_current()) << "this thread is not the owner";
  std::thread::id ran_on;
  int runs = 0;
  ASSERT_TRUE(home->defer([&] {
    ran_on = std::this_thread::get_id();
    ++runs;
  }));
  EXPECT_EQ(runs, 0) << "deferred work does not run where it was left";
  o.go_run.set_value();
  o.ran.get_future().wait();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(ran_on, o.id);
  o.go_end.set_value();
  o.t.join();
  EXPECT_EQ(runs, 1) << "it ran once, not again at the end";
}

TEST(HomeThread, WhatIsLeftRunsWhenTheOwnerEndsAndLaterWorkIsRefused) {
  owner o(false);
  auto home = o.made.get_future().get();
  std::thread::id ran_on;
  // What a job captures goes on the owner too (here: the last reference to an object).
  auto captured = std::make_shared<std::thread::id>();
  std::weak_ptr<std::thread::id> watch = captured;
  ASSERT_TRUE(home->defer(
      [&ran_on, captured = std::move(captured)] { ran_on = std::this_thread::get_id(); }));
  EXPECT_FALSE(home->ended());
  EXPECT_FALSE(watch.expired());
  o.go_end.set_value();
  o.t.join();  // returns after the thread's thread_local destructors ran
  EXPECT_EQ(ran_on, o.id);
  EXPECT_TRUE(watch.expired()) << "the job was not destroyed at the owner's end";
  EXPECT_TRUE(home->ended());
  bool ran_late = false;
  EXPECT_FALSE(home->defer([&] { ran_late = true; })) << "an ended thread takes no work";
  EXPECT_FALSE(ran_late);
}

// Many threads leave work while the owner runs what is left, over and over: every job runs
// once, on the owner (TSan checks the hand-over).
TEST(HomeThread, ConcurrentDefersEachRunOnceOnTheOwner) {
  constexpr int producers = 4;
  constexpr int per_producer = 2000;
  std::atomic<int> runs{0}, off_owner{0};
  std::atomic<bool> stop{false};
  std::promise<std::shared_ptr<home_thread>> made;
  std::thread::id owner_id;
  std::thread owner([&] {
    owner_id = std::this_thread::get_id();
    auto home = home_thread::current();
    made.set_value(home);
    while (!stop.load())
      home->run_deferred();
    home->run_deferred();
  });
  auto home = made.get_future().get();
  std::vector<std::thread> ps;
  for (int p = 0; p < producers; ++p)
    ps.emplace_back([&] {
      for (int i = 0; i < per_producer; ++i)
        ASSERT_TRUE(home->defer([&] {
          runs.fetch_add(1);
          if (std::this_thread::get_id() != owner_id) off_owner.fetch_add(1);
        }));
    });
  for (auto& t : ps)
    t.join();
  stop.store(true);
  owner.join();
  EXPECT_EQ(runs.load(), producers * per_producer);
  EXPECT_EQ(off_owner.load(), 0);
}

// A forked child's copy of a thread's home: with connections on it, their event loop is the
// parent's, so a new one is refused; without, the child gets a home of its own.
TEST(HomeThread, AForkedChildGetsAHomeOfItsOwnOnlyWithoutTheParentsConnections) {
  for (const bool with_connection : {true, false}) {
    auto home = home_thread::current();
    if (with_connection) home->connection_made();
    const pid_t pid = ::fork();
    if (pid == 0) {  // an exit code per outcome; nothing may escape the child
      int code = 0;
      try {
        auto mine = home_thread::current();
        code = with_connection ? 1 : (mine != home && mine->is_current() ? 0 : 2);
      } catch (const unavailable_error& e) {
        code = with_connection && std::string(e.what()).find("fork") != std::string::npos ? 0 : 3;
      } catch (...) {
        code = 4;
      }
      ::_exit(code);
    }
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << (with_connection ? "with" : "without") << " a connection: 1 not refused, 2 not a "
        << "home of its own, 3 the error does not say why, 4 another error";
    if (with_connection) home->connection_gone();
    EXPECT_EQ(home_thread::current(), home) << "the parent keeps its home";
  }
}

TEST(HomeThread, EachThreadHasItsOwn) {
  auto mine = home_thread::current();
  EXPECT_EQ(mine, home_thread::current()) << "one per thread";
  EXPECT_TRUE(mine->is_current());
  std::shared_ptr<home_thread> theirs;
  std::thread([&] { theirs = home_thread::current(); }).join();
  EXPECT_NE(mine, theirs);
  EXPECT_FALSE(theirs->is_current());
  EXPECT_TRUE(theirs->ended()) << "that thread has ended";
}

}  // namespace
}  // namespace hc::python
