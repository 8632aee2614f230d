// What the RocksDB store adds to the common contract: values, recency and usage survive a
// restart (warm restart at the store level), segment files hold the values and their space
// is reclaimed, a lowered capacity takes effect at open, and bad directories are clear
// errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include <rocksdb/db.h>

#include "storage/rocksdb_store.hpp"
#include "storage/value_codec.hpp"
#include "tests/support/damaged_index.hpp"
#include "tests/support/failing_table_files.hpp"
#include "tests/support/l3_format_marker.hpp"
#include "tests/support/temp_dir.hpp"

namespace hc::test {
namespace {

std::vector<std::byte> bytes(char fill, std::size_t n) {
  return std::vector<std::byte>(n, static_cast<std::byte>(fill));
}

std::unique_ptr<rocksdb_store> open_store(const std::string& path, std::uint64_t capacity) {
  rocksdb_store_config cfg;
  cfg.path = path;
  cfg.capacity_bytes = capacity;
  auto st = rocksdb_store::open(cfg);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.err().message);
  return st.ok() ? std::move(*st) : nullptr;
}

/// Threads of this process (/proc/self/task). A forked child has only the forking thread:
/// if RocksDB's background threads already run here (an earlier test opened a store in
/// this process), the child's store would wait for flushes that never run. ctest runs
/// each test in a process of its own; a whole-binary run skips the crash tests.
std::size_t threads_here() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}
#define SKIP_UNLESS_SINGLE_THREADED()                                                     \
  if (threads_here() != 1)                                                                \
  GTEST_SKIP() << "forks a child that needs a single-threaded parent; this process runs " \
               << threads_here() << " threads (run the test alone, as ctest does)"

/// A child process opens the store, writes `n` values, waits `linger` and dies without
/// closing it (_exit: no flush at close, as after kill -9). Returns the values found when
/// the store is opened again.
std::uint64_t values_after_a_crash(const std::string& path, std::chrono::milliseconds flush,
                                   std::chrono::milliseconds linger, int n) {
  const pid_t child = ::fork();
  if (child == 0) {
    rocksdb_store_config cfg;
    cfg.path = path;
    cfg.flush_interval = flush;
    auto st = rocksdb_store::open(cfg);
    if (!st) ::_exit(2);
    for (int i = 0; i < n; ++i)
      if (!(*st)->set(l3_pool::kv_page, std::to_string(i), bytes('x', 8192))) ::_exit(3);
    std::this_thread::sleep_for(linger);
    ::_exit(0);  // the store is never closed
  }
  int wst = 0;
  EXPECT_EQ(::waitpid(child, &wst, 0), child);
  EXPECT_TRUE(WIFEXITED(wst) && WEXITSTATUS(wst) == 0) << "child status " << wst;
  auto s = open_store(path, 1ull << 30);
  return s ? s->usage().values : 0;
}

TEST(RocksdbStore, ATimedFlushBoundsWhatACrashLoses) {
  SKIP_UNLESS_SINGLE_THREADED();
  temp_dir dir;
  // Flushed every 100 ms: the values written 600 ms before the crash are on disk, whole.
  EXPECT_EQ(values_after_a_crash(dir.sub("timed"), std::chrono::milliseconds(100),
                                 std::chrono::milliseconds(600), 50),
            50u);
  // No timed flush and no WAL (the documented trade-off): the same crash loses them.
  EXPECT_EQ(values_after_a_crash(dir.sub("untimed"), std::chrono::milliseconds(0),
                                 std::chrono::milliseconds(600), 50),
            0u);
}

TEST(RocksdbStore, ValuesRecencyAndUsageSurviveARestart) {
  temp_dir dir;
  const std::string path = dir.sub("l3");
  const std::size_t each = 8192 + l3::value_header_bytes;
  {
    auto s = open_store(path, 3 * each);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->set(l3_pool::kv_page, "a", bytes('a', 8192)).ok());
    ASSERT_TRUE(s->set(l3_pool::kv_page, "b", bytes('b', 8192)).ok());
    ASSERT_TRUE(s->set(l3_pool::ssm_state, "c", bytes('c', 8192)).ok());
    std::vector<std::byte> out;
    ASSERT_TRUE(s->get(l3_pool::kv_page, "a", out).ok());  // b is now the least recent
  }
  auto s = open_store(path, 3 * each);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->usage().values, 3u);
  EXPECT_EQ(s->usage().bytes, 3 * each);
  std::vector<std::byte> out;
  ASSERT_TRUE(s->get(l3_pool::ssm_state, "c", out).ok());
  EXPECT_EQ(out, bytes('c', 8192));
  ASSERT_TRUE(s->set(l3_pool::kv_page, "d", bytes('d', 8192)).ok());
  EXPECT_FALSE(s->exists(l3_pool::kv_page, "b")) << "recency was restored from disk";
  EXPECT_TRUE(s->exists(l3_pool::kv_page, "a"));
  bool segment = false;
  for (const auto& f : std::filesystem::directory_iterator(path + "/values"))
    segment |= f.path().extension() == ".seg";
  EXPECT_TRUE(segment) << "values go to segment files";
}

/// Permission bits of `path` (the low nine).
unsigned mode_of(const std::string& path) {
  return static_cast<unsigned>(std::filesystem::status(path).permissions() &
                               std::filesystem::perms::mask) &
         0777u;
}

TEST(RocksdbStore, ItsDirectoryIsItsOwnersAloneAndSoAreItsSegments) {
  // A store's values are the KV cache of users' prompts: no other user reads them, whatever
  // the umask (022 here: before, the directory was 0755 and its segments 0644).
  temp_dir dir;
  const std::string path = dir.sub("l3");
  const mode_t old_umask = ::umask(022);
  {
    auto s = open_store(path, 1ull << 30);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->set(l3_pool::kv_page, "a", bytes('a', 8192)).ok());
  }
  EXPECT_EQ(mode_of(path), 0700u);
  std::size_t segments = 0;
  for (const auto& f : std::filesystem::directory_iterator(path + "/values")) {
    if (f.path().extension() != ".seg") continue;
    ++segments;
    EXPECT_EQ(mode_of(f.path().string()), 0600u) << f.path();
  }
  EXPECT_EQ(segments, 1u);
  // A store an earlier build left open to all is closed at its next open.
  std::filesystem::permissions(path, std::filesystem::perms(0755),
                               std::filesystem::perm_options::replace);
  {
    auto s = open_store(path, 1ull << 30);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->exists(l3_pool::kv_page, "a"));
  }
  EXPECT_EQ(mode_of(path), 0700u);
  ::umask(old_umask);
}

TEST(RocksdbStore, ASecondOpenInTheSameProcessLeavesTheFirstOnesLock) {
  // The message of a store another process holds reads the LOCK file's holder; a probe of
  // a file this process holds would drop the lock (closing any descriptor of a file drops
  // the process's POSIX locks on it), and another node could then open the store too.
  temp_dir dir;
  const std::string path = dir.sub("l3");
  auto first = open_store(path, 1ull << 30);
  ASSERT_TRUE(first);
  rocksdb_store_config cfg;
  cfg.path = path;
  auto second = rocksdb_store::open_unloaded(cfg);
  ASSERT_FALSE(second.ok()) << "RocksDB refuses a second open of the store in one process";
  // Another process sees the lock still held (a child that only opens, asks and exits:
  // async-signal-safe calls, fine in a multi-threaded parent).
  const std::string lock = path + "/index/LOCK";
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(lock.c_str(), O_RDONLY);
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    if (fd < 0 || ::fcntl(fd, F_GETLK, &probe) != 0) ::_exit(2);
    ::_exit(probe.l_type == F_WRLCK && probe.l_pid == ::getppid() ? 0 : 1);
  }
  int wst = 0;
  ASSERT_EQ(::waitpid(child, &wst, 0), child);
  ASSERT_TRUE(WIFEXITED(wst));
  EXPECT_EQ(WEXITSTATUS(wst), 0) << "the first store's lock was dropped (1) or unreadable (2)";
}

