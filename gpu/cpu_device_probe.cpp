#include "gpu/device_probe.hpp"

namespace hc::gpu {

device_probe_result probe_devices() {
  device_probe_result r;
  r.reason = "built without CUDA (HC_WITH_CUDA=OFF)";
  return r;
}

}  // namespace hc::gpu
