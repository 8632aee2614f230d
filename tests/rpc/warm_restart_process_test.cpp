// Warm restart of the real daemon, as the README documents it: hybridcached on its
// defaults (L3 in <data-dir>/l3, RocksDB) serves a request whose instance has a host tier;
// it is stopped with SIGTERM and started again on the same data directory; a request with
// the same prompt then gets an L3 hit through a storage prefetch, and every restored byte
// equals the toy model's — whether the restarted daemon read its L3 index before it served
// or while it served (--l3-background-load-above 0). A second daemon on the same data
// directory is refused with an error naming the L3 directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/temp_dir.hpp"
#include "tests/support/toy_worker.hpp"

extern char** environ;

namespace hc::test {
namespace {

/// Waits (up to 20 s) for an event of another process — its socket answering, its exit:
/// the time bound only decides when to give up, never what the test checks.
template <class Pred>
bool poll_until(Pred p) {
  for (int i = 0; i < 2000; ++i) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return p();
}

/// One hybridcached process; SIGKILLed on destruction if still running.
class daemon_process {
 public:
  daemon_process(const std::string& data_dir, const std::string& socket, const std::string& log,
                 const std::vector<std::string>& extra = {})
      : socket_(socket), log_(log) {
    std::vector<std::string> args = {HC_DAEMON_PATH, "--socket",   socket,  "--metrics",
                                     "off",          "--data-dir", data_dir};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawn(&pid_, HC_DAEMON_PATH, &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~daemon_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  /// A client once the socket answers (nullptr if the process died or never listened).
  std::unique_ptr<client> connect() {
    std::unique_ptr<client> c;
    poll_until([&] {
      if (!running()) return true;
      auto r = client::connect("unix:" + socket_);
      if (r.ok()) c = std::move(*r);
      return c != nullptr;
    });
    return c;
  }
  bool running() {
    if (pid_ <= 0) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      pid_ = -1;
      return false;
    }
    return true;
  }
  /// SIGTERM, then the exit status.
  int stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
      exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      pid_ = -1;
    }
    return exit_status_;
  }
  /// Waits for the process to exit by itself (up to 20 s); its status, or -1.
  int wait_exit() {
    poll_until([&] { return !running(); });
    return running() ? -1 : exit_status_;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  int exit_status_ = -1;
  std::string socket_, log_;
};

/// The warm restart; `restart_args` are the restarted daemon's extra options, under which
/// it reads its L3 index while it serves (`in_background`) or before.
void warm_restart(const std::vector<std::string>& restart_args, bool in_background) {
  temp_dir dir;
  const std::string data = (dir.path() / "data").string();
  const std::string sock = (dir.path() / "node.sock").string();
  const std::string log = (dir.path() / "node.log").string();
  {
    daemon_process d(data, sock, log);
    auto c = d.connect();
    ASSERT_TRUE(c) << d.log();
    auto s = c->open(toy_worker::spec());
    ASSERT_TRUE(s.ok()) << s.err().message;
    toy_worker w{**s};
    w.serve(1);
    // The backup reaches L3 asynchronously: once the node drained, it reports it written.
    ASSERT_TRUE(after_drain(*c,
                            [&] {
                              auto j = c->inspect();
                              return j.ok() &&
                                     j->find("\"pages_written\":" + std::to_string(w.K.size())) !=
                                         std::string::npos;
                            }))
        << (c->inspect().ok() ? *c->inspect() : "") << d.log();
    s->reset();
    c.reset();
    ASSERT_EQ(d.stop(), 0) << d.log();
  }
  ASSERT_TRUE(std::filesystem::exists(std::filesystem::path(data) / "l3"));
  daemon_process d(data, sock, log, restart_args);
  auto c = d.connect();
  ASSERT_TRUE(c) << d.log();
  // The index may be read while the node serves: its tier misses until then.
  ASSERT_TRUE(poll_until([&] {
    auto j = c->inspect();
    return j.ok() && j->find("\"loading\":false") != std::string::npos;
  })) << d.log();
  EXPECT_NE(d.log().find("L3 store " + data + "/l3 ready: "), std::string::npos) << d.log();
  EXPECT_EQ(d.log().find("while the node serves") != std::string::npos, in_background) << d.log();
  {
    // A second daemon on the same data directory is refused (RocksDB's lock).
    daemon_process other(data, (dir.path() / "other.sock").string(),
                         (dir.path() / "other.log").string());
    EXPECT_EQ(other.wait_exit(), 2) << other.log();
    EXPECT_NE(other.log().find("cannot open the L3 store"), std::string::npos) << other.log();
  }
  auto s = c->open(toy_worker::spec());
  ASSERT_TRUE(s.ok()) << s.err().message;
  toy_worker w{**s, c.get()};
  const res::prefetch p = w.prefetch(2);
  EXPECT_EQ(p.outcome, "completed") << d.log();
  EXPECT_EQ(p.storage_hit_tokens, w.K.size());
  const res::match m = w.admit_and_check(2);
  EXPECT_EQ(m.prefix_len, w.K.size()) << "the restarted node serves the prefix from L3";
  w.abort_and_check_idle(2);
  s->reset();
  c.reset();
  EXPECT_EQ(d.stop(), 0) << d.log();
}

TEST(WarmRestart, AStoredPrefixIsAnL3HitAfterTheDaemonRestarts) {
  warm_restart({}, false);
}

// --l3-background-load-above 0: the index is read while the node already serves, as that
// of a store of millions of values is (README, Warm restart); the log says when it is read.
TEST(WarmRestart, AnIndexReadWhileTheNodeServesGivesTheSameHit) {
  warm_restart({"--l3-background-load-above", "0"}, true);
}

}  // namespace
}  // namespace hc::test
