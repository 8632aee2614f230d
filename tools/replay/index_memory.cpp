// The index's memory per cached token (tools/replay/index_memory.hpp).
#include "tools/replay/index_memory.hpp"

#include <malloc.h>

#include <memory>

#include "tools/replay/replay_backend.hpp"
#include "tools/replay/replayer.hpp"

namespace hc::replay {

std::size_t heap_in_use() noexcept {
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}

double index_memory::growth_per_cached_token() const noexcept {
  if (cached_tokens == 0 || bytes_at_end < bytes_at_start) return 0;
  return static_cast<double>(bytes_at_end - bytes_at_start) / static_cast<double>(cached_tokens);
}

double index_memory::total_per_cached_token() const noexcept {
  return cached_tokens == 0
             ? 0
             : static_cast<double>(bytes_at_end) / static_cast<double>(cached_tokens);
}

namespace {

/// The heap `p` owns: the drop when it is destroyed.
template <class T>
std::size_t owned_by(std::unique_ptr<T>& p) {
  const std::size_t before = heap_in_use();
  p.reset();
  const std::size_t after = heap_in_use();
  return before > after ? before - after : 0;
}

}  // namespace

char* volatile heap_probe_sink = nullptr;

bool heap_accounting_works() {
  const std::size_t before = heap_in_use();
  auto probe = std::make_unique<char[]>(1 << 20);
  heap_probe_sink = probe.get();  // the allocation may not be optimised away
  const std::size_t with = heap_in_use();
  return with >= before + (1 << 20);
}

result<index_memory> measure_index_memory(const trace& t) {
  if (!heap_accounting_works())
    return error{errc::invalid_config,
                 "this process's allocator does not report its heap in use (mallinfo2): a "
                 "sanitizer build? Measure with the release build"};
  index_memory m;
  m.pool_tokens = t.config.kv_pool_tokens;
  {  // what a freshly built cache owns
    auto fresh = std::make_unique<local_backend>(t.config);
    m.bytes_at_start = owned_by(fresh);
  }
  auto backend = std::make_unique<local_backend>(t.config);
  local_backend* local = backend.get();
  replayer rp(t.config, std::move(backend));
  for (const trace_op& op : t.ops) {
    outcome o;
    (void)rp.execute(op, o);
    if (op.kind == op_kind::check && o.sanity && !*o.sanity)
      return error{errc::invariant_violated, "the replay's sanity check failed at op " +
                                                 std::to_string(m.ops) + ": " + o.sanity_detail};
    ++m.ops;
  }
  m.cached_tokens = local->cache().tree().sizes().total_tokens();
  m.tree_nodes = local->cache().tree().node_count();
  m.slot_nodes = local->cache().tree().sizes().total_slots();
  std::unique_ptr<replay_backend> owned = rp.release_backend();
  m.bytes_at_end = owned_by(owned);
  return m;
}

}  // namespace hc::replay
