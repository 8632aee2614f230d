#include "actors/node/host_storage_actor.hpp"
#include "actors/node/json_text.hpp"

#include <nlohmann/json.hpp>

#include <optional>

#include <string>

#include "actors/common/fault_log.hpp"
#include "actors/node/messages.hpp"
#include "storage/external_io.hpp"

namespace hc {
namespace {

struct state {
  std::shared_ptr<l3_store> store;
  metrics_sink* metrics = nullptr;
  const clock* time = nullptr;
  double since(clock_ns t0) const { return seconds_between(t0, time->now()); }
  std::uint64_t writes = 0, write_failures = 0, reads = 0, pages_written = 0, pages_read = 0;
  std::uint64_t writes_skipped = 0;  ///< backups not written: the store was reading its index
  std::uint64_t ext_calls = 0, ext_gets = 0, ext_hits = 0, ext_sets = 0;
  std::vector<std::byte> scratch;
  std::uint64_t corrupt_seen = 0;         ///< the store's corrupt count already reported
  std::uint64_t index_failures_seen = 0;  ///< the store's index_failures already reported
  std::optional<fault_reporter> faults;   ///< counts and logs the faults (set with metrics)

  /// Reports the values the store found corrupt, and the times its index began to fail,
  /// since the last call (each a fault).
  void report_store_faults() {
    const l3_usage u = store->usage();
    for (; index_failures_seen < u.index_failures; ++index_failures_seen)
      (*faults)("l3_index_write_error",
                "the L3 index cannot write to its disk: RocksDB retries every second, L3 writes "
                "go on in memory, and a crash meanwhile loses them (the log has RocksDB's error)");
    for (; corrupt_seen < u.corrupt; ++corrupt_seen)
      (*faults)("l3_corrupt_value",
                "an L3 value failed its checksum when read: deleted, never served (damaged "
                "on the disk, or by a crash)");
  }
};

/// The fault a failed L3 write counts as: no space (a full disk, a value larger than the
/// store) or any other write error.
std::string_view write_fault(const error& e) {
  return e.code == errc::out_of_memory ? "l3_full" : "l3_write_error";
}

/// Most bytes of one external value (a page or a state). 1 GiB.
constexpr std::size_t max_external_value = std::size_t{1} << 30;

/// An external client's batch (the Store capability). Bad input fails the whole batch
/// with invalid_argument before anything is read or written.
void external(state& st, store_job& j) {
  ++st.ext_calls;
  if (!st.store) {
    j.err = {errc::io_error, "this node has no L3 store (hybridcached --l3 false)"};
    return;
  }
  if (j.op == store_job::what::clear) {
    auto prefix = l3::external_prefix(j.identity);
    auto n = prefix ? st.store->erase_prefix(*prefix) : result<std::size_t>(prefix.err());
    if (n)
      j.removed = *n;
    else
      j.err = n.err();
    return;
  }
  std::vector<std::string> keys;
  keys.reserve(j.keys.size());
  for (const std::string& k : j.keys) {
    auto ek = l3::external_key(j.identity, k);
    if (!ek) {
      j.err = ek.err();
      return;
    }
    keys.push_back(std::move(*ek));
  }
  const auto pool_of = [](store_job::pool p) {
    return p == store_job::pool::kv_page ? l3_pool::kv_page : l3_pool::ssm_state;
  };
  if (j.op == store_job::what::exists) {
    std::vector<l3::sidecar_query> q;
    for (const store_job::sidecar& s : j.sidecars) {
      if (status ok = l3::check_key_suffix(s.key_suffix); !ok) {
        j.err = ok.err();
        return;
      }
      q.push_back({pool_of(s.which),
                   s.trailing ? hit_policy::trailing_pages : hit_policy::all_pages, s.n,
                   s.key_suffix});
    }
    const l3::exists_answer a = l3::exists_v2(*st.store, keys, q);
    j.kv_hit_pages = static_cast<std::uint32_t>(a.kv_hit_pages);
    for (std::size_t p : a.restorable)
      j.restorable.push_back(static_cast<std::uint32_t>(p));
    return;
  }
  if (j.segments.size() != keys.size()) {
    j.err = {errc::invalid_argument, "every key needs its segment list"};
    return;
  }
  std::vector<std::vector<l3::segment>> segs(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (const store_job::segment& s : j.segments[i])
      segs[i].push_back({s.offset, s.length});
    if (status s = l3::check_segments(segs[i], j.arena.size(), max_external_value); !s) {
      j.err = {s.err().code, "entry " + std::to_string(i) + ": " + s.err().message};
      return;
    }
  }
  const l3_pool pool = pool_of(j.which);
  j.ok.assign(keys.size(), false);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (j.op == store_job::what::get) {
      ++st.ext_gets;
      j.ok[i] = l3::get_into(*st.store, pool, keys[i], segs[i], j.arena, st.scratch);
      if (j.ok[i]) ++st.ext_hits;
    } else {
      ++st.ext_sets;
      const status s = l3::set_from(*st.store, pool, keys[i], segs[i], j.arena, st.scratch);
      j.ok[i] = s.ok();
      if (!s && s.err().code != errc::invalid_argument)
        (*st.faults)(write_fault(s.err()),
                     "a Store client's value was not written: " + s.err().message);
    }
  }
}

void write(state& st, l3_write_job& j) {
  const clock_ns t0 = st.time->now();
  ++st.writes;
  if (!st.store || !j.host) {
    j.report.failed = true;
    j.report.err = {errc::io_error, "no L3 store"};
    ++st.write_failures;
    return;
  }
  if (st.store->usage().loading) {  // it refuses every set until its index is read
    j.skipped = true;
    ++st.writes_skipped;
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
  if (j.report.failed) {
    ++st.write_failures;
    (*st.faults)(write_fault(j.report.err),
                 "an L3 backup stopped after " + std::to_string(j.report.pages_written) + " of " +
                     std::to_string(j.keys.size()) + " pages: " + j.report.err.message);
  }
  st.pages_written += j.report.pages_written;
  st.report_store_faults();
  j.seconds = st.since(t0);
  st.metrics->tier_bytes("l3", "write", j.bytes, j.seconds);
  st.metrics->backup(j.seconds, j.report.failed);
}

void read(state& st, l3_read_job& j) {
  const clock_ns t0 = st.time->now();
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
                            state_dst, *st.time, j.deadline);
  j.bytes = j.report.pages_read * p * h.kv_bytes_per_token() +
            (j.report.state_read ? h.state_bytes() : 0);
  st.pages_read += j.report.pages_read;
  st.report_store_faults();
  if (j.report.timed_out)
    (*st.faults)("l3_timeout", "a prefetch ran past its deadline with " +
                                   std::to_string(j.report.pages_read) + " of " +
                                   std::to_string(n) + " pages read (slow storage?)");
  else if (j.report.err.code == errc::io_error)
    (*st.faults)("l3_read_error", "a prefetch read failed after " +
                                      std::to_string(j.report.pages_read) + " of " +
                                      std::to_string(n) + " pages: " + j.report.err.message);
  j.seconds = st.since(t0);
  st.metrics->tier_bytes("l3", "read", j.bytes, j.seconds);
}

}  // namespace

