// make_cuda_l1_pool in a build without CUDA (HC_WITH_CUDA=OFF): refuses with the reason.
#include "gpu/cuda_l1_pool.hpp"

namespace hc {

result<std::unique_ptr<l1_pool>> make_cuda_l1_pool(const cuda_pool_shape&) {
  return error{errc::invalid_config,
               "device cuda: this node was built without CUDA (HC_WITH_CUDA=OFF)"};
}

}  // namespace hc