/// A child process writes a, b, c (in that order) into a store of `flush` interval, reads
/// a (a recency touch, written in a batch), waits `linger` and dies without closing the
/// store. Reopened with room for three values, the store takes a fourth: returns which of
/// a and b it evicted for it ("a", "b", or "" if the child failed).
std::string evicted_after_a_touch_and_a_crash(const std::string& path,
                                              std::chrono::milliseconds flush,
                                              std::chrono::milliseconds linger) {
  const std::size_t each = 8192 + l3::value_header_bytes;
  const pid_t child = ::fork();
  if (child == 0) {
    rocksdb_store_config cfg;
    cfg.path = path;
    cfg.capacity_bytes = 3 * each;
    cfg.flush_interval = flush;
    auto st = rocksdb_store::open(cfg);
    if (!st) ::_exit(2);
    for (const char* k : {"a", "b", "c"})
      if (!(*st)->set(l3_pool::kv_page, k, bytes(k[0], 8192))) ::_exit(3);
    std::this_thread::sleep_for(linger);  // a, b, c on disk
    std::vector<std::byte> out;
    if (!(*st)->get(l3_pool::kv_page, "a", out)) ::_exit(4);  // b is now the least recent
    std::this_thread::sleep_for(linger);
    ::_exit(0);  // never closed
  }
  int wst = 0;
  EXPECT_EQ(::waitpid(child, &wst, 0), child);
  if (!(WIFEXITED(wst) && WEXITSTATUS(wst) == 0)) return "";
  auto s = open_store(path, 3 * each);
  if (!s || !s->set(l3_pool::kv_page, "d", bytes('d', 8192)).ok()) return "";
  if (!s->exists(l3_pool::kv_page, "a")) return "a";
  if (!s->exists(l3_pool::kv_page, "b")) return "b";
  return "";
}

TEST(RocksdbStore, BatchedRecencyReachesDiskWithTheTimedFlush) {
  SKIP_UNLESS_SINGLE_THREADED();
  temp_dir dir;
  // The touch of a is a pending recency record until the next timed flush writes it.
  EXPECT_EQ(evicted_after_a_touch_and_a_crash(dir.sub("timed"), std::chrono::milliseconds(100),
                                              std::chrono::milliseconds(600)),
            "b");
}

// A full batch of touches is written by the background thread (no get waits for the
// batch's write), without a timed flush; fewer stay pending until one.
TEST(RocksdbStore, AFullRecencyBatchIsWrittenInTheBackground) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.flush_interval = std::chrono::milliseconds(0);  // no timed flush
  cfg.recency_batch = 8;
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  rocksdb_store& s = **st;
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(s.set(l3_pool::kv_page, std::to_string(i), bytes('v', 100)).ok());
  std::vector<std::byte> out;
  for (int i = 0; i < 7; ++i)
    ASSERT_TRUE(s.get(l3_pool::kv_page, std::to_string(i), out).ok());
  ASSERT_TRUE(s.get(l3_pool::kv_page, "0", out).ok());  // a value touched twice counts once
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(s.recency_pending(), 7u) << "below a batch, nothing is written before a flush";
  ASSERT_TRUE(s.get(l3_pool::kv_page, "7", out).ok());  // the eighth: a full batch
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s.recency_pending() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(s.recency_pending(), 0u) << "the background thread did not write the batch";
}

/// Gets `key` on another thread (the calling one, in a before_next_unlocked_write hook,
/// holds the index's write order) and waits up to 10 s: true if it returned `expected`.
/// From the hook, it says whether the store's lock is free during the write.
bool another_get_returns(rocksdb_store& s, const std::string& key,
                         const std::vector<std::byte>& expected) {
  auto other = std::async(std::launch::async, [&] {
    std::vector<std::byte> v;
    return s.get(l3_pool::kv_page, key, v).ok() && v == expected;
  });
  return other.wait_for(std::chrono::seconds(10)) == std::future_status::ready && other.get();
}

// A get that finds the background thread far behind (busy compacting: held here by the
// test hook) writes a chunk of recency records itself, and makes that write with the
// store's lock dropped: another get runs meanwhile (started in the hook, between the
// release and the write), and the chunk's records are no longer pending.
TEST(RocksdbStore, AGetThatWritesRecencyItselfDoesSoWithTheLockDropped) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.flush_interval = std::chrono::milliseconds(0);
  cfg.recency_batch = 2;  // a get writes itself from 4 batches = 8 pending records on
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  rocksdb_store& s = **st;
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(s.set(l3_pool::kv_page, std::to_string(i), bytes('v', 100)).ok());
  s.hold_background(true);
  std::vector<std::byte> out;
  for (int i = 0; i < 7; ++i)
    ASSERT_TRUE(s.get(l3_pool::kv_page, std::to_string(i), out).ok());
  ASSERT_EQ(s.recency_pending(), 7u);
  bool hooked = false;
  bool other_get = false;
  s.before_next_unlocked_write([&] {
    other_get = another_get_returns(s, "9", bytes('v', 100));
    hooked = true;
  });
  ASSERT_TRUE(s.get(l3_pool::kv_page, "7", out).ok());  // the eighth pending record
  EXPECT_EQ(out, bytes('v', 100));
  ASSERT_TRUE(hooked) << "the get wrote no recency records with the lock dropped";
  EXPECT_TRUE(other_get) << "another get could not run during the write";
  EXPECT_EQ(s.recency_pending(), 1u) << "the eight were written; the other get's is pending";
  s.hold_background(false);
  EXPECT_EQ(s.check_index(), "");
}

// A value that fails its checksum is dropped, its delete written with the store's lock
// dropped (another get runs meanwhile), and it stays dropped after a restart.
TEST(RocksdbStore, ACorruptValuesDeleteIsWrittenWithTheLockDropped) {
  temp_dir dir;
  const std::string path = dir.sub("l3");
  {
    auto s = open_store(path, 1 << 20);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->set(l3_pool::kv_page, "bad", bytes('b', 100)).ok());
    ASSERT_TRUE(s->set(l3_pool::kv_page, "good", bytes('g', 100)).ok());
    ASSERT_TRUE(s->overwrite_stored(l3_pool::kv_page, "bad", bytes('x', 64)).ok());
    s->hold_background(true);  // its timed flush writes nothing before the get's delete
    bool hooked = false;
    bool other_get = false;
    s->before_next_unlocked_write([&] {
      other_get = another_get_returns(*s, "good", bytes('g', 100));
      hooked = true;
    });
    std::vector<std::byte> out;
    const status bad = s->get(l3_pool::kv_page, "bad", out);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.err().code, errc::not_found);
    EXPECT_TRUE(out.empty());
    ASSERT_TRUE(hooked) << "the delete was not written with the lock dropped";
    EXPECT_TRUE(other_get) << "another get could not run during the write";
    EXPECT_EQ(s->usage().corrupt, 1u);
    EXPECT_EQ(s->usage().values, 1u);
    EXPECT_EQ(s->check_index(), "");
    s->hold_background(false);
  }
  auto s = open_store(path, 1 << 20);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->exists(l3_pool::kv_page, "bad")) << "its delete did not reach the index";
  EXPECT_TRUE(s->exists(l3_pool::kv_page, "good"));
}

// A put whose index record cannot be written fails, and leaves nothing behind: the value
// is not served (it was for the moment its record was in flight), not counted, and not
// there after a restart; the next put, whose write succeeds, is.
TEST(RocksdbStore, APutWhoseIndexWriteFailsLeavesNoValue) {
  temp_dir dir;
  const std::string path = dir.sub("l3");
  {
    auto s = open_store(path, 1 << 20);
    ASSERT_TRUE(s);
    s->fail_index_writes(1);
    const status put = s->set(l3_pool::kv_page, "a", bytes('a', 100));
    ASSERT_FALSE(put.ok());
    EXPECT_EQ(put.err().code, errc::io_error);
    EXPECT_NE(put.err().message.find("index write failed"), std::string::npos) << put.err().message;
    EXPECT_FALSE(s->exists(l3_pool::kv_page, "a"));
    EXPECT_EQ(s->usage().values, 0u);
    EXPECT_EQ(s->usage().bytes, 0u);
    EXPECT_EQ(s->check_index(), "");
    ASSERT_TRUE(s->set(l3_pool::kv_page, "b", bytes('b', 100)).ok());
    EXPECT_EQ(s->usage().values, 1u);
  }
  auto s = open_store(path, 1 << 20);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->exists(l3_pool::kv_page, "a"));
  std::vector<std::byte> out;
  ASSERT_TRUE(s->get(l3_pool::kv_page, "b", out).ok());
  EXPECT_EQ(out, bytes('b', 100));
}

