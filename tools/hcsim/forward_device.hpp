#pragma once
// Where an hcsim worker's forwards run, and how it reads the pools back to check a hit:
//  * cpu: the node's shared-memory pools mapped here, the toy model run on this thread
//    (toy_model::extend / decode);
//  * cuda: the node's CUDA pools mapped through IPC (gpu/cuda_ipc_mapping.hpp), the toy
//    model's kernels (gpu/cuda_toy_forward.hpp) enqueued on the worker's stream between the
//    session's fence events (gpu/cuda_worker_stream.hpp): after_begin() makes the stream
//    wait for the node's queued clears and copies, before_end() records the forward's end
//    for the node's later work; no CPU wait on either side. Checks read both pools back
//    once per forward (refresh()).
// Thread safety: none; run_* may be called from a forward thread while nothing else is.

#include <cstddef>
#include <memory>
#include <span>

#include "actors/common/pool_info.hpp"
#include "actors/common/status.hpp"
#include "tools/hcsim/toy_model.hpp"

namespace hc::sim {

class forward_device {
 public:
  /// Maps the session's pools (`p`, CacheNode.open's answer) for `m`'s layout: the device
  /// follows p.device. invalid_config for cuda without CUDA (build or driver).
  static result<std::unique_ptr<forward_device>> open(const pool_info& p, const toy_model& m);
  virtual ~forward_device() = default;

  /// Once beginForward answered: later work waits for the node's ops of the batch.
  virtual status after_begin() = 0;
  /// Before endForward: the node's later work waits for this forward.
  virtual status before_end() = 0;
  virtual status run_extend(std::span<const extend_job> jobs) = 0;
  virtual status run_decode(std::span<const decode_job> jobs) = 0;
  /// True when run_* return once the forward is enqueued (it overlaps by itself).
  virtual bool asynchronous() const noexcept = 0;

  /// Makes kv_row / slot show the pools as of now, after after_begin()'s wait (cuda: copies
  /// both pools to the host; cpu: nothing to do).
  virtual status refresh() = 0;
  virtual std::span<const std::byte> kv_row(kv_index i) const = 0;
  virtual std::span<const std::byte> slot(slot_id s) const = 0;
};

}  // namespace hc::sim
