#pragma once
// Is a CUDA device usable by this process? The answer decides between the CUDA L1 pools
// and the POSIX shared-memory CPU pools. No CUDA header here (style habit 11): the CUDA
// implementation lives in gpu/cuda_device_probe.cu, the fallback in gpu/cpu_device_probe.cpp.
// C++17-clean (nvcc compiles the .cu side with -std=c++17).

#include <string>

namespace hc::gpu {

struct device_probe_result {
  /// True when the binary was built with HC_WITH_CUDA.
  bool built_with_cuda = false;
  /// Number of usable CUDA devices (0 when none or when CUDA is absent).
  int device_count = 0;
  /// Why no device is usable ("built without CUDA", the CUDA runtime's error text, ...);
  /// empty when device_count > 0.
  std::string reason;
};

/// Probes once per call; never throws, never aborts (a missing driver is a result).
/// The CUDA runtime it initialises does not survive fork(): a process that forks children
/// which use CUDA must not call it first (probe_devices_in_child).
device_probe_result probe_devices();

/// probe_devices() in a child process, so that this process stays without CUDA state
/// and the processes it forks afterwards can use CUDA. A failed fork or a child that
/// dies is a result too (device_count 0, the reason says what happened).
device_probe_result probe_devices_in_child();

}  // namespace hc::gpu
