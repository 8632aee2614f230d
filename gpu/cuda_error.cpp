#include "gpu/cuda_error.hpp"

#include <string>

namespace hc::gpu {

error cuda_error(cudaError_t e, std::string_view call) {
  (void)cudaGetLastError();
  errc code = errc::io_error;
  if (e == cudaErrorMemoryAllocation) code = errc::out_of_memory;
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorInvalidDevice)
    code = errc::invalid_config;
  return {code, std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}

status cuda_status(cudaError_t e, std::string_view call) {
  if (e == cudaSuccess) return {};
  return cuda_error(e, call);
}

}  // namespace hc::gpu
