#pragma once
// The tier pipelines of one radix_cache actor (architecture.md §2), in ids only:
//   - load-back: match() loaded the host part of a prefix back; the H→D copies go to
//     forward_stream, and load_done() unlocks the node once they ran;
//   - write_back demotion: the D→H copies of evicted leaves go to forward_stream at once;
//   - write-through backup: candidates are backed up (host ids reserved, KV path locked)
//     once no snapshot into their slot is pending, copied D→H when their bytes are final,
//     then unlocked;
//   - L3 backup: a node whose host copy is complete is host-protected and written to the
//     node's L3 store by host_storage, then released (a failed batch is counted and does
//     not stop later backups);
//   - storage prefetch (§5.4): the planner reserves host ids, host_storage checks existence
//     and reads, the planner hangs what arrived in the tree; the worker polls and admits
//     per the termination policy.
// Every reply handler runs on the radix_cache actor, like the tree it edits.

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/common/clock.hpp"
#include "actors/common/command.hpp"
#include "actors/common/metrics_sink.hpp"
#include "actors/host_storage/host_pools.hpp"
#include "actors/node/messages.hpp"
#include "actors/radix_cache/prefetch_planner.hpp"
#include "actors/radix_cache/radix_cache.hpp"
#include "actors/scheduler/request_manager.hpp"

namespace hc {

/// How an instance reaches its tiers (built by the node).
struct tier_wiring {
  std::shared_ptr<host_pools> host;  ///< L2 bytes; null: no host tier
  msg::storage_actor storage;        ///< host_storage; invalid: no L3 for this instance
  std::string fingerprint;           ///< L3 key prefix (l3::fingerprint of the instance)
  prefetch_config prefetch;
  const clock* time = &steady();  ///< prefetch timeouts and deadlines; outlives the pipeline
  std::shared_ptr<kv_event_sink> events;  ///< the instance's KV events; null: none
  std::string event_topic;                ///< "kv/<instance fingerprint>/" (+ the namespace)
};

class tier_pipeline {
 public:
  /// `self`, `cache` and `metrics` must outlive the pipeline (all belong to one actor).
  tier_pipeline(msg::cache_actor::pointer self, radix_cache& cache, msg::stream_actor stream,
                tier_wiring wiring, metrics_sink* metrics);

  bool enabled() const noexcept { return cache_.has_host_tier(); }
  /// Runs after each answer of the data plane or the store has been applied to the tree
  /// (the radix_cache actor publishes the KV events it caused).
  void after_answer(std::function<void()> f) { after_answer_ = std::move(f); }
  void name_namespace(namespace_id id, const std::string& name);

  /// After a step of session `s`: hands the step's load-backs, demotions and backups to
  /// the data plane. `pending_snapshot(slot)`: a session still has to copy into `slot`.
  void pump(session_id s, const std::function<bool(slot_id)>& pending_snapshot);

  /// The prefetch command (a command_hook): false for any other command.
  bool on_command(session_id s, const request_manager& m, const command& c, command_result& out);
  /// Prefetches of requests that no longer exist are abandoned (after every step).
  void sweep(session_id s, const request_manager* m);

  /// Delivers `true` to `done` once none of the pipeline's requests (copies, L3 writes,
  /// prefetch reads) is in flight — at once if none is.
  void when_idle(caf::typed_response_promise<bool> done);

  /// Host tier, prefetch and backup figures as a JSON object text ("null" if disabled).
  std::string inspect() const;

 private:
  std::function<void()> after_answer_;
  struct prefetch_record {
    prefetch_ticket ticket;
    namespace_id ns = 0;
    bool running = true;
    bool abandoned = false;       ///< the request went away while the I/O ran
    bool admitted_early = false;  ///< the worker admitted before the end (policy)
    clock_ns started{};
    double timeout_s = 0;
    std::string outcome;
    std::uint64_t storage_hit_tokens = 0;
  };
  using record_key = std::pair<session_id, request_handle>;

  void send_copies(msg::tier_kind kind, session_id s, std::vector<tier_copy> copies);
  void store_to_l3(node_ref n);
  void start_prefetch(session_id s, const request_record& r, prefetch_record& rec);
  void prefetch_done(record_key key, std::size_t usable_pages, std::size_t pages_read,
                     bool state_read, bool timed_out, double seconds);
  const std::string& ns_name(namespace_id id) const;
  /// Every request the pipeline sends is counted from its send to the end of its reply
  /// handler (which may send the next one first), so idle means the whole chain ended.
  void sent() noexcept { ++in_flight_; }
  void answered();

  msg::cache_actor::pointer self_;
  radix_cache& cache_;
  msg::stream_actor stream_;
  tier_wiring w_;
  metrics_sink* metrics_;
  std::unique_ptr<prefetch_planner> planner_;
  std::vector<std::string> ns_names_{""};
  std::vector<node_ref> deferred_;
  std::map<record_key, prefetch_record> prefetches_;
  std::size_t in_flight_ = 0;
  std::vector<caf::typed_response_promise<bool>> drains_;  ///< waiting for in_flight_ == 0
  struct counters {
    std::uint64_t backups_sent = 0, backups_refused = 0, l3_writes = 0, l3_write_failures = 0;
    std::uint64_t l3_writes_skipped = 0;  ///< the L3 store was still reading its index
    std::uint64_t loads = 0, demotions = 0;
  } n_;
};

}  // namespace hc
