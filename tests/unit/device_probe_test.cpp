// The device probe answers on every machine: with a GPU it counts devices; without one
// (no driver, no device, or a CPU-only build) it reports zero devices and says why.
#include <gtest/gtest.h>

#include "gpu/device_probe.hpp"

namespace hc {
namespace {

/// The probe in a child gives this process's answer, and leaves this process without CUDA
/// state (what hcsim needs before it forks its workers: CUDA does not survive a fork; on
/// a GPU, scripts/gpu-check.sh's hcsim_cuda fails without it). First in this file, so it
/// probes before anything in this process touched CUDA (ctest runs each test alone too).
TEST(DeviceProbe, InAChildItAnswersAsThisProcessWould) {
  const gpu::device_probe_result child = gpu::probe_devices_in_child();
  const gpu::device_probe_result here = gpu::probe_devices();
  EXPECT_EQ(child.built_with_cuda, here.built_with_cuda);
  EXPECT_EQ(child.device_count, here.device_count);
  EXPECT_EQ(child.reason, here.reason);
}

TEST(DeviceProbe, ReportsDevicesOrAReason) {
  const gpu::device_probe_result r = gpu::probe_devices();
  EXPECT_EQ(r.built_with_cuda, HC_HAVE_CUDA == 1);
  EXPECT_GE(r.device_count, 0);
  if (r.device_count == 0) {
    EXPECT_FALSE(r.reason.empty()) << "no device and no reason";
  } else {
    EXPECT_TRUE(r.reason.empty()) << r.reason;
  }
  // Probing twice is safe (the CUDA error state is cleared).
  EXPECT_EQ(gpu::probe_devices().device_count, r.device_count);
}

}  // namespace
}  // namespace hc
