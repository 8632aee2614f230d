// cuda_worker_stream in a build without CUDA (HC_WITH_CUDA=OFF): create() refuses.
#include "gpu/cuda_worker_stream.hpp"

namespace hc {

result<std::unique_ptr<cuda_worker_stream>> cuda_worker_stream::create(std::uint32_t,
                                                                       std::string_view,
                                                                       std::string_view) {
  return error{errc::invalid_config, "device cuda: built without CUDA (HC_WITH_CUDA=OFF)"};
}

}  // namespace hc