// A write that finds no space — a full disk, or a full quota (EDQUOT: the user's, or the
// data dir's project quota) — is out_of_memory, which makes the store drop its oldest
// segment and write (AFullDiskDropsTheOldestSegmentAndTakesThePut); any other error is an
// io_error. A full quota was an io_error: every put failed until values were erased.
TEST(ValueSegments, NoSpaceAndAFullQuotaAreOutOfMemoryAndOtherErrorsAreIoErrors) {
  const error full = segment_io_error("L3 segment 1: write", ENOSPC);
  EXPECT_EQ(full.code, errc::out_of_memory);
  EXPECT_EQ(full.message, "L3 segment 1: write: disk full");
  const error quota = segment_io_error("L3 segment 1: write", EDQUOT);
  EXPECT_EQ(quota.code, errc::out_of_memory);
  EXPECT_EQ(quota.message, "L3 segment 1: write: disk quota exceeded");
  const error bad = segment_io_error("L3 segment 1: write", EIO);
  EXPECT_EQ(bad.code, errc::io_error);
  EXPECT_EQ(bad.message, "L3 segment 1: write: Input/output error");
}

// A flush whose table file cannot be written (an I/O error: a bad spell of the disk, a
// disk quota) is retried by RocksDB until the disk writes again; the store's puts go on
// meanwhile (or fail alone, never wait), its own timed flushes wait for RocksDB's, and
// everything the store accepted is on disk after a restart. Before, such an error was
// fatal to RocksDB: it refused every later write until the node restarted, and the index
// records it held in memory (no WAL) were lost at that restart with their values.
TEST(RocksdbStore, AFlushThatCannotWriteIsRetriedAndLosesNothing) {
  temp_dir dir;
  const std::string path = dir.sub("l3");
  auto fs = std::make_shared<failing_table_files>();
  std::unique_ptr<rocksdb::Env> env = env_over(fs);
  rocksdb_store_config cfg;
  cfg.path = path;
  cfg.capacity_bytes = 1 << 20;
  cfg.flush_interval = std::chrono::milliseconds(20);
  cfg.env = env.get();
  std::set<std::string> accepted;
  const auto put = [&](rocksdb_store& s, const std::string& key) {
    if (s.set(l3_pool::kv_page, key, bytes(key[0], 100)).ok()) accepted.insert(key);
  };
  ::testing::internal::CaptureStderr();
  {
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    rocksdb_store& s = **st;
    put(s, "before");
    fs->failing = true;  // the disk fails every table-file write from here
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int i = 0; fs->failures.load() == 0 && std::chrono::steady_clock::now() < give_up; ++i) {
      put(s, "during-" + std::to_string(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_GT(fs->failures.load(), 0) << "no flush wrote a table file";
    // RocksDB retries every second meanwhile (3 s here); puts go on, or fail at once.
    for (int i = 0; i < 300; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      put(s, "failing-" + std::to_string(i));
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5))
          << "a put waited for the failing disk";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(s.index_failing());
    EXPECT_TRUE(s.usage().index_failing) << "what inspect shows";
    EXPECT_EQ(s.usage().index_failures, 1u) << "one fault (l3_index_write_error) for the spell";
    fs->failing = false;  // the disk writes again
    bool written = false;
    for (int i = 0; std::chrono::steady_clock::now() < give_up && !written; ++i) {
      const std::string key = "after-" + std::to_string(i);
      put(s, key);
      written = accepted.count(key) != 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(written) << "the store refused every put after the disk recovered";
    EXPECT_GE(accepted.size(), 3u);
    EXPECT_EQ(s.check_index(), "");
    for (const std::string& k : accepted)
      EXPECT_TRUE(s.exists(l3_pool::kv_page, k)) << k;
    // RocksDB's retries succeed within a few seconds once the disk writes.
    const auto recovered = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (s.index_failing() && std::chrono::steady_clock::now() < recovered)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(s.index_failing()) << "RocksDB did not recover";
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("L3 store: its index cannot write to its disk (IO error: injected"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("L3 store: its index writes to its disk again"), std::string::npos) << log;
  // RocksDB says so at each retry; the log takes a line from one place once a minute.
  std::size_t retries_logged = 0;
  for (std::size_t at = 0; (at = log.find("Background IO error", at)) != std::string::npos; ++at)
    ++retries_logged;
  EXPECT_EQ(retries_logged, 1u) << log;
  cfg.env = nullptr;
  auto again = rocksdb_store::open(cfg);
  ASSERT_TRUE(again.ok()) << again.err().message;
  EXPECT_EQ((*again)->usage().values, accepted.size());
  std::vector<std::byte> out;
  for (const std::string& k : accepted) {
    EXPECT_TRUE((*again)->get(l3_pool::kv_page, k, out).ok()) << k << " lost at the restart";
    EXPECT_EQ(out, bytes(k[0], 100)) << k;
  }
}

// An erase whose delete cannot be written says so; the value is gone from this process
// (its record may bring it back after a restart: a cache may serve it again, whole).
TEST(RocksdbStore, AnEraseWhoseIndexWriteFailsSaysSo) {
  temp_dir dir;
  auto s = open_store(dir.sub("l3"), 1 << 20);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->set(l3_pool::kv_page, "a", bytes('a', 100)).ok());
  s->fail_index_writes(1);
  const status e = s->erase(l3_pool::kv_page, "a");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.err().code, errc::io_error);
  EXPECT_NE(e.err().message.find("delete failed"), std::string::npos) << e.err().message;
  EXPECT_FALSE(s->exists(l3_pool::kv_page, "a"));
  EXPECT_EQ(s->usage().values, 0u);
  EXPECT_EQ(s->check_index(), "");
}

// The background thread writes a batch of recency records after it dropped the store's
// lock; an erase of a value in that batch, made meanwhile, must land after it, or the batch
// would bring the erased value's record back. The erase is started just then (the test
// hook) and given 200 ms: it waits for the batch's write, and the value stays erased.
TEST(RocksdbStore, AnEraseMadeWhileARecencyBatchIsWrittenLandsAfterIt) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.recency_batch = 1;  // a get wakes the background thread
  cfg.flush_interval = std::chrono::milliseconds(0);
  {
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    rocksdb_store& s = **st;
    ASSERT_TRUE(s.set(l3_pool::kv_page, "k", bytes('k', 100)).ok());
    ASSERT_TRUE(s.set(l3_pool::kv_page, "other", bytes('o', 100)).ok());
    std::future<status> erased;
    std::atomic<bool> hooked{false};
    s.before_next_unlocked_write([&] {
      erased = std::async(std::launch::async, [&] { return s.erase(l3_pool::kv_page, "k"); });
      (void)erased.wait_for(std::chrono::milliseconds(200));
      hooked = true;
    });
    std::vector<std::byte> out;
    ASSERT_TRUE(s.get(l3_pool::kv_page, "k", out).ok());  // its record: the next batch
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!hooked && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(hooked) << "the background thread wrote no batch";
    const status e = erased.get();
    ASSERT_TRUE(e.ok()) << e.err().message;
    EXPECT_FALSE(s.exists(l3_pool::kv_page, "k"));
  }
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  EXPECT_FALSE((*st)->exists(l3_pool::kv_page, "k")) << "the batch's record revived it";
  EXPECT_TRUE((*st)->exists(l3_pool::kv_page, "other"));
}

