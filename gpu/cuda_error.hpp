#pragma once
// CUDA runtime errors as project errors, at the gpu/cuda_* boundary: invalid_config when
// no driver or device is usable (or the ordinal does not exist), out_of_memory for an
// allocation, io_error otherwise; the message names the call and CUDA's error. Clears
// the runtime's last-error state. Included only by gpu/cuda_* (it names CUDA types).

#include <cuda_runtime_api.h>

#include <string_view>

#include "actors/common/status.hpp"

namespace hc::gpu {

error cuda_error(cudaError_t e, std::string_view call);
/// ok for cudaSuccess, else cuda_error(e, call).
status cuda_status(cudaError_t e, std::string_view call);

}  // namespace hc::gpu
