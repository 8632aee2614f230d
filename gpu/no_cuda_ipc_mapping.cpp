// cuda_ipc_mapping in a build without CUDA (HC_WITH_CUDA=OFF): open() refuses.
#include "gpu/cuda_ipc_mapping.hpp"

namespace hc {

result<cuda_ipc_mapping> cuda_ipc_mapping::open(std::uint32_t, std::string_view, std::size_t) {
  return error{errc::invalid_config, "device cuda: built without CUDA (HC_WITH_CUDA=OFF)"};
}

cuda_ipc_mapping::cuda_ipc_mapping(cuda_ipc_mapping&&) noexcept = default;
cuda_ipc_mapping& cuda_ipc_mapping::operator=(cuda_ipc_mapping&&) noexcept = default;
cuda_ipc_mapping::~cuda_ipc_mapping() = default;
void cuda_ipc_mapping::close() noexcept {}
status cuda_ipc_mapping::read(std::size_t, std::span<std::byte>) const {
  return {errc::invalid_config, "built without CUDA"};
}
status cuda_ipc_mapping::write(std::size_t, std::span<const std::byte>) {
  return {errc::invalid_config, "built without CUDA"};
}

}  // namespace hc
