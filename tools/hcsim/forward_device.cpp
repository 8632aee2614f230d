// The cpu and cuda forward devices of an hcsim worker (tools/hcsim/forward_device.hpp).
#include "tools/hcsim/forward_device.hpp"

#include <string>
#include <vector>

#include "gpu/cuda_ipc_mapping.hpp"
#include "gpu/cuda_toy_forward.hpp"
#include "gpu/cuda_worker_stream.hpp"
#include "gpu/shm_region.hpp"

namespace hc::sim {
namespace {

class shm_device final : public forward_device {
 public:
  shm_device(const toy_model& m, shm_region kv, shm_region ssm)
      : model_(m), kv_(std::move(kv)), ssm_(std::move(ssm)) {}

  status after_begin() override { return {}; }
  status before_end() override { return {}; }
  status run_extend(std::span<const extend_job> jobs) override {
    std::vector<extend_item> items;
    items.reserve(jobs.size());
    for (const extend_job& j : jobs) {
      extend_item it;
      it.working = slot_at(j.working);
      it.prefix_len = j.prefix_len;
      it.tokens = j.tokens;
      for (kv_index r : j.kv)
        it.kv.push_back(row_at(r));
      it.mask = j.mask;
      it.kernel_seqlen = j.kernel_seqlen;
      if (j.track != no_slot) it.track = slot_at(j.track);
      items.push_back(std::move(it));
    }
    model_.extend(items);
    return {};
  }
  status run_decode(std::span<const decode_job> jobs) override {
    for (const decode_job& d : jobs)
      model_.decode(slot_at(d.working), d.pos, d.token, row_at(d.kv),
                    d.track == no_slot ? std::span<std::byte>() : slot_at(d.track));
    return {};
  }
  bool asynchronous() const noexcept override { return false; }
  status refresh() override { return {}; }
  std::span<const std::byte> kv_row(kv_index i) const override { return row_at(i); }
  std::span<const std::byte> slot(slot_id s) const override { return slot_at(s); }

 private:
  std::span<std::byte> row_at(kv_index i) const {
    const std::size_t tb = model_.config().token_bytes();
    return kv_.bytes().subspan(static_cast<std::size_t>(i) * tb, tb);
  }
  std::span<std::byte> slot_at(slot_id s) const {
    const std::size_t sb = model_.config().slot_bytes();
    return ssm_.bytes().subspan(static_cast<std::size_t>(s) * sb, sb);
  }
  const toy_model& model_;
  shm_region kv_, ssm_;
};

class cuda_device final : public forward_device {
 public:
  cuda_device(const toy_model& m, cuda_ipc_mapping kv, cuda_ipc_mapping ssm,
              std::unique_ptr<cuda_worker_stream> stream, std::unique_ptr<cuda_toy_forward> fwd)
      : model_(m),
        kv_(std::move(kv)),
        ssm_(std::move(ssm)),
        stream_(std::move(stream)),
        fwd_(std::move(fwd)),
        kv_host_(kv_.size()),
        ssm_host_(ssm_.size()) {}

  status after_begin() override { return stream_->wait_ready(); }
  status before_end() override { return stream_->record_done(); }
  status run_extend(std::span<const extend_job> jobs) override {
    return enqueue(model_.plan_extend(jobs));
  }
  status run_decode(std::span<const decode_job> jobs) override {
    return enqueue(model_.plan_decode(jobs));
  }
  bool asynchronous() const noexcept override { return true; }
  status refresh() override {
    if (status s = stream_->read(kv_, 0, kv_host_); !s) return s;
    return stream_->read(ssm_, 0, ssm_host_);
  }
  std::span<const std::byte> kv_row(kv_index i) const override {
    const std::size_t tb = model_.config().token_bytes();
    return std::span<const std::byte>(kv_host_).subspan(static_cast<std::size_t>(i) * tb, tb);
  }
  std::span<const std::byte> slot(slot_id s) const override {
    const std::size_t sb = model_.config().slot_bytes();
    return std::span<const std::byte>(ssm_host_).subspan(static_cast<std::size_t>(s) * sb, sb);
  }

 private:
  status enqueue(const toy::forward_batch& b) {
    return fwd_->enqueue(stream_->handle(), kv_.device_ptr(),
                         kv_.size() / model_.config().token_bytes(), ssm_.device_ptr(),
                         ssm_.size() / model_.config().slot_bytes(), b);
  }
  const toy_model& model_;
  cuda_ipc_mapping kv_, ssm_;
  std::unique_ptr<cuda_worker_stream> stream_;
  std::unique_ptr<cuda_toy_forward> fwd_;
  std::vector<std::byte> kv_host_, ssm_host_;
};

error cannot(const std::string& what, const error& why) {
  return error{why.code, "cannot " + what + ": " + why.message};
}

}  // namespace

result<std::unique_ptr<forward_device>> forward_device::open(const pool_info& p,
                                                             const toy_model& m) {
  if (p.kv_bytes_per_token != m.config().token_bytes() ||
      p.ssm_slot_bytes != m.config().slot_bytes())
    return error{errc::invalid_argument, "the instance's pools do not have the toy model's layout"};
  if (p.device == device_kind::cpu) {
    auto kv = shm_region::map(p.kv_shm, p.kv_bytes);
    auto ssm = shm_region::map(p.ssm_shm, p.ssm_bytes);
    if (!kv) return cannot("map the KV pool (is the node on this host?)", kv.err());
    if (!ssm) return cannot("map the SSM pool (is the node on this host?)", ssm.err());
    return std::unique_ptr<forward_device>(
        std::make_unique<shm_device>(m, std::move(*kv), std::move(*ssm)));
  }
  auto kv = cuda_ipc_mapping::open(p.device_ordinal, p.kv_ipc_handle, p.kv_bytes);
  if (!kv) return cannot("map the CUDA KV pool", kv.err());
  auto ssm = cuda_ipc_mapping::open(p.device_ordinal, p.ssm_ipc_handle, p.ssm_bytes);
  if (!ssm) return cannot("map the CUDA SSM pool", ssm.err());
  auto stream = cuda_worker_stream::create(p.device_ordinal, p.ready_event_ipc_handle,
                                           p.done_event_ipc_handle);
  if (!stream) return cannot("open the session's fence events", stream.err());
  auto fwd = cuda_toy_forward::create(p.device_ordinal, m.shape());
  if (!fwd) return cannot("set up the toy model's kernels", fwd.err());
  return std::unique_ptr<forward_device>(std::make_unique<cuda_device>(
      m, std::move(*kv), std::move(*ssm), std::move(*stream), std::move(*fwd)));
}

}  // namespace hc::sim
