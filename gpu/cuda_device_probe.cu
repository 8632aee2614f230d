#include <cuda_runtime.h>

#include "gpu/device_probe.hpp"

namespace hc::gpu {

device_probe_result probe_devices() {
  device_probe_result r;
  r.built_with_cuda = true;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    r.reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    (void)cudaGetLastError();  // clear the sticky error state
    return r;
  }
  r.device_count = n;
  if (n == 0) r.reason = "the CUDA runtime reports no device";
  return r;
}

}  // namespace hc::gpu