// Recency records are written by the background thread after it dropped the store's lock,
// and compaction writes its moved values' records the same way, while erases delete
// records: no write of a record may land after its value's delete, and no erased value may
// stay on the list of records to write (ASan reports it). Reopened, the store holds exactly
// the values that were not erased — with segments that stay (a revived record names bytes
// that are there) and with compaction moving values meanwhile.
TEST(RocksdbStore, ErasedValuesStayErasedWhileRecencyAndCompactionWrite) {
  for (const double gc_dead_fraction : {1.0, 0.25}) {
    SCOPED_TRACE("gc_dead_fraction " + std::to_string(gc_dead_fraction));
    temp_dir dir;
    rocksdb_store_config cfg;
    cfg.path = dir.sub("l3");
    cfg.segment_bytes = 16 << 10;  // many segments of ~70 values
    cfg.gc_dead_fraction = gc_dead_fraction;
    cfg.recency_batch = 2;  // the background thread writes recency records all along
    cfg.flush_interval = std::chrono::milliseconds(0);
    constexpr int keys = 3000;
    std::vector<bool> erased(keys, false);
    {
      auto st = rocksdb_store::open(cfg);
      ASSERT_TRUE(st.ok()) << st.err().message;
      rocksdb_store& s = **st;
      for (int i = 0; i < keys; ++i)
        ASSERT_TRUE(s.set(l3_pool::kv_page, std::to_string(i), bytes('v', 200)).ok());
      std::atomic<bool> stop{false};
      std::thread reader([&] {
        std::vector<std::byte> out;
        for (unsigned k = 1; !stop; k = k * 1103515245u + 12345u)
          (void)s.get(l3_pool::kv_page, std::to_string((k >> 8) % keys), out);
      });
      // Two keys of every three, in an order unlike the reader's and the segments', each
      // read (its recency record pending, or in a batch being written), then erased; three
      // times over, set again in between.
      std::vector<std::byte> out;
      for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < keys; ++i) {
          const int k = (i * 769 + round) % keys;
          if (k % 3 == 0) continue;
          const std::string key = std::to_string(k);
          if (round > 0) {
            ASSERT_TRUE(s.set(l3_pool::kv_page, key, bytes('v', 200)).ok()) << k;
          }
          ASSERT_TRUE(s.get(l3_pool::kv_page, key, out).ok()) << k;
          ASSERT_TRUE(s.erase(l3_pool::kv_page, key).ok()) << k;
          erased[static_cast<std::size_t>(k)] = true;
        }
      }
      stop = true;
      reader.join();
      (void)s.collect_garbage();
      if (gc_dead_fraction < 1.0) {
        EXPECT_GT(s.values_moved(), 0u) << "no compaction ran";
      }
      EXPECT_EQ(s.check_index(), "");
    }
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    std::size_t revived = 0, lost = 0;
    for (int i = 0; i < keys; ++i) {
      const bool there = (*st)->exists(l3_pool::kv_page, std::to_string(i));
      revived += there && erased[static_cast<std::size_t>(i)];
      lost += !there && !erased[static_cast<std::size_t>(i)];
    }
    EXPECT_EQ(revived, 0u) << "erased values came back after the restart";
    EXPECT_EQ(lost, 0u) << "values that were never erased are gone";
  }
}

TEST(RocksdbStore, ALowerCapacityAtOpenEvictsTheLeastRecent) {
  temp_dir dir;
  const std::string path = dir.sub("l3");
  const std::size_t each = 5000 + l3::value_header_bytes;
  {
    auto s = open_store(path, 10 * each);
    for (char c = 'a'; c < 'e'; ++c)
      ASSERT_TRUE(s->set(l3_pool::kv_page, std::string(1, c), bytes(c, 5000)).ok());
  }
  auto s = open_store(path, 2 * each);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->usage().values, 2u);
  EXPECT_EQ(s->usage().evicted, 2u);
  EXPECT_FALSE(s->exists(l3_pool::kv_page, "a"));
  EXPECT_TRUE(s->exists(l3_pool::kv_page, "d"));
}

// Tiny values under a large capacity: the index memory limit, not the capacity, decides
// how many stay (the 10^8-operation hcsim run grew a node to 23 GB of index without it);
// the least recent go, the limit holds at open too.
TEST(RocksdbStore, TheIndexMemoryLimitEvictsTheLeastRecentTinyValues) {
  temp_dir dir;
  const std::string path = dir.sub("l3");
  auto key = [](int i) { return "page-" + std::to_string(1000 + i); };       // 9 bytes
  const std::uint64_t per_value = index_bytes_per_value(1 + key(0).size());  // + pool byte
  rocksdb_store_config cfg;
  cfg.path = path;
  cfg.index_memory_bytes = 50 * per_value;
  {
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    for (int i = 0; i < 200; ++i)
      ASSERT_TRUE((*st)->set(l3_pool::kv_page, key(i), bytes('v', 16)).ok());
    EXPECT_EQ((*st)->usage().values, 50u);
    EXPECT_EQ((*st)->usage().evicted, 150u);
    EXPECT_FALSE((*st)->exists(l3_pool::kv_page, key(149)));
    EXPECT_TRUE((*st)->exists(l3_pool::kv_page, key(150)));
    EXPECT_TRUE((*st)->exists(l3_pool::kv_page, key(199)));
  }
  cfg.index_memory_bytes = 20 * per_value;  // lowered across a restart
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  EXPECT_EQ((*st)->usage().values, 20u);
  EXPECT_TRUE((*st)->exists(l3_pool::kv_page, key(199)));
  EXPECT_FALSE((*st)->exists(l3_pool::kv_page, key(179)));
  cfg.index_memory_bytes = 0;  // no limit
  st->reset();
  st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  for (int i = 200; i < 400; ++i)
    ASSERT_TRUE((*st)->set(l3_pool::kv_page, key(i), bytes('v', 16)).ok());
  EXPECT_EQ((*st)->usage().values, 220u);
}

std::vector<std::byte> numbered(int i, std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t j = 0; j < n; ++j)
    v[j] = static_cast<std::byte>((i * 131 + static_cast<int>(j)) & 0xFF);
  return v;
}

/// Opens the store of `cfg`, sets `count` values (numbered(i, n) under "i") and closes it.
void fill_numbered(const rocksdb_store_config& cfg, int count, std::size_t n) {
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  for (int i = 0; i < count; ++i)
    ASSERT_TRUE((*st)->set(l3_pool::kv_page, std::to_string(i), numbered(i, n)).ok());
}

// Segments of 64 KiB hold 8 payloads of 8 KiB (the index holds the headers): dropping values
// empties some (removed at once) and leaves others mostly dead (compacted: their live values
// move, byte for byte).
TEST(RocksdbStore, DeadSegmentSpaceIsReclaimed) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.segment_bytes = 64 << 10;
  cfg.gc_dead_fraction = 1.0;  // first only what is wholly dead: no background compaction
  const std::size_t n = 8192;
  {
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    rocksdb_store& s = **st;
    for (int i = 0; i < 70; ++i)
      ASSERT_TRUE(s.set(l3_pool::kv_page, std::to_string(i), numbered(i, n)).ok());
    EXPECT_EQ(s.segment_count(), 9u);
    EXPECT_EQ(s.segment_bytes_on_disk(), 70 * n);
    for (int i = 0; i < 70; ++i) {  // the first 35 wholly, then every other one
      if (i < 35 || i % 2 == 0) {
        ASSERT_TRUE(s.erase(l3_pool::kv_page, std::to_string(i)).ok());
      }
    }
    EXPECT_EQ(s.segment_count(), 5u) << "segments with nothing live are removed at once";
    EXPECT_EQ(s.values_moved(), 0u);
  }
  cfg.gc_dead_fraction = 0.5;  // the default: the half-dead segments are compacted
  {
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    rocksdb_store& s = **st;
    s.collect_garbage();  // the background thread may have started it: either moves them
    EXPECT_GT(s.values_moved(), 0u);
    EXPECT_EQ(s.usage().values, 18u);
    EXPECT_LE(s.segment_bytes_on_disk(), 2 * s.usage().bytes + cfg.segment_bytes)
        << "at most half of a sealed segment is dead after a pass";
    for (int i = 35; i < 70; ++i) {
      std::vector<std::byte> out;
      const status g = s.get(l3_pool::kv_page, std::to_string(i), out);
      if (i % 2 == 0) {
        EXPECT_EQ(g.err().code, errc::not_found);
      } else {
        ASSERT_TRUE(g.ok()) << i << ": " << g.err().message;
        EXPECT_EQ(out, numbered(i, n)) << i;
      }
    }
  }
  auto st = rocksdb_store::open(cfg);  // the moved values' new places were persisted
  ASSERT_TRUE(st.ok()) << st.err().message;
  EXPECT_EQ((*st)->usage().values, 18u);
  for (int i = 35; i < 70; i += 2) {
    std::vector<std::byte> out;
    ASSERT_TRUE((*st)->get(l3_pool::kv_page, std::to_string(i), out).ok()) << i;
    EXPECT_EQ(out, numbered(i, n));
  }
  EXPECT_EQ((*st)->usage().corrupt, 0u);
}

