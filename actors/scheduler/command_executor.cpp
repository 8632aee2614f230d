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

void run(request_manager& m, radix_cache& cache, const command& c, command_result& out,
         forward_ops& ops) {
  const request_handle h = c.req;
  switch (c.kind) {
    case cmd_kind::create:
      if (status s = m.create(h, c.ns, c.tokens); !s) fail(out, s.err());
      return;
    case cmd_kind::append:
      if (status s = m.append_tokens(h, c.tokens); !s) fail(out, s.err());
      return;
    case cmd_kind::match: {
      auto r = m.match(h);
      if (!r) return fail(out, r.err());
      out.prefix_len = r->prefix_len;
      out.kv_matched = r->kv_matched;
      out.indices.assign(r->indices.begin(), r->indices.end());
      out.node_slot = r->node_slot;
      if (r->branching) out.branching = *r->branching;
      out.working = r->working;
      out.loaded_tokens = r->loaded_tokens;
      return;
    }
    case cmd_kind::prefetch:
      return fail(out, {errc::invalid_argument,
                        "prefetch needs a node whose instance has a host tier (hicacheRatio)"});
    case cmd_kind::lock:
      if (status s = m.lock(h); !s) fail(out, s.err());
      return;
    case cmd_kind::unlock:
      if (status s = m.unlock(h); !s) fail(out, s.err());
      return;
    case cmd_kind::alloc_req: {
      auto r = m.alloc_req(h);
      if (!r) return fail(out, r.err());
      out.row = r->row;
      out.working = r->working;
      out.pingpong = r->pingpong;
      return;
    }
    case cmd_kind::alloc_kv: {
      auto r = m.alloc_kv(h, c.start, c.n);
      if (!r) return fail(out, r.err());
      out.indices.assign(r->begin(), r->end());
      return;
    }
    case cmd_kind::track: {
      auto r = m.record_track(h, c.seqlen, c.flag);
      if (!r) return fail(out, r.err());
      out.slot = *r;
      return;
    }
    case cmd_kind::prepare_extend: {
      auto r = m.prepare_extend(h, c.start, c.n);
      if (!r) return fail(out, r.err());
      out.mask = r->plan.mask;
      out.kernel_seqlen = r->plan.kernel_seqlen;
      out.slot = r->track_slot;
      return;
    }
    case cmd_kind::prepare_decode: {
      auto r = m.prepare_decode(h);
      if (!r) return fail(out, r.err());
      out.mask = r->mask;
      out.slot = r->track_slot;
      return;
    }
    case cmd_kind::process_decode: {
      status s = c.n > 0 ? m.process_spec_decode(h, c.n, c.flag) : m.process_decode(h, c.flag);
      if (!s) fail(out, s.err());
      return;
    }
    case cmd_kind::cache_unfinished: {
      auto r = m.cache_unfinished(h, c.n);
      if (!r) return fail(out, r.err());
      out.inserted = r->inserted;
      out.prefix_len = r->protected_len;
      out.indices.assign(r->prefix.begin(), r->prefix.end());
      out.node_slot = r->node_slot;
      return;
    }
    case cmd_kind::finish: {
      if (c.n > 0) {
        const request_record* rec = m.find(h);
        if (rec && rec->kv_committed + 1 != c.n)
          return fail(out, {errc::invalid_argument,
                            "finish: committed length " + std::to_string(rec->kv_committed) +
                                " != expected total length - 1 (" + std::to_string(c.n - 1) + ")"});
      }
      auto r = m.finish(h);
      if (!r) return fail(out, r.err());
      out.inserted = r->inserted;
      out.prefix_len = r->cached_len;
      out.mamba_exist = r->mamba_exist;
      return;
    }
    case cmd_kind::abort:
      if (status s = m.abort(h); !s) fail(out, s.err());
      return;
    case cmd_kind::not_admitted:
      if (status s = m.not_admitted(h); !s) fail(out, s.err());
      return;
    case cmd_kind::evict: {
      evict_result r = cache.tree().evict(c.n, c.m);
      out.tokens_evicted = r.tokens_evicted;
      out.mamba_evicted = r.mamba_evicted;
      out.tokens_freed_total = r.tokens_freed_total;
      out.slots_freed_total = r.slots_freed_total;
      return;
    }
    case cmd_kind::check: {
      const tree_sizes& s = cache.tree().sizes();
      out.tree_tokens = s.total_tokens();
      out.tree_slots = s.total_slots();
      status st = c.flag ? cache.tree().sanity_check() : cache.tree().check_invariants();
      if (st && c.flag) st = m.check_pool_invariants();
      out.sanity = st.ok();
      if (!st) out.sanity_detail = st.err().message;
      return;
    }
    case cmd_kind::lookup: {
      match_result r = cache.tree().match(c.ns, c.tokens);
      out.prefix_len = r.indices.size();
      out.kv_matched = r.kv_matched;
      out.indices = std::move(r.indices);
      out.node_slot = r.last_slot;
      out.branching = r.branching;
      return;
    }
    case cmd_kind::take_ops: {
      forward_ops taken = m.take_forward_ops(c.reqs);
      out.ops_snapshots = taken.snapshots.size();
      out.ops_clears = taken.clears.size();
      out.ops_cows = taken.cows.size();
      ops.snapshots.insert(ops.snapshots.end(), taken.snapshots.begin(), taken.snapshots.end());
      ops.clears.insert(ops.clears.end(), taken.clears.begin(), taken.clears.end());
      ops.cows.insert(ops.cows.end(), taken.cows.begin(), taken.cows.end());
      return;
    }
  }
  fail(out, {errc::invalid_argument, "unknown command kind"});
}

}  // namespace

