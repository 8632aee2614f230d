// Whose shared-memory names are whose (gpu/shm_owner.hpp): the node's claim, and the sweep
// at start that unlinks the segments of nodes that are gone and never those of live ones —
// whatever pid their names carry, whatever PID namespace they run in.
#include "gpu/shm_owner.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace hc::test {
namespace {

bool exists(const std::string& name) {
  return std::filesystem::exists("/dev/shm" + name);
}

/// A segment created and left behind, as a killed node leaves its pools.
void leave_segment(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
}

/// A stem of this test's own: the sweep only reads names that start with it.
std::string stem(const std::string& test) {
  return "hctest-" + test + std::to_string(::getpid()) + "-";
}

/// A dead pid: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

/// A process that holds the flock of `marker` (a "<prefix>-owner" path in /dev/shm, made
/// as shm_owner::claim makes it, but for a prefix of the test's choosing) until release().
class marker_holder {
 public:
  explicit marker_holder(const std::string& marker) {
    int ready[2], done[2];
    if (::pipe(ready) != 0 || ::pipe(done) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(done[1]);
      const int fd = ::open(("/dev/shm" + marker).c_str(), O_CREAT | O_RDWR, 0600);
      const char ok = fd >= 0 && ::flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
      (void)!::write(ready[1], &ok, 1);
      char c;
      (void)!::read(done[0], &c, 1);  // until the test closes its end
      ::_exit(0);                     // the lock goes with the process; the marker stays
    }
    ::close(ready[1]);
    ::close(done[0]);
    done_ = done[1];
    char ok = 'n';
    (void)!::read(ready[0], &ok, 1);
    ::close(ready[0]);
    locked_ = ok == 'y';
  }
  marker_holder(const marker_holder&) = delete;
  marker_holder& operator=(const marker_holder&) = delete;
  ~marker_holder() { release(); }
  bool locked() const { return locked_; }
  void release() {
    if (pid_ <= 0) return;
    ::close(done_);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int done_ = -1;
  bool locked_ = false;
};

TEST(ShmOwner, EachClaimHasItsOwnPrefixAndItsMarkerLivesAsLongAsTheClaim) {
  const std::string st = stem("claim");
  auto a = shm_owner::claim(st);
  auto b = shm_owner::claim(st);
  ASSERT_TRUE(a && b) << (a ? b.err().message : a.err().message);
  EXPECT_NE(a->prefix(), b->prefix()) << "one process, one pid: the nonce tells them apart";
  EXPECT_EQ(a->prefix().rfind("/" + st + std::to_string(::getpid()) + "-", 0), 0u) << a->prefix();
  EXPECT_TRUE(exists(a->prefix() + "-owner"));
  leave_segment(a->prefix() + "-i1-kv");
  EXPECT_EQ(unlink_orphaned_segments(st), 0u) << "a live claim's segments and marker stay";
  EXPECT_TRUE(exists(a->prefix() + "-i1-kv"));
  const std::string gone = a->prefix();
  *a = std::move(*b);  // the first claim ends: its marker goes, its segment is an orphan
  EXPECT_FALSE(exists(gone + "-owner"));
  EXPECT_EQ(unlink_orphaned_segments(st), 1u);
  EXPECT_FALSE(exists(gone + "-i1-kv"));
  EXPECT_TRUE(exists(a->prefix() + "-owner"));
  leave_segment(a->prefix() + "-s1-rows");
  EXPECT_EQ(unlink_segments_of(a->prefix()), 2u) << "its segment and its marker";
  EXPECT_FALSE(exists(a->prefix() + "-owner"));
}

// The node's sweep once went by pid alone: it unlinked the segments of every pid that did
// not exist here, and of its own pid. Where /dev/shm is shared across PID namespaces
// (containers with --ipc=host, each node pid 1) that was a live node's pools — and the new
// node then created pools under the same names, which the live node's workers mapped.
TEST(OrphanedSegments, ALockedMarkerKeepsItsSegmentsWhateverPidTheirNamesCarry) {
  const std::string st = stem("locked");
  const std::string nonce = "-0123456789abcdef";
  const std::string as_own = "/" + st + std::to_string(::getpid()) + nonce;
  const std::string as_dead = "/" + st + std::to_string(dead_pid()) + nonce;
  for (const std::string& group : {as_own, as_dead}) {
    marker_holder owner(group + "-owner");
    ASSERT_TRUE(owner.locked());
    leave_segment(group + "-i1-kv");
    leave_segment(group + "-store-1");
    EXPECT_EQ(unlink_orphaned_segments(st), 0u) << group;
    EXPECT_TRUE(exists(group + "-i1-kv")) << "a live node's pools are never touched";
    EXPECT_TRUE(exists(group + "-owner"));
    owner.release();  // the node dies (as by SIGKILL: the marker stays, unlocked)
    EXPECT_EQ(unlink_orphaned_segments(st), 3u) << group;
    EXPECT_FALSE(exists(group + "-i1-kv"));
    EXPECT_FALSE(exists(group + "-store-1"));
    EXPECT_FALSE(exists(group + "-owner"));
  }
}

TEST(OrphanedSegments, SegmentsWithoutTheirMarkerGo) {
  const std::string st = stem("unmarked");
  const std::string group = "/" + st + std::to_string(::getppid()) + "-fedcba9876543210";
  leave_segment(group + "-i3-ssm");
  EXPECT_EQ(unlink_orphaned_segments(st), 1u);
  EXPECT_FALSE(exists(group + "-i3-ssm"));
}

// Names of nodes from before the claim ("<stem><pid>-...", no nonce): their pid is all
// there is, so a dead one goes and a live one stays; this process's own pid is no longer
// taken for a dead node's (its names now carry a nonce, and cannot collide).
TEST(OrphanedSegments, NamesFromBeforeTheClaimGoByTheirPid) {
  const std::string st = stem("legacy");
  const std::string dead = "/" + st + std::to_string(dead_pid()) + "-i1-kv";
  const std::string own = "/" + st + std::to_string(::getpid()) + "-i1-ssm";
  const std::string live = "/" + st + std::to_string(::getppid()) + "-i1-kv";
  const std::string other = "/" + st + "notapid-x";
  for (const auto& n : {dead, own, live, other})
    leave_segment(n);
  EXPECT_EQ(unlink_orphaned_segments(st), 1u);
  EXPECT_FALSE(exists(dead));
  EXPECT_TRUE(exists(own));
  EXPECT_TRUE(exists(live));
  EXPECT_TRUE(exists(other));
  for (const auto& n : {own, live, other})
    ::shm_unlink(n.c_str());
}

// The case itself: a sweep in another PID namespace, where this process's pid does not
// exist, leaves this process's claimed pools — and, for contrast, takes a pre-claim name of
// the same pid, which it has no way to tell from a dead node's.
TEST(OrphanedSegments, ASweepInAnotherPidNamespaceLeavesALiveClaim) {
  const std::string st = stem("pidns");
  auto claim = shm_owner::claim(st);
  ASSERT_TRUE(claim) << claim.err().message;
  leave_segment(claim->prefix() + "-i1-kv");
  const std::string unclaimed = "/" + st + std::to_string(::getpid()) + "-i1-kv";
  leave_segment(unclaimed);
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    char r = 'e';
    if (::unshare(CLONE_NEWPID) != 0) {
      r = 'p';  // no CAP_SYS_ADMIN
    } else if (const pid_t in_ns = ::fork(); in_ns == 0) {
      // pid 1 of a new PID namespace: the test's pid names no process here.
      const bool alone = ::getpid() == 1;
      const std::size_t n = unlink_orphaned_segments(st);
      ::_exit(!alone ? 9 : static_cast<int>(n));
    } else if (in_ns > 0) {
      int status = 0;
      ::waitpid(in_ns, &status, 0);
      r = WIFEXITED(status) ? static_cast<char>('0' + WEXITSTATUS(status)) : 'e';
    }
    (void)!::write(report[1], &r, 1);
    ::_exit(0);
  }
  ::close(report[1]);
  char r = 'e';
  (void)!::read(report[0], &r, 1);
  ::close(report[0]);
  ::waitpid(child, nullptr, 0);
  ::shm_unlink(unclaimed.c_str());
  if (r == 'p') GTEST_SKIP() << "a new PID namespace needs CAP_SYS_ADMIN (run as root)";
  EXPECT_EQ(r, '1') << "the sweep in the other namespace unlinked exactly the pre-claim name";
  EXPECT_TRUE(exists(claim->prefix() + "-i1-kv")) << "a live claim's pools are kept";
  EXPECT_TRUE(exists(claim->prefix() + "-owner"));
  EXPECT_EQ(unlink_segments_of(claim->prefix()), 2u);
}

}  // namespace
}  // namespace hc::test