// A compaction lists and moves a segment's values a batch at a time, from the segment's own
// list: a segment of several batches' worth of small values is moved whole, the values read
// back after the move and after a restart, and the index lists each under its new segment.
TEST(RocksdbStore, ASegmentOfManyBatchesIsCompactedWhole) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.segment_bytes = 1 << 20;
  cfg.gc_dead_fraction = 1.0;  // no compaction until the test asks for one
  const std::size_t n = 3 * rocksdb_store::gc_batch_values;  // per segment, about
  const std::size_t value_bytes = (cfg.segment_bytes / n) - l3::value_header_bytes;
  int values = 0;
  {
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    rocksdb_store& s = **st;
    for (; s.segment_count() < 3; ++values)  // two sealed segments, then the active one
      ASSERT_TRUE(s.set(l3_pool::kv_page, std::to_string(values), numbered(values, value_bytes)));
    for (int i = 0; i < values; i += 2)
      ASSERT_TRUE(s.erase(l3_pool::kv_page, std::to_string(i)).ok());
    EXPECT_EQ(s.segment_count(), 3u);
    EXPECT_EQ(s.check_index(), "");
  }
  ASSERT_GT(static_cast<std::size_t>(values) / 2 / 2, rocksdb_store::gc_batch_values)
      << "a segment holds several batches";
  cfg.gc_dead_fraction = 0.5;  // half dead: both sealed segments are compacted
  {
    auto st = rocksdb_store::open(cfg);  // a loaded index lists values in key order
    ASSERT_TRUE(st.ok()) << st.err().message;
    rocksdb_store& s = **st;
    s.collect_garbage();  // the background thread may have started it: either moves them
    EXPECT_GE(s.values_moved(), 2 * rocksdb_store::gc_batch_values);
    EXPECT_EQ(s.check_index(), "");
    EXPECT_EQ(s.usage().values, static_cast<std::uint64_t>(values / 2));
    EXPECT_LE(s.segment_bytes_on_disk(), 2 * s.usage().bytes + cfg.segment_bytes);
    for (int i = 1; i < values; i += 2) {
      std::vector<std::byte> out;
      ASSERT_TRUE(s.get(l3_pool::kv_page, std::to_string(i), out).ok()) << i;
      ASSERT_EQ(out, numbered(i, value_bytes)) << i;
    }
  }
  auto st = rocksdb_store::open(cfg);  // the moved values' new places were persisted
  ASSERT_TRUE(st.ok()) << st.err().message;
  EXPECT_EQ((*st)->usage().values, static_cast<std::uint64_t>(values / 2));
  EXPECT_EQ((*st)->check_index(), "");
  for (int i = 1; i < values; i += 2) {
    std::vector<std::byte> out;
    ASSERT_TRUE((*st)->get(l3_pool::kv_page, std::to_string(i), out).ok()) << i;
    ASSERT_EQ(out, numbered(i, value_bytes)) << i;
  }
  EXPECT_EQ((*st)->usage().corrupt, 0u);
}

// A clear by prefix goes a segment at a time: over many segments it takes every value under
// the prefix and nothing else, and the index stays consistent.
TEST(RocksdbStore, AClearByPrefixTakesEverySegmentsValues) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.segment_bytes = 64 << 10;
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  rocksdb_store& s = **st;
  for (int i = 0; i < 600; ++i)
    ASSERT_TRUE(s.set(i % 3 == 0 ? l3_pool::ssm_state : l3_pool::kv_page,
                      (i % 2 == 0 ? "ext/a/" : "ext/b/") + std::to_string(i), numbered(i, 1000)));
  ASSERT_GT(s.segment_count(), 5u);
  const auto n = s.erase_prefix("ext/a/");
  ASSERT_TRUE(n.ok()) << n.err().message;
  EXPECT_EQ(*n, 300u);
  EXPECT_EQ(s.usage().values, 300u);
  EXPECT_EQ(s.check_index(), "");
  for (int i = 0; i < 600; ++i) {
    const l3_pool pool = i % 3 == 0 ? l3_pool::ssm_state : l3_pool::kv_page;
    EXPECT_EQ(s.exists(pool, (i % 2 == 0 ? "ext/a/" : "ext/b/") + std::to_string(i)), i % 2 == 1)
        << i;
  }
  ASSERT_TRUE(s.close().ok());
  EXPECT_FALSE(s.erase_prefix("ext/b/").ok()) << "a closed store refuses the clear";
}

// What the disk holds after the store closed is checked again: a value whose bytes changed
// is a miss on its first read after open (counted corrupt, deleted), one whose bytes are
// past the end of a truncated segment is dropped at open; the rest are served.
// Garbage collection moves values while others read, write and erase them: every read that
// succeeds returns the value's exact bytes, and what is left reads back whole at the end.
TEST(RocksdbStore, ReadersSeeWholeValuesWhileSegmentsAreCompacted) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.segment_bytes = 32 << 10;  // 8 values of 4 KiB per segment: many segments to compact
  cfg.flush_interval = std::chrono::milliseconds(20);
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  rocksdb_store& s = **st;
  const std::size_t n = 4096;
  constexpr int keys = 64;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, served{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)  // writers: set and erase their half of the keys over and over
    threads.emplace_back([&, w] {
      for (int round = 0; round < 60; ++round)
        for (int i = w; i < keys; i += 2) {
          (void)s.set(l3_pool::kv_page, std::to_string(i), numbered(i, n));
          if ((i + round) % 2 == 0) (void)s.erase(l3_pool::kv_page, std::to_string(i));
        }
    });
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::vector<std::byte> out;
      for (int k = 0; !stop; ++k) {
        const int i = (k * 7 + r) % keys;
        if (s.get(l3_pool::kv_page, std::to_string(i), out).ok()) {
          ++served;
          if (out != numbered(i, n)) ++bad;
        }
      }
    });
  std::thread gc([&] {
    while (!stop)
      (void)s.collect_garbage();
  });
  for (int w = 0; w < 2; ++w)
    threads[static_cast<std::size_t>(w)].join();
  stop = true;
  for (std::size_t t = 2; t < threads.size(); ++t)
    threads[t].join();
  gc.join();
  EXPECT_EQ(bad.load(), 0) << "of " << served.load() << " values served";
  EXPECT_GT(served.load(), 0);
  EXPECT_GT(s.values_moved(), 0u) << "compaction ran while the readers read";
  EXPECT_EQ(s.usage().corrupt, 0u);
  s.collect_garbage();
  std::uint64_t live = 0;
  for (int i = 0; i < keys; ++i) {
    std::vector<std::byte> out;
    if (!s.exists(l3_pool::kv_page, std::to_string(i))) continue;
    const status g = s.get(l3_pool::kv_page, std::to_string(i), out);
    ASSERT_TRUE(g.ok()) << i << ": " << g.err().message;
    EXPECT_EQ(out, numbered(i, n)) << i;
    live += n;
  }
  EXPECT_LE(s.segment_bytes_on_disk(), 2 * live + 2 * cfg.segment_bytes);
}

TEST(RocksdbStore, BytesDamagedWhileClosedAreNeverServed) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  const std::size_t n = 8192, each = n + l3::value_header_bytes;
  ASSERT_NO_FATAL_FAILURE(fill_numbered(cfg, 4, n));
  std::string seg;
  for (const auto& f : std::filesystem::directory_iterator(cfg.path + "/values"))
    if (f.path().extension() == ".seg") seg = f.path().string();
  ASSERT_FALSE(seg.empty());
  {
    std::FILE* f = std::fopen(seg.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, static_cast<long>(each + l3::value_header_bytes + 100), SEEK_SET);  // value 1
    std::fputc(0x5A ^ static_cast<int>(numbered(1, n)[100]), f);
    std::fclose(f);
  }
  std::filesystem::resize_file(seg, 3 * each + 10);  // value 3 is cut
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  rocksdb_store& s = **st;
  EXPECT_EQ(s.usage().values, 3u) << "the cut value is dropped at open";
  std::vector<std::byte> out;
  const status bad = s.get(l3_pool::kv_page, "1", out);
  EXPECT_EQ(bad.err().code, errc::not_found);
  EXPECT_NE(bad.err().message.find("checksum"), std::string::npos) << bad.err().message;
  EXPECT_EQ(s.usage().corrupt, 1u);
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "1"));
  for (int i : {0, 2}) {
    ASSERT_TRUE(s.get(l3_pool::kv_page, std::to_string(i), out).ok()) << i;
    EXPECT_EQ(out, numbered(i, n));
  }
}

