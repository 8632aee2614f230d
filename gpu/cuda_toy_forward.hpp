#pragma once
// CUDA mode's toy forward: a toy::forward_batch (gpu/toy_forward.hpp) enqueued on a worker's
// stream over the node's mapped pools, so that `hcsim --device cuda` runs its forwards on
// the GPU between the session's fence events (gpu/cuda_worker_stream.hpp) and the bytes
// it leaves are the toy model's, checked by the same recomputation as in CPU mode.
//
// No CUDA header here: gpu/cuda_toy_forward.cpp with the kernels in gpu/cuda_toy_kernels.cu;
// without CUDA gpu/no_cuda_toy_forward.cpp, whose create() refuses with invalid_config.
// Thread safety: none.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "actors/common/status.hpp"
#include "gpu/toy_forward.hpp"

namespace hc {

class cuda_toy_forward {
 public:
  /// For pools of shape `s` on CUDA device `device`; invalid_argument for a shape the
  /// kernels do not run, invalid_config without CUDA.
  static result<std::unique_ptr<cuda_toy_forward>> create(std::uint32_t device,
                                                          const toy::shape& s);
  virtual ~cuda_toy_forward() = default;

  /// Checks `b` against pools of `kv_rows` token rows at device address `kv` and `slots`
  /// slots at `ssm` (invalid_argument: nothing enqueued), then enqueues it on `stream` (a
  /// cudaStream_t, the same one on every call; nullptr = the legacy default stream) and
  /// returns: the batch's description travels through one of two pinned staging buffers,
  /// and a call waits only until the copy out of the buffer it reuses has run.
  virtual status enqueue(void* stream, void* kv, std::size_t kv_rows, void* ssm, std::size_t slots,
                         const toy::forward_batch& b) = 0;
};

/// Device memory for tests of the toy forward: a buffer of `bytes` on `device`, read and
/// written synchronously on the legacy default stream (so after the work enqueued there).
class cuda_device_buffer {
 public:
  static result<std::unique_ptr<cuda_device_buffer>> create(std::uint32_t device,
                                                            std::size_t bytes);
  virtual ~cuda_device_buffer() = default;
  virtual void* device_ptr() const noexcept = 0;
  /// invalid_argument unless the span is the buffer's size.
  virtual status write(std::span<const std::byte> src) = 0;
  virtual status read(std::span<std::byte> dst) = 0;
};

}  // namespace hc
