// CUDA mode across processes: a second process (tests/support/cuda_ipc_peer) maps the
// node's CUDA pools through their IPC handles and, ordered by the session's fence events
// alone (no synchronize), sees what the pool's stream wrote (kernel copies included);
// the pool sees its writes after waiting on its `done` event.
// Skips, saying why, without a usable device; the refusals run everywhere.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gpu/cuda_ipc_mapping.hpp"
#include "gpu/cuda_l1_pool.hpp"
#include "gpu/cuda_worker_stream.hpp"
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

TEST(CudaIpc, ASecondProcessSeesThePoolsWritesAfterTheEventAndThePoolSeesItsWrites) {
  const gpu::device_probe_result probe = gpu::probe_devices();
  if (probe.device_count == 0)
    GTEST_SKIP() << (probe.built_with_cuda ? "no usable CUDA device: " + probe.reason
                                           : std::string("built without CUDA"));
  constexpr std::size_t slot_bytes = 1 << 20;  // big enough that the copies take a while
  auto pool = make_cuda_l1_pool({0, 64, 16, 6, slot_bytes});
  ASSERT_TRUE(pool.ok()) << pool.err().message;
  l1_pool& p = **pool;
  constexpr session_id worker = 1;
  auto events = p.open_events(worker);
  ASSERT_TRUE(events.ok()) << events.err().message;
  const auto state = pattern(slot_bytes, 3);
  ASSERT_TRUE(p.write_slot(3, state).ok());
  const slot_copy copies[] = {{3, 2}, {2, 5}};  // a chain: two launches, not waited for
  EXPECT_EQ(p.copy_slots(copies), 0u);
  ASSERT_TRUE(p.record_ready(worker).ok());  // what beginForward does; no synchronize
  const l1_pool_names n = p.names();
  const std::string ev = hex(events->ready_ipc) + " " + hex(events->done_ipc) + " ";
  const std::string ssm = "0 " + hex(n.ssm_ipc) + " " + std::to_string(n.ssm_bytes) + " " + ev;
  EXPECT_EQ(peer(ssm + std::to_string(5 * slot_bytes) + " read " + std::to_string(slot_bytes)),
            hex(state))
      << "the worker's stream waited for the node's copies";
  const auto written = pattern(4096, 9);  // the start of slot 1 (a command line is short)
  peer(ssm + std::to_string(1 * slot_bytes) + " write " + hex(written));
  ASSERT_TRUE(p.wait_done(worker).ok());  // what endForward does
  std::vector<std::byte> back(slot_bytes);
  ASSERT_TRUE(p.read_slot(1, back).ok());
  EXPECT_EQ(std::vector<std::byte>(back.begin(), back.begin() + 4096), written);
  const auto tokens = pattern(4 * 16, 4);  // and the KV pool
  ASSERT_TRUE(p.write_kv(8, 4, tokens).ok());
  ASSERT_TRUE(p.record_ready(worker).ok());
  EXPECT_EQ(peer("0 " + hex(n.kv_ipc) + " " + std::to_string(n.kv_bytes) + " " + ev +
                 std::to_string(8 * 16) + " read 64"),
            hex(tokens));
  p.close_events(worker);
}

TEST(CudaIpc, BadHandlesAndMissingDevicesAreRefused) {
  const gpu::device_probe_result probe = gpu::probe_devices();
  auto short_handle = cuda_ipc_mapping::open(0, "abc", 64);
  ASSERT_FALSE(short_handle.ok());
  EXPECT_EQ(short_handle.err().code,
            probe.built_with_cuda ? errc::invalid_argument : errc::invalid_config)
      << short_handle.err().message;
  auto no_events = cuda_worker_stream::create(0, "short", std::string(64, '\0'));
  ASSERT_FALSE(no_events.ok());
  EXPECT_EQ(no_events.err().code,
            probe.device_count > 0 ? errc::invalid_argument : errc::invalid_config)
      << no_events.err().message;
  if (probe.device_count > 0) return;
  auto none = cuda_ipc_mapping::open(0, std::string(64, '\0'), 64);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.err().code, errc::invalid_config) << none.err().message;
}

}  // namespace
}  // namespace hc::test