void execute_command(request_manager& m, radix_cache& cache, const command& c, command_result& out,
                     forward_ops& ops, const clock& time) {
  const clock_ns t0 = time.now();
  run(m, cache, c, out, ops);
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
    const bool per_request = c.kind != cmd_kind::evict && c.kind != cmd_kind::check &&
                             c.kind != cmd_kind::take_ops && c.kind != cmd_kind::lookup;
    if (per_request && std::find(failed.begin(), failed.end(), c.req) != failed.end()) {
      results[i].code = errc::invalid_argument;
      results[i].error = std::string("skipped: an earlier command for request ") +
                         std::to_string(c.req) + " in this batch failed";
      fill_pools(m, cache, results[i].pools);
      continue;
    }
    forward_ops ops;
    if (hook && hook(c, results[i])) {
      fill_pools(m, cache, results[i].pools);
    } else {
      execute_command(m, cache, c, results[i], ops, time);
    }
    if (!results[i].ok() && per_request) failed.push_back(c.req);
    // A successful take_ops is reported even when empty: the batch is claimed (a release
    // after it quarantines what the forward may still write).
    const bool taken = c.kind == cmd_kind::take_ops && results[i].ok();
    if (on_ops && (!ops.empty() || taken)) on_ops(c, std::move(ops));
  }
}

status validate_command(const command& c, std::size_t max_tokens) {
  if (static_cast<std::size_t>(c.kind) >= cmd_kind_count)
    return {errc::invalid_argument,
            "command kind " + std::to_string(static_cast<unsigned>(c.kind)) + " is unknown"};
  if (c.tokens.size() > max_tokens)
    return {errc::invalid_argument,
            std::string(to_string(c.kind)) + ": tokens has " + std::to_string(c.tokens.size()) +
                " entries, more than the limit " + std::to_string(max_tokens)};
  if ((c.kind == cmd_kind::alloc_kv || c.kind == cmd_kind::prepare_extend) && c.n > max_tokens)
    return {errc::invalid_argument, std::string(to_string(c.kind)) +
                                        ": n = " + std::to_string(c.n) + " exceeds the limit " +
                                        std::to_string(max_tokens)};
  return {};
}

}  // namespace hc
