// The shared-memory pools of CPU mode beyond the device seam's contract
// (l1_pool_contract_test.cpp): their names a worker maps, and unlinking (the sweep of the
// segments crashed nodes leave: shm_owner_test.cpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

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

/// The permission bits of /dev/shm<name>.
unsigned mode_of(const std::string& name) {
  struct stat st {};
  return ::stat(("/dev/shm" + name).c_str(), &st) == 0 ? st.st_mode & 07777u : 0u;
}

// The node's user alone maps its pools (0600), or its group too (0660) — whatever the
// umask: a usual 022 would leave a group pool read-only to the workers that write it.
TEST(L1Pool, PoolsAreTheUsersAloneOrItsGroupsWhateverTheUmask) {
  const std::string base = "/hc-l1pool-mode-" + std::to_string(::getpid());
  for (const mode_t umask : {mode_t{022}, mode_t{077}, mode_t{0}}) {
    const mode_t old = ::umask(umask);
    auto own = shm_l1_pool::create(base + "-kv", 8, 4, base + "-ssm", 3, 16);
    auto shared =
        shm_l1_pool::create(base + "-gkv", 8, 4, base + "-gssm", 3, 16, shm_access::group);
    auto arena = shm_region::create(base + "-arena", 64, shm_access::group);
    ::umask(old);
    ASSERT_TRUE(own.ok() && shared.ok() && arena.ok());
    EXPECT_EQ(mode_of(base + "-kv"), 0600u) << "umask " << umask;
    EXPECT_EQ(mode_of(base + "-ssm"), 0600u) << "umask " << umask;
    EXPECT_EQ(mode_of(base + "-gkv"), 0660u) << "umask " << umask;
    EXPECT_EQ(mode_of(base + "-gssm"), 0660u) << "umask " << umask;
    EXPECT_EQ(mode_of(base + "-arena"), 0660u) << "umask " << umask;
  }
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

}  // namespace
}  // namespace hc::test