// A segment cut short while the store is open (by something else on the machine: the store
// only ever appends) makes the values past its new end misses, dropped as corrupt with the
// reason, never partial bytes; the values before the cut are still served, and so is a
// value of the same key set again.
TEST(RocksdbStore, ASegmentCutWhileOpenMakesItsLostValuesMisses) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  const std::size_t n = 8192, each = n + l3::value_header_bytes;
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  rocksdb_store& s = **st;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(s.set(l3_pool::kv_page, std::to_string(i), numbered(i, n)).ok());
  std::string seg;
  for (const auto& f : std::filesystem::directory_iterator(cfg.path + "/values"))
    if (f.path().extension() == ".seg") seg = f.path().string();
  ASSERT_FALSE(seg.empty());
  std::filesystem::resize_file(seg, 2 * each + each / 2);  // value 2 is cut, value 3 gone
  std::vector<std::byte> out;
  for (int i : {2, 3}) {
    const status bad = s.get(l3_pool::kv_page, std::to_string(i), out);
    ASSERT_FALSE(bad.ok()) << i;
    EXPECT_EQ(bad.err().code, errc::not_found) << i;
    EXPECT_NE(bad.err().message.find("ends inside a record"), std::string::npos)
        << bad.err().message;
    EXPECT_TRUE(out.empty()) << "bytes of a failed read were served";
    EXPECT_FALSE(s.exists(l3_pool::kv_page, std::to_string(i))) << i;
  }
  EXPECT_EQ(s.usage().corrupt, 2u);
  EXPECT_EQ(s.usage().values, 2u);
  for (int i : {0, 1}) {
    ASSERT_TRUE(s.get(l3_pool::kv_page, std::to_string(i), out).ok()) << i;
    EXPECT_EQ(out, numbered(i, n));
  }
  ASSERT_TRUE(s.set(l3_pool::kv_page, "3", numbered(30, n)).ok());
  ASSERT_TRUE(s.get(l3_pool::kv_page, "3", out).ok());
  EXPECT_EQ(out, numbered(30, n));
}

TEST(RocksdbStore, ValuesWrittenButNeverIndexedLeaveNoSegmentBehind) {
  SKIP_UNLESS_SINGLE_THREADED();
  temp_dir dir;
  const std::string path = dir.sub("untimed");
  // No timed flush: the crash loses the index records, so the segment bytes are garbage.
  ASSERT_EQ(
      values_after_a_crash(path, std::chrono::milliseconds(0), std::chrono::milliseconds(100), 20),
      0u);
  auto s = open_store(path, 1ull << 30);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->segment_count(), 0u) << "a segment nothing points at is removed at open";
}

/// Runs body() in a child process whose `dir` is a tmpfs of `bytes` (a mount namespace of
/// its own; needs root). Returns the child's exit status, or -1 if it could not set up.
template <class Body>
int in_small_disk(const std::string& dir, std::size_t bytes, Body body) {
  const pid_t child = ::fork();
  if (child == 0) {
    const std::string size = "size=" + std::to_string(bytes);
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", dir.c_str(), "tmpfs", 0, size.c_str()) != 0)
      ::_exit(100);
    ::_exit(body());
  }
  int wst = 0;
  if (::waitpid(child, &wst, 0) != child || !WIFEXITED(wst)) return -2;
  return WEXITSTATUS(wst) == 100 ? -1 : WEXITSTATUS(wst);
}

/// A store in `disk`/l3 sized for a disk of a few MiB: 1 MiB segments and memtables.
rocksdb_store_config small_disk_config(const std::string& disk) {
  rocksdb_store_config cfg;
  cfg.path = disk + "/l3";
  cfg.segment_bytes = 1u << 20;  // 64 KiB values, 16 to a segment
  cfg.write_buffer_bytes = 1u << 20;
  return cfg;
}

/// Puts values "0" .. n-1 of 64 KiB, value i filled with i; false if one is refused.
bool put_numbered(rocksdb_store& st, int n) {
  for (int i = 0; i < n; ++i)
    if (!st.set(l3_pool::kv_page, std::to_string(i), bytes(static_cast<char>(i), 65536)))
      return false;
  return true;
}

// A disk smaller than the capacity: once full, a put drops the values of the oldest
// segment and is written. The store once refused every put from then on — nothing reached
// the capacity, so nothing was ever evicted.
TEST(RocksdbStore, AFullDiskDropsTheOldestSegmentAndTakesThePut) {
  SKIP_UNLESS_SINGLE_THREADED();
  if (::geteuid() != 0) GTEST_SKIP() << "a small disk (a tmpfs in a mount namespace) needs root";
  temp_dir dir;
  std::filesystem::create_directories(dir.sub("disk"));
  const int status = in_small_disk(dir.sub("disk"), 8u << 20, [&] {
    auto st = rocksdb_store::open(small_disk_config(dir.sub("disk")));
    if (!st) return 2;
    const int n = 400;  // 25 MiB of values on an 8 MiB disk
    if (!put_numbered(**st, n)) return 3;
    if ((*st)->disk_full_evictions() == 0) return 4;
    std::vector<std::byte> out;
    for (int i = n - 16; i < n; ++i)  // the newest segment's worth is all there
      if (!(*st)->get(l3_pool::kv_page, std::to_string(i), out) ||
          out != bytes(static_cast<char>(i), 65536))
        return 5;
    if ((*st)->exists(l3_pool::kv_page, "0")) return 6;  // the oldest made room
    if ((*st)->usage().bytes > (8u << 20)) return 7;
    return (*st)->close() ? 0 : 8;
  });
  if (status == -1) GTEST_SKIP() << "this machine refuses a mount namespace";
  EXPECT_EQ(status, 0) << "3: a put refused, 4: no drop, 5: a recent value lost, 6: the oldest "
                          "kept, 7: more than the disk, 8: close failed";
}

