// The device seam (actors/common/l1_pool.hpp): the CPU implementation's range checks, the
// shared-memory pools a worker maps, and the tier copies between an L1 pool and the L2
// host pools through the interface only; the sweep of the segments crashed nodes leave.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "actors/forward_stream/tier_copier.hpp"
#include "gpu/shm_l1_pool.hpp"
#include "gpu/shm_region.hpp"

namespace hc::test {
namespace {

std::vector<std::byte> filled(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((seed * 31 + static_cast<int>(i)) & 0xff);
  return v;
}

TEST(L1Pool, ByteAccessChecksEveryIdAndSize) {
  std::vector<std::byte> kv(8 * 4), ssm(4 * 16);
  byte_l1_pool p(kv, 4, ssm, 16);
  EXPECT_EQ(p.kv_tokens(), 8u);
  EXPECT_EQ(p.slots(), 4u);
  const auto three = filled(12, 1);
  ASSERT_TRUE(p.write_kv(5, 3, three).ok());
  std::vector<std::byte> back(12);
  ASSERT_TRUE(p.read_kv(5, 3, back).ok());
  EXPECT_EQ(back, three);
  EXPECT_FALSE(p.write_kv(6, 3, three).ok()) << "past the last token";
  EXPECT_FALSE(p.read_kv(-1, 1, std::span<std::byte>(back).first(4)).ok());
  EXPECT_FALSE(p.read_kv(0, 2, back).ok()) << "buffer size must be n * token_bytes";
  const auto state = filled(16, 2);
  ASSERT_TRUE(p.write_slot(3, state).ok());
  ASSERT_TRUE(p.copy_slot(3, 1).ok());
  std::vector<std::byte> s(16);
  ASSERT_TRUE(p.read_slot(1, s).ok());
  EXPECT_EQ(s, state);
  ASSERT_TRUE(p.clear_slot(3).ok());
  ASSERT_TRUE(p.read_slot(3, s).ok());
  EXPECT_EQ(s, std::vector<std::byte>(16));
  EXPECT_FALSE(p.clear_slot(0).ok()) << "slot 0 is reserved";
  EXPECT_FALSE(p.copy_slot(1, 1).ok()) << "a copy onto itself";
  EXPECT_FALSE(p.copy_slot(1, 4).ok()) << "out of range";
  byte_l1_pool none({}, 0, {}, 0);
  EXPECT_FALSE(none.clear_slot(1).ok()) << "no slot bytes";
  EXPECT_FALSE(none.write_kv(0, 0, {}).ok()) << "no KV bytes";
}

TEST(L1Pool, SharedMemoryPoolsAreNamedMappableAndSized) {
  const std::string base = "/hc-l1pool-test-" + std::to_string(::getpid());
  auto p = shm_l1_pool::create(base + "-kv", 8, 4, base + "-ssm", 3, 16);
  ASSERT_TRUE(p.ok()) << p.err().message;
  const l1_pool_names n = (*p)->names();
  EXPECT_EQ(n.kv, base + "-kv");
  EXPECT_EQ(n.kv_bytes, 32u);
  EXPECT_EQ(n.ssm_bytes, 48u);
  const auto state = filled(16, 3);
  ASSERT_TRUE((*p)->write_slot(2, state).ok());
  auto worker = shm_region::map(n.ssm, n.ssm_bytes);  // what a worker maps
  ASSERT_TRUE(worker.ok()) << worker.err().message;
  EXPECT_EQ(std::vector<std::byte>(worker->bytes().begin() + 32, worker->bytes().end()), state);
  auto kv_only = shm_l1_pool::create(base + "-kv2", 8, 4, base + "-ssm2", 3, 0);
  ASSERT_TRUE(kv_only.ok()) << kv_only.err().message;
  EXPECT_EQ((*kv_only)->names().ssm, "") << "no slot bytes: no region";
}

TEST(L1Pool, UnlinkedNamesAreGoneWhileTheMappingsStayValid) {
  const std::string base = "/hc-l1pool-unlink-" + std::to_string(::getpid());
  auto p = shm_l1_pool::create(base + "-kv", 8, 4, base + "-ssm", 3, 16);
  ASSERT_TRUE(p.ok()) << p.err().message;
  const l1_pool_names n = (*p)->names();
  auto worker = shm_region::map(n.ssm, n.ssm_bytes);
  ASSERT_TRUE(worker.ok()) << worker.err().message;
  shm_l1_pool::unlink(n);
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + n.kv));
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + n.ssm));
  EXPECT_FALSE(shm_region::map(n.ssm, n.ssm_bytes).ok()) << "no new worker can map it";
  const auto state = filled(16, 5);
  ASSERT_TRUE((*p)->write_slot(1, state).ok()) << "the pool's own mapping stays valid";
  EXPECT_EQ(std::vector<std::byte>(worker->bytes().begin() + 16, worker->bytes().begin() + 32),
            state)
      << "and so does a worker's";
  shm_l1_pool::unlink(n);  // a second time: nothing left, no error
  p->reset();              // the destructor finds the names gone
}

