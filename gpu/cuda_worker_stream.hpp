#pragma once
// A worker's CUDA stream in CUDA mode: where its forwards run, ordered against the node's
// stream by the session's fence events (pool_info::ready_event_ipc_handle /
// done_event_ipc_handle) without a CPU wait:
//   begin_forward(k) returned  ->  wait_ready()    (the batch's clears and copies first)
//   ... the forward's kernels on handle() ...
//   record_done()              ->  end_forward(k)  (the node's later work waits on it)
// read / write copy between a mapped pool (cuda_ipc_mapping) and host memory on this
// stream, so they are ordered after wait_ready(), and wait for the copy (tests, checks).
//
// No CUDA header here: gpu/cuda_worker_stream.cpp, or without CUDA
// gpu/no_cuda_worker_stream.cpp, whose create() refuses with invalid_config.
// Thread safety: none.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "actors/common/status.hpp"
#include "gpu/cuda_ipc_mapping.hpp"

namespace hc {

class cuda_worker_stream {
 public:
  /// A stream on `device` with the session's two events opened (64-byte handles each).
  static result<std::unique_ptr<cuda_worker_stream>> create(std::uint32_t device,
                                                            std::string_view ready_event,
                                                            std::string_view done_event);
  virtual ~cuda_worker_stream() = default;

  /// Later work on this stream waits for the node's `ready` (its latest record).
  virtual status wait_ready() = 0;
  /// Records `done` after the work queued on this stream so far.
  virtual status record_done() = 0;
  virtual status read(const cuda_ipc_mapping& m, std::size_t offset, std::span<std::byte> dst) = 0;
  virtual status write(cuda_ipc_mapping& m, std::size_t offset, std::span<const std::byte> src) = 0;
  /// The cudaStream_t, for the worker's kernels.
  virtual void* handle() const noexcept = 0;
};

}  // namespace hc
