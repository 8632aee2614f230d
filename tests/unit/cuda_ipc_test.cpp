// CUDA mode across processes: a second process (tests/support/cuda_ipc_peer) maps the
// node's CUDA pools through their IPC handles, sees what the pool's stream wrote (a
// kernel copy included) once the pool synchronized, and its writes are seen by the pool.
// Skips, saying why, without a usable device; the refusals run everywhere.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gpu/cuda_ipc_mapping.hpp"
#include "gpu/cuda_l1_pool.hpp"
#include "gpu/device_probe.hpp"

namespace hc::test {
namespace {

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string hex(const std::vector<std::byte>& v) {
  return hex(std::string_view(reinterpret_cast<const char*>(v.data()), v.size()));
}

std::vector<std::byte> pattern(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((seed * 13 + static_cast<int>(i) * 5) & 0xff);
  return v;
}

/// Runs the peer; its stdout, or nothing with the test failed.
std::string peer(const std::string& args) {
  const std::string cmd = std::string(HC_CUDA_IPC_PEER) + " " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen " << cmd;
    return {};
  }
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr)
    out += buf;
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << cmd;
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

TEST(CudaIpc, ASecondProcessSeesThePoolsWritesAndThePoolSeesItsWrites) {
  const gpu::device_probe_result probe = gpu::probe_devices();
  if (probe.device_count == 0)
    GTEST_SKIP() << (probe.built_with_cuda ? "no usable CUDA device: " + probe.reason
                                           : std::string("built without CUDA"));
  constexpr std::size_t slot_bytes = 4096;
  auto pool = make_cuda_l1_pool({0, 64, 16, 6, slot_bytes});
  ASSERT_TRUE(pool.ok()) << pool.err().message;
  l1_pool& p = **pool;
  const auto state = pattern(slot_bytes, 3);
  ASSERT_TRUE(p.write_slot(3, state).ok());
  const slot_copy copies[] = {{3, 2}, {2, 5}};  // a chain: two launches
  EXPECT_EQ(p.copy_slots(copies), 0u);
  ASSERT_TRUE(p.synchronize().ok());
  const l1_pool_names n = p.names();
  const std::string base = "0 " + hex(n.ssm_ipc) + " " + std::to_string(n.ssm_bytes) + " ";
  EXPECT_EQ(peer(base + std::to_string(5 * slot_bytes) + " read " + std::to_string(slot_bytes)),
            hex(state));
  const auto worker = pattern(slot_bytes, 9);
  peer(base + std::to_string(1 * slot_bytes) + " write " + hex(worker));
  std::vector<std::byte> back(slot_bytes);
  ASSERT_TRUE(p.read_slot(1, back).ok());
  EXPECT_EQ(back, worker);
  const auto tokens = pattern(4 * 16, 4);  // and the KV pool
  ASSERT_TRUE(p.write_kv(8, 4, tokens).ok());
  EXPECT_EQ(peer("0 " + hex(n.kv_ipc) + " " + std::to_string(n.kv_bytes) + " " +
                 std::to_string(8 * 16) + " read 64"),
            hex(tokens));
}

TEST(CudaIpc, BadHandlesAndMissingDevicesAreRefused) {
  const gpu::device_probe_result probe = gpu::probe_devices();
  auto short_handle = cuda_ipc_mapping::open(0, "abc", 64);
  ASSERT_FALSE(short_handle.ok());
  EXPECT_EQ(short_handle.err().code,
            probe.built_with_cuda ? errc::invalid_argument : errc::invalid_config)
      << short_handle.err().message;
  if (probe.device_count > 0) return;
  auto none = cuda_ipc_mapping::open(0, std::string(64, '\0'), 64);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.err().code, errc::invalid_config) << none.err().message;
}

}  // namespace
}  // namespace hc::test
