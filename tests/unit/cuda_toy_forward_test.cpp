// CUDA mode's toy forward (gpu/cuda_toy_forward.hpp): random extend and decode batches run
// by the kernels over device pools leave every byte the toy model's own forward leaves on
// the host (tests/support/toy_batches.hpp), for both chunk-state conventions; batches the
// kernels would write out of bounds are refused before anything is enqueued. Skips, saying
// why, without a CUDA device (or in a build without CUDA).
#include <gtest/gtest.h>

#include <random>

#include "gpu/cuda_toy_forward.hpp"
#include "gpu/device_probe.hpp"
#include "tests/support/toy_batches.hpp"

namespace hc::sim {
namespace {

#define SKIP_WITHOUT_A_DEVICE()                                                         \
  do {                                                                                  \
    const gpu::device_probe_result probe = gpu::probe_devices();                        \
    if (probe.device_count == 0)                                                        \
      GTEST_SKIP() << (probe.built_with_cuda ? "no usable CUDA device: " + probe.reason \
                                             : std::string("built without CUDA"));      \
  } while (0)

struct device_pools {
  std::unique_ptr<cuda_device_buffer> kv, ssm;
};

device_pools upload(const testing::toy_pools& p) {
  device_pools d;
  auto kv = cuda_device_buffer::create(0, p.kv.size());
  auto ssm = cuda_device_buffer::create(0, p.ssm.size());
  EXPECT_TRUE(kv.ok() && ssm.ok());
  if (!kv.ok() || !ssm.ok()) return d;
  d.kv = std::move(*kv);
  d.ssm = std::move(*ssm);
  EXPECT_TRUE(d.kv->write(p.kv).ok());
  EXPECT_TRUE(d.ssm->write(p.ssm).ok());
  return d;
}

class CudaToyForward : public ::testing::TestWithParam<chunk_convention> {};

TEST_P(CudaToyForward, KernelsLeaveTheBytesTheModelDoes) {
  SKIP_WITHOUT_A_DEVICE();
  toy_model_config cfg;
  cfg.convention = GetParam();
  const toy_model m(cfg);
  auto fwd = cuda_toy_forward::create(0, m.shape());
  ASSERT_TRUE(fwd.ok()) << fwd.err().message;
  std::mt19937 rng(GetParam() == chunk_convention::fla ? 1 : 2);
  const testing::toy_pools start = testing::random_pools(m, 4096, 24, rng);
  device_pools dev = upload(start);
  ASSERT_TRUE(dev.kv && dev.ssm);
  testing::toy_pools want = start, got = start;
  for (int round = 0; round < 200; ++round) {  // one after the other on the same pools
    const testing::random_forward f = testing::random_forward_of(m, start, rng, round % 3 == 2);
    testing::run_model(m, f, want);
    ASSERT_TRUE((*fwd)
                    ->enqueue(nullptr, dev.kv->device_ptr(), start.kv_rows, dev.ssm->device_ptr(),
                              start.slots, testing::plan_of(m, f))
                    .ok());
    if (round % 20 != 19) continue;  // the batches queue up; check now and then
    ASSERT_TRUE(dev.kv->read(got.kv).ok());
    ASSERT_TRUE(dev.ssm->read(got.ssm).ok());
    ASSERT_EQ(got.kv, want.kv) << "after round " << round;
    ASSERT_EQ(got.ssm, want.ssm) << "after round " << round;
  }
}

TEST_P(CudaToyForward, ABatchOutsideThePoolsIsRefusedAndNothingRuns) {
  SKIP_WITHOUT_A_DEVICE();
  const toy_model m(toy_model_config{});
  auto fwd = cuda_toy_forward::create(0, m.shape());
  ASSERT_TRUE(fwd.ok()) << fwd.err().message;
  std::mt19937 rng(5);
  const testing::toy_pools start = testing::random_pools(m, 4096, 24, rng);
  device_pools dev = upload(start);
  ASSERT_TRUE(dev.kv && dev.ssm);
  const testing::random_forward f = testing::random_forward_of(m, start, rng, false);
  toy::forward_batch b = testing::plan_of(m, f);
  b.kv_rows.back() = 4096;
  status s = (*fwd)->enqueue(nullptr, dev.kv->device_ptr(), start.kv_rows, dev.ssm->device_ptr(),
                             start.slots, b);
  EXPECT_EQ(s.err().code, errc::invalid_argument);
  testing::toy_pools got = start;
  ASSERT_TRUE(dev.kv->read(got.kv).ok());
  ASSERT_TRUE(dev.ssm->read(got.ssm).ok());
  EXPECT_EQ(got.kv, start.kv);
  EXPECT_EQ(got.ssm, start.ssm);
}

INSTANTIATE_TEST_SUITE_P(Conventions, CudaToyForward,
                         ::testing::Values(chunk_convention::fla, chunk_convention::mamba2),
                         [](const auto& p) {
                           return std::string(p.param == chunk_convention::fla ? "FLA" : "Mamba2");
                         });

TEST(CudaToyForwardWithoutDevice, CreateSaysWhy) {
  const gpu::device_probe_result probe = gpu::probe_devices();
  if (probe.device_count > 0) GTEST_SKIP() << "a CUDA device is present";
  auto fwd = cuda_toy_forward::create(0, toy_model(toy_model_config{}).shape());
  ASSERT_FALSE(fwd.ok());
  EXPECT_EQ(fwd.err().code, errc::invalid_config) << fwd.err().message;
  EXPECT_FALSE(fwd.err().message.empty());
}

}  // namespace
}  // namespace hc::sim
