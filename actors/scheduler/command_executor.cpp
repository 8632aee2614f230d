#include "actors/scheduler/command_executor.hpp"

#include <algorithm>
#include <chrono>
#include <string>

namespace hc {
namespace {

void fail(command_result& out, const error& e) {
  out.code = e.code;
  out.error = e.message;
}

void fill_pools(const request_manager& m, const radix_cache& cache, pool_state& p) {
  const tree_sizes& s = cache.tree().sizes();
  p.kv_avail = cache.kv().available();
  p.slots_avail = cache.slots().available();
  p.rows_avail = m.rows().available();
  p.full_evictable = s.full_evictable;
  p.full_protected = s.full_protected;
  p.mamba_evictable = s.mamba_evictable;
  p.mamba_protected = s.mamba_protected;
}

/// Runs one command of each kind; a failure sets the code and leaves the body empty.
struct runner {
  request_manager& m;
  radix_cache& cache;
  command_result& out;
  forward_ops& ops;
  clock_ns now;

  void check(const status& s) {
    if (!s) fail(out, s.err());
  }
  template <class T>
  void body_or_fail(result<T>&& r, auto&& fill) {
    if (!r) return fail(out, r.err());
    out.body = fill(*r);
  }

  void operator()(const cmd::create& c) {
    if (c.shared) return unresolved();
    check(m.create(c.req, c.ns, c.tokens));
  }
  void operator()(const cmd::append& c) {
    if (c.shared) return unresolved();
    check(m.append_tokens(c.req, c.tokens));
  }
  /// A range of a token arena reaches the executor only where nobody resolved it
  /// (resolve_shared_tokens): an engine without the node's arena.
  void unresolved() {
    fail(out, {errc::invalid_argument,
               "shared tokens need a node session with a token arena (sharedTokens)"});
  }
  void operator()(const cmd::match& c) {
    body_or_fail(m.match(c.req), [lists = m.index_lists_in_results()](const auto& r) {
      res::match b;
      b.prefix_len = r.prefix_len;
      b.kv_matched = r.kv_matched;
      if (lists) b.indices.assign(r.indices.begin(), r.indices.end());
      b.node_slot = r.node_slot;
      if (r.branching) b.branching = *r.branching;
      b.working = r.working;
      b.loaded_tokens = r.loaded_tokens;
      return b;
    });
  }
  void operator()(const cmd::prefetch&) {
    fail(out, {errc::invalid_argument,
               "prefetch needs a node whose instance has a host tier (hicacheRatio)"});
  }
  void operator()(const cmd::lock& c) { check(m.lock(c.req)); }
  void operator()(const cmd::unlock& c) { check(m.unlock(c.req)); }
  void operator()(const cmd::alloc_req& c) {
    body_or_fail(m.alloc_req(c.req), [](const auto& r) {
      return res::alloc_req{r.row, r.working, r.pingpong};
    });
  }
  void operator()(const cmd::alloc_kv& c) {
    body_or_fail(c.to_end ? m.alloc_kv_to_end(c.req) : m.alloc_kv(c.req, c.start, c.count),
                 [lists = m.index_lists_in_results()](const auto& r) {
                   return lists ? res::alloc_kv{{r.begin(), r.end()}} : res::alloc_kv{};
                 });
  }
  void operator()(const cmd::track& c) {
    body_or_fail(m.record_track(c.req, c.seqlen, c.flip),
                 [](slot_id keep) { return res::track{keep}; });
  }
  void operator()(const cmd::prepare_extend& c) {
    body_or_fail(m.prepare_extend(c.req, c.start, c.count), [](const auto& r) {
      return res::prepare_extend{r.plan.mask, r.plan.kernel_seqlen, r.track_slot};
    });
  }
  void operator()(const cmd::prepare_decode& c) {
    body_or_fail(m.prepare_decode(c.req), [](const auto& r) {
      return res::prepare_decode{r.mask, r.track_slot};
    });
  }
  void operator()(const cmd::process_decode& c) {
    check(c.accepted_drafts > 0 ? m.process_spec_decode(c.req, c.accepted_drafts, c.finished)
                                : m.process_decode(c.req, c.finished));
  }
  void operator()(const cmd::cache_unfinished& c) {
    body_or_fail(m.cache_unfinished(c.req, c.fill_len),
                 [lists = m.index_lists_in_results()](const auto& r) {
                   res::cache_unfinished b{r.inserted, r.protected_len, {}, r.node_slot};
                   if (lists) b.prefix.assign(r.prefix.begin(), r.prefix.end());
                   return b;
                 });
  }
  void operator()(const cmd::finish& c) {
    if (c.expected_len > 0) {
      const request_record* rec = m.find(c.req);
      if (rec && rec->kv_committed + 1 != c.expected_len)
        return fail(out, {errc::invalid_argument, "finish: committed length " +
                                                      std::to_string(rec->kv_committed) +
                                                      " != expected total length - 1 (" +
                                                      std::to_string(c.expected_len - 1) + ")"});
    }
    body_or_fail(m.finish(c.req), [](const auto& r) {
      return res::finish{r.inserted, r.cached_len, r.mamba_exist};
    });
  }
  void operator()(const cmd::abort& c) { check(m.abort(c.req)); }
  void operator()(const cmd::not_admitted& c) { check(m.not_admitted(c.req)); }
  void operator()(const cmd::evict& c) {
    const evict_result r = cache.tree().evict(c.tokens, c.slots);
    out.body =
        res::evict{r.tokens_evicted, r.mamba_evicted, r.tokens_freed_total, r.slots_freed_total};
  }
  void operator()(const cmd::check& c) {
    const tree_sizes& s = cache.tree().sizes();
    res::check b;
    b.tree_tokens = s.total_tokens();
    b.tree_slots = s.total_slots();
    status st = c.full ? cache.tree().sanity_check() : cache.tree().check_invariants();
    if (st && c.full) st = m.check_pool_invariants();
    b.sanity = st.ok();
    if (!st) b.sanity_detail = st.err().message;
    out.body = std::move(b);
  }
  void operator()(const cmd::lookup& c) {
    if (c.shared) return unresolved();
    match_result r = cache.tree().match(
        c.ns, c.tokens, c.without_indices ? match_ids::leave_out : match_ids::collect);
    res::lookup b;
    b.prefix_len = r.prefix_len;
    b.kv_matched = r.kv_matched;
    b.indices = std::move(r.indices);
    b.node_slot = r.last_slot;
    b.branching = r.branching;
    out.body = std::move(b);
  }
  void operator()(const cmd::pin& c) {
    if (c.shared) return unresolved();
    body_or_fail(m.pin(c.ns, c.tokens, c.ttl_ms, now), [](const pin_info& r) {
      return res::pin{r.id, r.pinned_len, r.kv_matched, r.loaded_tokens};
    });
  }
  void operator()(const cmd::unpin& c) { check(m.unpin(c.pin)); }
  void operator()(const cmd::demote& c) {
    if (c.shared) return unresolved();
    const demote_report r = cache.tree().demote_prefix(c.ns, c.tokens);
    out.body = res::demote{r.matched_tokens, r.demoted_tokens,  r.evicted_tokens,
                           r.slots_freed,    r.deferred_tokens, r.kept_tokens};
  }
  void operator()(const cmd::take_ops& c) {
    forward_ops taken = m.take_forward_ops(c.reqs);
    out.body = res::take_ops{taken.snapshots.size(), taken.clears.size(), taken.cows.size()};
    ops.snapshots.insert(ops.snapshots.end(), taken.snapshots.begin(), taken.snapshots.end());
    ops.clears.insert(ops.clears.end(), taken.clears.begin(), taken.clears.end());
    ops.cows.insert(ops.cows.end(), taken.cows.begin(), taken.cows.end());
  }
};

}  // namespace

void execute_command(request_manager& m, radix_cache& cache, const command& c, command_result& out,
                     forward_ops& ops, const clock& time) {
  const clock_ns t0 = time.now();
  std::visit(runner{m, cache, out, ops, t0}, c);
  out.elapsed_ns = static_cast<std::uint64_t>((time.now() - t0).count());
  fill_pools(m, cache, out.pools);
}

void execute_batch(request_manager& m, radix_cache& cache, std::span<const command> cmds,
                   std::vector<command_result>& results, const ops_sink& on_ops,
                   const command_hook& hook, const clock& time) {
  results.assign(cmds.size(), {});
  std::vector<request_handle> failed;
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const command& c = cmds[i];
    const std::optional<request_handle> req = request_of(c);
    if (req && std::find(failed.begin(), failed.end(), *req) != failed.end()) {
      results[i].code = errc::invalid_argument;
      results[i].error = std::string("skipped: an earlier command for request ") +
                         std::to_string(*req) + " in this batch failed";
      fill_pools(m, cache, results[i].pools);
      continue;
    }
    forward_ops ops;
    if (hook && hook(c, results[i])) {
      fill_pools(m, cache, results[i].pools);
    } else {
      execute_command(m, cache, c, results[i], ops, time);
    }
    if (!results[i].ok() && req) failed.push_back(*req);
    // A successful take_ops is reported even when empty: the batch is claimed (a release
    // after it quarantines what the forward may still write).
    const auto* taken = std::get_if<cmd::take_ops>(&c);
    if (on_ops && taken && results[i].ok()) on_ops(*taken, std::move(ops));
  }
}

status validate_command(const command& c, std::size_t max_tokens) {
  const char* kind = to_string(kind_of(c));
  const auto [tokens, prompt_range] = prompt_fields(c);
  if (tokens && tokens->size() > max_tokens)
    return {errc::invalid_argument,
            std::string(kind) + ": tokens has " + std::to_string(tokens->size()) +
                " entries, more than the limit " + std::to_string(max_tokens)};
  const std::optional<cmd::token_range> shared = prompt_range ? *prompt_range : std::nullopt;
  if (shared && !tokens->empty())
    return {errc::invalid_argument,
            std::string(kind) + ": tokens and a shared range at once (send one of them)"};
  std::optional<std::uint64_t> count;
  if (shared) count = shared->count;
  if (const auto* x = std::get_if<cmd::alloc_kv>(&c); x && !x->to_end) count = x->count;
  if (const auto* x = std::get_if<cmd::prepare_extend>(&c)) count = x->count;
  if (count && *count > max_tokens)
    return {errc::invalid_argument, std::string(kind) + ": count = " + std::to_string(*count) +
                                        " exceeds the limit " + std::to_string(max_tokens)};
  return {};
}

}  // namespace hc