TEST(L1Pool, TierCopiesGoThroughTheInterfaceBothWays) {
  std::vector<std::byte> kv(16 * 4), ssm(4 * 8);
  byte_l1_pool dev(kv, 4, ssm, 8);
  host_pool_sizes sizes;
  sizes.kv_tokens = 16;
  sizes.slots = 2;
  sizes.kv_bytes_per_token = 4;
  sizes.state_bytes = 8;
  host_pools host(sizes, 1);
  const auto tokens = filled(4 * 4, 4);
  ASSERT_TRUE(dev.write_kv(2, 4, tokens).ok());
  const auto state = filled(8, 5);
  ASSERT_TRUE(dev.write_slot(3, state).ok());
  tier_copy down;  // device 2..5 -> host 9, 10, 7, 8 (two runs), slot 3 -> host slot 1
  down.device_kv = {2, 3, 4, 5};
  down.host_kv = {9, 10, 7, 8};
  down.device_slot = 3;
  down.host_slot = 1;
  EXPECT_EQ(run_tier_copy(dev, host, down), 4u * 4 + 8);
  // back to other device ids: device 10..13, slot 1
  tier_copy up;
  up.dir = tier_copy::direction::host_to_device;
  up.device_kv = {10, 11, 12, 13};
  up.host_kv = {9, 10, 7, 8};
  up.device_slot = 1;
  up.host_slot = 1;
  EXPECT_EQ(run_tier_copy(dev, host, up), 4u * 4 + 8);
  std::vector<std::byte> back(16), s(8);
  ASSERT_TRUE(dev.read_kv(10, 4, back).ok());
  EXPECT_EQ(back, tokens);
  ASSERT_TRUE(dev.read_slot(1, s).ok());
  EXPECT_EQ(s, state);
  tier_copy bad = up;
  bad.device_kv[0] = 16;  // past the device pool
  EXPECT_EQ(run_tier_copy(dev, host, bad), 0u) << "nothing moves when an id is out of range";
}

}  // namespace
}  // namespace hc::test

namespace hc::test {
namespace {

/// A segment created and left behind, as a killed process leaves its pools.
void leave_segment(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << name;
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
}

TEST(OrphanedSegments, ThoseOfDeadProcessesAndOfAReusedPidAreUnlinkedOthersStay) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // `child` is now a dead pid
  const std::string stem = "hctest-orphans-";
  const std::string dead = "/" + stem + std::to_string(child) + "-i1-kv";
  const std::string reused = "/" + stem + std::to_string(::getpid()) + "-i1-ssm";
  const std::string live = "/" + stem + std::to_string(::getppid()) + "-i1-kv";
  const std::string other = "/" + stem + "notapid-x";
  for (const auto& n : {dead, reused, live, other})
    leave_segment(n);
  EXPECT_EQ(unlink_orphaned_segments(stem, ::getpid()), 2u);
  auto exists = [](const std::string& n) { return std::filesystem::exists("/dev/shm" + n); };
  EXPECT_FALSE(exists(dead));
  EXPECT_FALSE(exists(reused));
  EXPECT_TRUE(exists(live)) << "a live process's pools are never touched";
  EXPECT_TRUE(exists(other));
  ::shm_unlink(live.c_str());
  ::shm_unlink(other.c_str());
}

}  // namespace
}  // namespace hc::test
