#include "storage/loading_store.hpp"

#include "actors/common/thread_name.hpp"

namespace hc {

loading_store::loading_store(std::uint64_t capacity, opener open) : capacity_(capacity) {
  thread_ = std::thread([this, open = std::move(open)] {
    name_this_thread("hc-l3-open");
    finish(open(stop_));
  });
}

loading_store::~loading_store() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void loading_store::finish(result<std::shared_ptr<l3_store>> opened) {
  std::lock_guard lk(mu_);
  if (opened && *opened) {
    // Before anything else reaches the store: what was erased meanwhile stays erased.
    for (const auto& [pool, key] : pending_erase_)
      (void)(*opened)->erase(pool, key);
    pending_erase_.clear();
    store_ = std::move(*opened);
    state_.store(serving_, std::memory_order_release);
  } else {
    failure_ =
        opened ? error{errc::io_error, "the L3 store's opener returned no store"} : opened.err();
    pending_erase_.clear();
    state_.store(failed_, std::memory_order_release);
  }
  done_.notify_all();
}

error loading_store::not_serving(std::string_view what) const {
  if (state_.load(std::memory_order_acquire) == failed_)
    return {failure_.code,
            std::string(what) + ": the L3 store failed to open: " + failure_.message};
  return {errc::io_error, std::string(what) +
                              ": the L3 store is still reading its index (it serves once "
                              "the node has logged 'L3 store ready'); try again"};
}

status loading_store::wait() const {
  std::unique_lock lk(mu_);
  done_.wait(lk, [this] { return state_.load(std::memory_order_acquire) != loading_; });
  if (state_.load(std::memory_order_acquire) == serving_) return {};
  return failure_;
}

status loading_store::set(l3_pool pool, std::string_view key, std::span<const std::byte> value) {
  if (l3_store* t = target()) return t->set(pool, key, value);
  return not_serving("L3 set");
}

status loading_store::get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) {
  if (l3_store* t = target()) return t->get(pool, key, out);
  return {errc::not_found, not_serving("L3 get").message};
}

status loading_store::get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) {
  if (l3_store* t = target()) return t->get_into(pool, key, dst);
  return {errc::not_found, not_serving("L3 get").message};
}

bool loading_store::exists(l3_pool pool, std::string_view key) {
  if (l3_store* t = target()) return t->exists(pool, key);
  return false;
}

status loading_store::erase(l3_pool pool, std::string_view key) {
  {
    std::lock_guard lk(mu_);  // finish() takes it too: the erase is applied or delegated
    const int s = state_.load(std::memory_order_acquire);
    if (s == loading_) {
      pending_erase_.emplace_back(pool, std::string(key));
      return {};
    }
    if (s == failed_) return not_serving("L3 erase");
  }
  return store_->erase(pool, key);
}

result<std::size_t> loading_store::erase_prefix(std::string_view prefix) {
  if (l3_store* t = target()) return t->erase_prefix(prefix);
  return not_serving("L3 clear");
}

l3_usage loading_store::usage() const {
  if (const l3_store* t = target()) return t->usage();
  l3_usage u;
  u.capacity = capacity_;
  u.loading = loading();
  return u;
}

}  // namespace hc
