// A build without CUDA: the toy forward and test buffers refuse (gpu/cuda_toy_forward.hpp).
#include "gpu/cuda_toy_forward.hpp"

namespace hc {

result<std::unique_ptr<cuda_toy_forward>> cuda_toy_forward::create(std::uint32_t,
                                                                   const toy::shape&) {
  return error{errc::invalid_config, "device cuda: built without CUDA (HC_WITH_CUDA=OFF)"};
}

result<std::unique_ptr<cuda_device_buffer>> cuda_device_buffer::create(std::uint32_t, std::size_t) {
  return error{errc::invalid_config, "device cuda: built without CUDA (HC_WITH_CUDA=OFF)"};
}

}  // namespace hc