// The capacity follows the disk's free space at every check, but the log notes a
// shortfall only from 1/64 of the capacity on (once, until it deepens by 1/8 or ends): a
// disk whose free space hovered near capacity + min_free_bytes logged a line at every
// check, every few seconds. Here the capacity is the disk's free space, so min_free_bytes
// makes it short by that much (plus what the test writes and what runs beside it).
TEST(RocksdbStore, OnlyAShortfallOfDiskSpaceWorthSayingIsLogged) {
  temp_dir dir;
  struct statvfs fs {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &fs), 0);
  const std::uint64_t avail = std::uint64_t{fs.f_bavail} * fs.f_frsize;
  if (avail < (1u << 30)) GTEST_SKIP() << "needs 1 GiB free where the temporary files go";
  const auto log_lines = [&](std::uint64_t min_free, const std::string& sub) {
    rocksdb_store_config cfg;
    cfg.path = dir.sub(sub);
    cfg.capacity_bytes = avail;
    cfg.min_free_bytes = min_free;
    const std::string filler = dir.sub(sub + "-filler");
    ::testing::internal::CaptureStderr();
    {
      auto st = rocksdb_store::open(cfg);
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.err().message);
      for (int i = 0; st.ok() && i < 10; ++i) {  // the free space moves by 1 MiB each way
        std::ofstream(filler) << std::string(1u << 20, 'x');
        (*st)->keep_min_free();
        std::filesystem::remove(filler);
        (*st)->keep_min_free();
      }
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    std::size_t n = 0;
    for (auto at = err.find("L3 store: capacity"); at != std::string::npos;
         at = err.find("L3 store: capacity", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(log_lines(512u << 10, "small"), 0u) << "a shortfall of a few MiB is not news";
  EXPECT_EQ(log_lines(avail / 16, "large"), 1u) << "1/16 short: said once, not at every check";
}

// min_free_bytes: the store evicts so that its filesystem keeps that much free, and never
// fills it (no put meets a full disk).
TEST(RocksdbStore, TheStoreLeavesMinFreeBytesOnItsDisk) {
  SKIP_UNLESS_SINGLE_THREADED();
  if (::geteuid() != 0) GTEST_SKIP() << "a small disk (a tmpfs in a mount namespace) needs root";
  temp_dir dir;
  std::filesystem::create_directories(dir.sub("disk"));
  const std::string disk = dir.sub("disk");
  const int status = in_small_disk(disk, 16u << 20, [&] {
    rocksdb_store_config cfg = small_disk_config(disk);
    cfg.min_free_bytes = 6u << 20;
    auto st = rocksdb_store::open(cfg);
    if (!st) return 2;
    const int n = 400;  // 25 MiB of values on a 16 MiB disk
    if (!put_numbered(**st, n)) return 3;
    if ((*st)->disk_full_evictions() != 0) return 4;  // the disk never filled
    const auto free_now = std::filesystem::space(disk).available;
    // Checked every min_free / 4 written: up to that much (and the active segment's dead
    // tail) below the mark between checks.
    if (free_now < (6u << 20) - (3u << 19)) return 5;
    std::vector<std::byte> out;
    if (!(*st)->get(l3_pool::kv_page, std::to_string(n - 1), out) ||
        out != bytes(static_cast<char>(n - 1), 65536))
      return 6;
    if ((*st)->usage().capacity >= cfg.capacity_bytes) return 7;  // lowered, and says so
    return (*st)->close() ? 0 : 8;
  });
  if (status == -1) GTEST_SKIP() << "this machine refuses a mount namespace";
  EXPECT_EQ(status, 0) << "3: a put refused, 4: the disk filled, 5: less than min_free left, "
                          "6: the newest value lost, 7: capacity not lowered, 8: close failed";
}

TEST(RocksdbStore, BadDirectoriesAreClearErrors) {
  temp_dir dir;
  rocksdb_store_config cfg;
  EXPECT_EQ(rocksdb_store::open(cfg).err().code, errc::invalid_config) << "empty path";

  cfg.path = dir.sub("l3");
  auto first = rocksdb_store::open(cfg);
  ASSERT_TRUE(first.ok());
  auto second = rocksdb_store::open(cfg);
  ASSERT_FALSE(second.ok()) << "the directory is locked by the first store";
  EXPECT_EQ(second.err().code, errc::io_error);
  EXPECT_NE(second.err().message.find(cfg.path), std::string::npos) << second.err().message;

  const std::string file = dir.sub("plain-file");
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fclose(f);
  }
  cfg.path = file;
  auto on_file = rocksdb_store::open(cfg);
  ASSERT_FALSE(on_file.ok());
  EXPECT_EQ(on_file.err().code, errc::io_error);
}

/// Overwrites with bytes that are no RocksDB file the first `bytes` bytes (0: all) of
/// every file of `dir` whose name starts with `prefix`: what bit rot or a torn write leaves.
void garble(const std::string& dir, const std::string& prefix, std::uintmax_t bytes) {
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().filename().string().rfind(prefix, 0) != 0) continue;
    const auto size = std::filesystem::file_size(f.path());
    const auto n = bytes == 0 ? size : std::min(bytes, size);
    std::FILE* out = std::fopen(f.path().c_str(), "r+b");
    ASSERT_NE(out, nullptr);
    for (std::uintmax_t i = 0; i < n; ++i)
      std::fputc(static_cast<int>((i * 131 + 7) & 0xff), out);
    std::fclose(out);
  }
}

struct damage {
  const char* name;
  const char* prefix;    ///< of the index files damaged
  std::uintmax_t bytes;  ///< garbled from their start; 0 = whole files
  const char* said;      ///< what the refusal names
  bool removed = false;  ///< the files deleted instead of garbled
};

/// Deletes every file of `dir` whose name starts with `prefix`: a cleanup script, a lost
/// file.
void remove_files(const std::string& dir, const std::string& prefix) {
  std::vector<std::filesystem::path> gone;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().filename().string().rfind(prefix, 0) == 0) gone.push_back(f.path());
  ASSERT_FALSE(gone.empty()) << "no " << prefix << " file in " << dir;
  for (const auto& f : gone)
    std::filesystem::remove(f);
}

class CorruptIndex : public ::testing::TestWithParam<damage> {};

// A store whose index RocksDB finds corrupt (CURRENT, MANIFEST, a table file, or only the
// data block that holds the format marker and the records — found after RocksDB opened,
// where the failed open's cleanup once crashed on segments it had not opened yet), or
// whose MANIFEST or table files are gone (a deleted MANIFEST once failed every start after
// it: tools/crash_test.sh with HC_CRASH_DAMAGE): by default open fails naming what it
// found; with quarantine_corrupt the directory is moved aside (its index kept, its values
// deleted) and the store starts empty.
TEST_P(CorruptIndex, FailsTheOpenOrIsMovedAsideAndTheStoreStartsEmpty) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  ASSERT_NO_FATAL_FAILURE(fill_numbered(cfg, 100, 512));  // closed: the records are in a table file
  if (GetParam().removed)
    ASSERT_NO_FATAL_FAILURE(remove_files(cfg.path + "/index", GetParam().prefix));
  else
    garble(cfg.path + "/index", GetParam().prefix, GetParam().bytes);
  const std::string said = GetParam().said;

  auto refused = rocksdb_store::open(cfg);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, errc::io_error);
  EXPECT_NE(refused.err().message.find(said), std::string::npos) << refused.err().message;
  EXPECT_FALSE(std::filesystem::exists(cfg.path + ".corrupt")) << "nothing moved by default";

  cfg.quarantine_corrupt = true;
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  rocksdb_store& s = **st;
  EXPECT_NE(s.quarantined().find(said), std::string::npos) << s.quarantined();
  EXPECT_NE(s.quarantined().find(cfg.path + ".corrupt"), std::string::npos) << s.quarantined();
  EXPECT_TRUE(std::filesystem::exists(cfg.path + ".corrupt/index")) << "kept for inspection";
  EXPECT_FALSE(std::filesystem::exists(cfg.path + ".corrupt/values")) << "no disk held by it";
  EXPECT_EQ(s.usage().values, 0u);
  EXPECT_FALSE(s.exists(l3_pool::kv_page, "1"));
  ASSERT_TRUE(s.set(l3_pool::kv_page, "new", numbered(7, 512)).ok());
  std::vector<std::byte> out;
  ASSERT_TRUE(s.get(l3_pool::kv_page, "new", out).ok());
  EXPECT_EQ(out, numbered(7, 512));
  ASSERT_TRUE(s.close().ok());
  auto again = rocksdb_store::open(cfg);  // the fresh store is whole: nothing to move
  ASSERT_TRUE(again.ok()) << again.err().message;
  EXPECT_TRUE((*again)->quarantined().empty());
  EXPECT_EQ((*again)->usage().values, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Files, CorruptIndex,
    ::testing::Values(damage{"Current", "CURRENT", 0, "Corruption"},
                      damage{"Manifest", "MANIFEST", 0, "Corruption"},
                      damage{"TableFiles", "0", 0, "Corruption"},
                      damage{"TableDataBlocks", "0", 64, "Corruption"},
                      damage{"ManifestDeleted", "MANIFEST", 0, "No such file", true},
                      damage{"TableFilesDeleted", "0", 0, "No such file", true}),
    [](const auto& p) { return std::string(p.param.name); });

