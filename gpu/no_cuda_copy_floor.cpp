// cuda_copy_floor in a build without CUDA (HC_WITH_CUDA=OFF): create() refuses.
#include "gpu/cuda_copy_floor.hpp"

namespace hc {

result<std::unique_ptr<cuda_copy_floor>> cuda_copy_floor::create(std::uint32_t, std::size_t) {
  return error{errc::invalid_config, "device cuda: built without CUDA (HC_WITH_CUDA=OFF)"};
}

}  // namespace hc