msg::storage_actor::behavior_type host_storage_actor(msg::storage_actor::pointer,
                                                     std::shared_ptr<l3_store> store,
                                                     metrics_sink* metrics, const clock* time) {
  auto st = std::make_shared<state>();
  st->time = time;
  st->store = std::move(store);
  st->metrics = metrics;
  st->faults.emplace(*metrics, *time);
  return {
      [st](msg::store_atom, const l3_write_ptr& j) -> l3_write_ptr {
        write(*st, *j);
        return j;
      },
      [st](msg::prefetch_atom, const l3_read_ptr& j) -> l3_read_ptr {
        read(*st, *j);
        return j;
      },
      [st](msg::ext_store_atom, const msg::store_ptr& j) {
        external(*st, *j);
        if (st->store) st->report_store_faults();
        j->complete();
      },
      [st](msg::inspect_atom) -> std::string {
        nlohmann::json l3 = nullptr;
        if (st->store) {
          const l3_usage u = st->store->usage();
          l3 = {{"loading", u.loading},
                {"index_failing", u.index_failing},
                {"bytes", u.bytes},
                {"values", u.values},
                {"capacity", u.capacity},
                {"evicted", u.evicted},
                {"corrupt", u.corrupt},
                {"backups", st->writes},
                {"backup_failures", st->write_failures},
                {"backups_skipped_loading", st->writes_skipped},
                {"pages_written", st->pages_written},
                {"prefetch_reads", st->reads},
                {"pages_read", st->pages_read},
                {"external_calls", st->ext_calls},
                {"external_gets", st->ext_gets},
                {"external_hits", st->ext_hits},
                {"external_sets", st->ext_sets}};
        }
        return json_text(nlohmann::json{{"l3", std::move(l3)}});
      },
  };
}

}  // namespace hc