// The daemon's start (actors/daemon/l3_start.cpp): open_unloaded, then load — possibly
// stopped because the node stops first. A stopped load returns having deleted nothing: the
// clean-up at the end of a load (records naming lost bytes, segments no record names)
// would take a partial index for the whole and delete live values.
TEST(RocksdbStore, AnIndexReadInTwoStepsOrStoppedLosesNothing) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.segment_bytes = 64 << 10;  // many segments: a partial index names only some
  constexpr int n = 70000;       // past the 65,536 records after which a stop is seen
  {
    auto st = rocksdb_store::open(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    for (int i = 0; i < n; ++i)
      ASSERT_TRUE((*st)->set(l3_pool::kv_page, std::to_string(i), numbered(i, 16)).ok());
  }
  const auto segments_before =
      std::distance(std::filesystem::directory_iterator(cfg.path + "/values"),
                    std::filesystem::directory_iterator());
  {
    auto st = rocksdb_store::open_unloaded(cfg);
    ASSERT_TRUE(st.ok()) << st.err().message;
    EXPECT_GE((*st)->index_records_estimate(), n / 2u) << "RocksDB's estimate is rough";
    std::atomic<bool> stop{true};
    rocksdb_load_options lo;
    lo.stop = &stop;
    auto stopped = rocksdb_store::load(std::move(*st), lo);
    ASSERT_FALSE(stopped.ok());
    EXPECT_NE(stopped.err().message.find("stopped"), std::string::npos) << stopped.err().message;
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cfg.path + "/values"),
                          std::filesystem::directory_iterator()),
            segments_before)
      << "a stopped load removed segments";
  auto st = rocksdb_store::open_unloaded(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  std::vector<std::uint64_t> progress;
  rocksdb_load_options lo;
  lo.progress_every = 10000;
  lo.progress = [&](std::uint64_t records, std::uint64_t) { progress.push_back(records); };
  auto loaded = rocksdb_store::load(std::move(*st), lo);
  ASSERT_TRUE(loaded.ok()) << loaded.err().message;
  rocksdb_store& s = **loaded;
  EXPECT_EQ(s.usage().values, static_cast<std::uint64_t>(n));
  EXPECT_EQ(progress,
            (std::vector<std::uint64_t>{10000, 20000, 30000, 40000, 50000, 60000, 70000}));
  std::vector<std::byte> out;
  for (int i : {0, 12345, n - 1}) {
    ASSERT_TRUE(s.get(l3_pool::kv_page, std::to_string(i), out).ok()) << i;
    EXPECT_EQ(out, numbered(i, 16));
  }
}

// A corruption RocksDB finds only while reading the index (a data block past the one that
// holds the format marker) is moved aside by load(), as open() does with one found at
// open: the caller gets an empty store in its place.
TEST(RocksdbStore, ACorruptionFoundReadingTheIndexIsMovedAsideToo) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  // Closed: the records are in a table file of many data blocks.
  ASSERT_NO_FATAL_FAILURE(fill_numbered(cfg, 5000, 16));
  ASSERT_NO_FATAL_FAILURE(damage_index_tables(cfg.path));  // a block mid-file
  cfg.quarantine_corrupt = true;
  auto st = rocksdb_store::open_unloaded(cfg);
  ASSERT_TRUE(st.ok()) << "the marker's block is whole: " << st.err().message;
  EXPECT_TRUE((*st)->quarantined().empty());
  auto loaded = rocksdb_store::load(std::move(*st));
  ASSERT_TRUE(loaded.ok()) << loaded.err().message;
  rocksdb_store& s = **loaded;
  EXPECT_NE(s.quarantined().find("Corruption"), std::string::npos) << s.quarantined();
  EXPECT_TRUE(std::filesystem::exists(cfg.path + ".corrupt/index"));
  EXPECT_EQ(s.usage().values, 0u);
  ASSERT_TRUE(s.set(l3_pool::kv_page, "new", numbered(7, 16)).ok());
  EXPECT_TRUE(s.exists(l3_pool::kv_page, "new"));
}

TEST(RocksdbStore, ALockedStoreIsNeverMovedAside) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.quarantine_corrupt = true;
  auto first = rocksdb_store::open(cfg);
  ASSERT_TRUE(first.ok());
  auto second = rocksdb_store::open(cfg);  // another node's directory: not corrupt
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.err().code, errc::io_error);
  EXPECT_FALSE(std::filesystem::exists(cfg.path + ".corrupt"));
}

/// The store's format marker (tests/support/l3_format_marker.hpp), read or, given `replace`,
/// overwritten while the store is closed.
std::string format_marker(const std::string& path, const std::string* replace = nullptr) {
  std::string error;
  std::string marker = l3_format_marker(path, replace, error);
  EXPECT_EQ(error, "");
  return marker;
}

// A store of a format this build does not read (a later release's, say) is refused, naming
// both formats and what to do, and left exactly as it was: not moved aside as a corrupt one
// would be, not rewritten. Given its own marker back, it serves its values again.
TEST(RocksdbStore, AStoreOfAnotherFormatIsRefusedAndLeftAsItWas) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.quarantine_corrupt = true;  // as the node opens it
  ASSERT_NO_FATAL_FAILURE(fill_numbered(cfg, 20, 4096));
  const std::string later = "hybridcache-l3/99";
  const std::string ours = format_marker(cfg.path, &later);
  ASSERT_FALSE(ours.empty());
  ASSERT_NE(ours, later);
  const auto files_in = [](const std::string& d) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(d))
      ++n;
    return n;
  };
  const std::size_t segment_files = files_in(cfg.path + "/values");
  ASSERT_GT(segment_files, 0u);

  for (int attempt = 0; attempt < 2; ++attempt) {  // a second try finds it the same
    auto st = rocksdb_store::open(cfg);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.err().code, errc::invalid_config);
    for (const std::string& part : {later, ours, std::string("--data-dir"), cfg.path})
      EXPECT_NE(st.err().message.find(part), std::string::npos) << st.err().message;
  }
  EXPECT_FALSE(std::filesystem::exists(cfg.path + ".corrupt"));
  EXPECT_EQ(files_in(cfg.path + "/values"), segment_files);
  EXPECT_EQ(format_marker(cfg.path), later) << "the refused store's marker was rewritten";

  format_marker(cfg.path, &ours);
  auto st = rocksdb_store::open(cfg);
  ASSERT_TRUE(st.ok()) << st.err().message;
  EXPECT_EQ((*st)->usage().values, 20u);
  std::vector<std::byte> out;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE((*st)->get(l3_pool::kv_page, std::to_string(i), out).ok()) << i;
    EXPECT_EQ(out, numbered(i, 4096)) << i;
  }
}

// The first format kept its values inside RocksDB, in a "pages" column family at the store's
// path itself: such a directory is refused by name, and RocksDB still opens it as it was.
TEST(RocksdbStore, AStoreOfTheFirstFormatIsRefusedNamingIt) {
  temp_dir dir;
  rocksdb_store_config cfg;
  cfg.path = dir.sub("l3");
  cfg.quarantine_corrupt = true;
  const auto open_first = [&](rocksdb::DB** raw, std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    rocksdb::DBOptions opts;
    opts.create_if_missing = true;
    opts.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> families{
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {"pages", rocksdb::ColumnFamilyOptions()}};
    return rocksdb::DB::Open(opts, cfg.path, families, &h, raw);
  };
  const auto close_first = [](rocksdb::DB* raw, std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    for (rocksdb::ColumnFamilyHandle* c : h)
      EXPECT_TRUE(raw->DestroyColumnFamilyHandle(c).ok());
    delete raw;
  };
  {
    rocksdb::DB* raw = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    ASSERT_TRUE(open_first(&raw, h).ok());
    ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), h[1], "page", "a value of format 1").ok());
    close_first(raw, h);
  }
  auto st = rocksdb_store::open(cfg);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.err().code, errc::invalid_config);
  EXPECT_NE(st.err().message.find("'hybridcache-l3/1'"), std::string::npos) << st.err().message;
  EXPECT_FALSE(std::filesystem::exists(cfg.path + ".corrupt"));
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  ASSERT_TRUE(open_first(&raw, h).ok());
  std::string v;
  EXPECT_TRUE(raw->Get(rocksdb::ReadOptions(), h[1], "page", &v).ok());
  EXPECT_EQ(v, "a value of format 1");
  close_first(raw, h);
}

TEST(RocksdbStore, ClosedStoreRefusesWork) {
  temp_dir dir;
  auto s = open_store(dir.sub("l3"), 1 << 20);
  ASSERT_TRUE(s->close().ok());
  EXPECT_EQ(s->set(l3_pool::kv_page, "k", bytes('k', 10)).err().code, errc::io_error);
  std::vector<std::byte> out;
  EXPECT_EQ(s->get(l3_pool::kv_page, "k", out).err().code, errc::io_error);
  EXPECT_TRUE(s->close().ok()) << "closing twice is harmless";
}

}  // namespace
}  // namespace hc::test
