#include "actors/host_storage/host_storage_actor.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "actors/node/messages.hpp"

namespace hc {
namespace {

using clk = std::chrono::steady_clock;

double since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

struct state {
  std::shared_ptr<l3_store> store;
  metrics_sink* metrics = nullptr;
  std::uint64_t writes = 0, write_failures = 0, reads = 0, pages_written = 0, pages_read = 0;
};

void write(state& st, l3_write_job& j) {
  const auto t0 = clk::now();
  ++st.writes;
  if (!st.store || !j.host) {
    j.report.failed = true;
    j.report.err = {errc::io_error, "no L3 store"};
    ++st.write_failures;
    return;
  }
  host_pools& h = *j.host;
  const std::size_t p = h.page_size();
  std::vector<std::span<const std::byte>> pages;
  pages.reserve(j.page_starts.size());
  for (kv_index start : j.page_starts)
    pages.emplace_back(h.kv(start, p));
  j.report = l3::write_pages(*st.store, j.keys, pages);
  j.bytes = j.report.pages_written * p * h.kv_bytes_per_token();
  if (!j.report.failed && j.state_slot != no_slot && !j.keys.empty()) {
    status s = st.store->set(l3_pool::ssm_state, j.keys.back(), h.state(j.state_slot));
    j.state_written = s.ok();
    if (s.ok()) j.bytes += h.state_bytes();
    if (!s) {
      j.report.failed = true;
      j.report.err = s.err();
    }
  }
  if (j.report.failed) ++st.write_failures;
  st.pages_written += j.report.pages_written;
  j.seconds = since(t0);
  st.metrics->tier_bytes("l3", "write", j.bytes);
  st.metrics->backup(j.seconds, j.report.failed);
}

void read(state& st, l3_read_job& j) {
  const auto t0 = clk::now();
  ++st.reads;
  if (!st.store || !j.host) {
    j.report.err = {errc::io_error, "no L3 store"};
    return;
  }
  host_pools& h = *j.host;
  const std::size_t p = h.page_size();
  j.usable_pages = l3::usable_prefix_pages(*st.store, j.keys);
  const std::size_t n = std::min(j.usable_pages, j.page_starts.size());
  std::vector<std::span<std::byte>> dst;
  dst.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    dst.push_back(h.kv(j.page_starts[i], p));
  std::span<std::byte> state_dst;
  if (j.state_slot != no_slot) state_dst = h.state(j.state_slot);
  j.report = l3::read_pages(*st.store, std::span<const std::string>(j.keys).first(n), dst,
                            state_dst, j.deadline);
  j.bytes = j.report.pages_read * p * h.kv_bytes_per_token() +
            (j.report.state_read ? h.state_bytes() : 0);
  st.pages_read += j.report.pages_read;
  j.seconds = since(t0);
  st.metrics->tier_bytes("l3", "read", j.bytes);
}

}  // namespace

caf::behavior host_storage_actor(caf::event_based_actor*, std::shared_ptr<l3_store> store,
                                 metrics_sink* metrics) {
  auto st = std::make_shared<state>();
  st->store = std::move(store);
  st->metrics = metrics;
  return {
      [st](msg::store_atom, const l3_write_ptr& j) -> l3_write_ptr {
        write(*st, *j);
        return j;
      },
      [st](msg::prefetch_atom, const l3_read_ptr& j) -> l3_read_ptr {
        read(*st, *j);
        return j;
      },
      [st](msg::inspect_atom) -> std::string {
        nlohmann::json l3 = nullptr;
        if (st->store) {
          const l3_usage u = st->store->usage();
          l3 = {{"bytes", u.bytes},
                {"values", u.values},
                {"capacity", u.capacity},
                {"evicted", u.evicted},
                {"corrupt", u.corrupt},
                {"backups", st->writes},
                {"backup_failures", st->write_failures},
                {"pages_written", st->pages_written},
                {"prefetch_reads", st->reads},
                {"pages_read", st->pages_read}};
        }
        return nlohmann::json{{"l3", std::move(l3)}}.dump();
      },
  };
}

}  // namespace hc
