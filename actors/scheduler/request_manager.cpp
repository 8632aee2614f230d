#include "actors/scheduler/request_manager.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "actors/common/invariant.hpp"

namespace hc {
namespace {

std::string req_name(request_handle h) {
  return "request " + std::to_string(h);
}

/// Releases (in order) and removes the entries held until a batch <= `ended` ended.
template <class Held, class Release>
void release_due(std::vector<Held>& held, std::uint64_t ended, Release release) {
  auto due = std::stable_partition(held.begin(), held.end(),
                                   [ended](const Held& h) { return h.until <= ended; });
  for (auto it = held.begin(); it != due; ++it)
    release(*it);
  held.erase(held.begin(), due);
}

}  // namespace

request_manager::request_manager(const request_config& cfg, radix_cache& cache)
    : cfg_(cfg), cache_(cache), rows_(cfg.rows) {
  if (cfg_.pp_size != 1 && cfg_.pp_size != 2) cfg_.pp_size = 2;
  if (lazy()) cfg_.pp_size = 2;  // lazy always runs with overlap
  if (cfg_.chunk_size == 0) cfg_.chunk_size = 1;
  if (cfg_.alloc_factor == 0) cfg_.alloc_factor = lazy() ? 2 : 3;
  if (cfg_.max_context_len == 0 || cfg_.shared_rows.size() < (cfg_.rows + 1) * cfg_.max_context_len)
    cfg_.shared_rows = {};  // a caller's mistake: rows stay private, results keep their lists
  if (!cfg_.pinned_tokens) cfg_.pinned_tokens = make_pin_budget(cache);
}

request_manager::~request_manager() {
  release_pins();  // the tree outlives the manager: its nodes are unlocked
  if (!cfg_.live_tokens) return;
  for (const auto& [h, r] : reqs_)
    cfg_.live_tokens->give(r.tokens.size() + request_record_tokens);
}

namespace {

/// out_of_memory for n more tokens than the node's budget holds.
error over_budget(const std::string& what, std::size_t n, const token_budget& b) {
  return {errc::out_of_memory,
          what + ": " + std::to_string(n) + " more tokens would pass the node's limit on tokens " +
              "held by live requests (" + std::to_string(b.held()) + " of " +
              std::to_string(b.limit()) +
              " held; --max-request-tokens): finish or abort requests, or raise it"};
}

}  // namespace

void request_manager::publish_row(const request_record& r, std::size_t from, std::size_t to) {
  if (cfg_.shared_rows.empty() || r.row == no_row) return;
  to = std::min({to, r.row_kv.size(), cfg_.max_context_len});
  if (from >= to) return;
  std::copy(r.row_kv.begin() + static_cast<std::ptrdiff_t>(from),
            r.row_kv.begin() + static_cast<std::ptrdiff_t>(to),
            cfg_.shared_rows.begin() +
                static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r.row) * cfg_.max_context_len +
                                            from));
}

result<request_record*> request_manager::get(request_handle h) {
  auto it = reqs_.find(h);
  if (it == reqs_.end()) return error{errc::not_found, "unknown " + req_name(h)};
  return &it->second;
}

const request_record* request_manager::find(request_handle h) const {
  auto it = reqs_.find(h);
  return it == reqs_.end() ? nullptr : &it->second;
}

void request_manager::free_kv(std::span<const kv_index> ids) {
  if (ids.empty()) return;
  if (auto f = progress_.in_flight()) {
    quarantine_kv_.push_back({*f, std::vector<kv_index>(ids.begin(), ids.end())});
    return;
  }
  must(cache_.kv().free(ids), "freed KV ids that were allocated");
}

void request_manager::free_slot(slot_id s) {
  if (s == no_slot) return;
  if (auto f = progress_.in_flight()) {
    quarantine_slots_.push_back({*f, s});
    return;
  }
  must(cache_.slots().free_one(s), "freed a slot that was allocated");
}

void request_manager::stream_claimed(std::uint64_t batch) {
  progress_.claim(batch);
  if (cfg_.session != 0) cache_.fences().claimed(cfg_.session, batch);
}

void request_manager::stream_ended(std::uint64_t batch) {
  progress_.end(batch);
  if (cfg_.session != 0) cache_.fences().ended(cfg_.session, batch);
  release_due(write_locks_, progress_.ended,
              [&](const write_lock& w) { (void)cache_.tree().dec_lock(w.node); });
  release_due(quarantine_kv_, progress_.ended, [&](const held_kv& h) {
    must(cache_.kv().free(h.ids), "freed KV ids that were allocated");
  });
  release_due(quarantine_slots_, progress_.ended, [&](const held_slot& h) {
    must(cache_.slots().free_one(h.slot), "freed a slot that was allocated");
  });
}

void request_manager::release_quarantine() {
  stream_ended(progress_.claimed);
  if (cfg_.session != 0) cache_.fences().closed(cfg_.session);
}

std::vector<writer_mark> request_manager::take_read_waits() {
  std::vector<writer_mark> out;
  out.swap(read_waits_);
  return out;
}

void request_manager::note_writers(node_ref last) {
  if (cfg_.session == 0 || !cache_.tree().valid(last)) return;
  const write_fences& f = cache_.fences();
  for (const radix_node* x = last.node; x != nullptr; x = x->parent)
    for (const writer_mark& w : x->writers)
      if (w.session != cfg_.session && f.writing(w)) f.add_mark(read_waits_, w);
}

void request_manager::mark_written(const insert_result& ins, std::span<const kv_index> value,
                                   std::size_t from) {
  if (cfg_.session == 0) return;
  const std::optional<writer_mark> w = cache_.fences().in_flight(cfg_.session);
  radix_tree& tree = cache_.tree();
  if (!w || !tree.valid(ins.node) || ins.node.node->parent == nullptr) return;
  bool marked = false;
  std::size_t end = value.size();
  for (radix_node* x = ins.node.node; x->parent != nullptr; x = x->parent) {
    const std::size_t start = end - x->key.size();
    // A node adopted the request's ids if it holds them (the dedup kept the tree's own);
    // the end node adopted the offered slot unless it had one.
    bool adopted = x == ins.node.node && !ins.mamba_exist;
    if (end > from && !x->value.empty()) {
      const std::size_t q = std::max(from, start);
      adopted = adopted || x->value[q - start] == value[q];
    }
    if (adopted) {
      cache_.fences().add_mark(x->writers, *w);
      marked = true;
    }
    if (start <= from) break;
    end = start;
  }
  // Locked until the forward ended: neither evicted (its ids recycled under the writes)
  // nor demoted (its bytes copied before they are final) in between.
  if (marked && tree.inc_lock(ins.node).ok()) write_locks_.push_back({w->batch, ins.node});
}

std::size_t request_manager::quarantined_kv_tokens() const {
  const std::size_t p = cache_.page_size();
  if (p == 1) {
    std::size_t n = 0;
    for (const held_kv& h : quarantine_kv_)
      n += h.ids.size();
    return n;
  }
  std::unordered_set<kv_index> pages;
  for (const held_kv& h : quarantine_kv_)
    for (kv_index x : h.ids)
      pages.insert(x / static_cast<kv_index>(p));
  return pages.size() * p;
}

node_ref request_manager::locked_prefix(const request_record& r) noexcept {
  return r.locked ? r.last_node : node_ref{};
}

status request_manager::create(request_handle h, namespace_id ns, std::vector<token_id> prompt) {
  if (reqs_.count(h)) return {errc::invalid_argument, req_name(h) + " already exists"};
  if (prompt.empty()) return {errc::invalid_argument, req_name(h) + ": empty prompt"};
  if (cfg_.live_tokens && !cfg_.live_tokens->take(prompt.size() + request_record_tokens))
    return over_budget(req_name(h), prompt.size() + request_record_tokens, *cfg_.live_tokens);
  request_record r;
  r.handle = h;
  r.ns = ns;
  r.input_len = prompt.size();
  r.tokens = std::move(prompt);
  reqs_.emplace(h, std::move(r));
  return {};
}

void request_manager::drop(request_handle h) {
  auto it = reqs_.find(h);
  if (it == reqs_.end()) return;
  if (cfg_.live_tokens) cfg_.live_tokens->give(it->second.tokens.size() + request_record_tokens);
  reqs_.erase(it);
}

status request_manager::append_tokens(request_handle h, std::span<const token_id> tokens) {
  auto r = get(h);
  if (!r) return r.err();
  if (cfg_.live_tokens && !cfg_.live_tokens->take(tokens.size()))
    return over_budget(req_name(h), tokens.size(), *cfg_.live_tokens);
  (*r)->tokens.insert((*r)->tokens.end(), tokens.begin(), tokens.end());
  return {};
}

result<match_info> request_manager::match(request_handle h) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  if (r.row != no_row || r.locked)
    return error{errc::invalid_argument, req_name(h) + ": match after admission"};
  const std::span<const token_id> key(r.tokens.data(), r.input_len - 1);
  cow_match_result m = cache_.match(r.ns, key, /*cow=*/true, r.working != no_slot);
  if (m.match.last_slot != no_slot && m.cow_src == no_slot)
    return error{errc::out_of_memory, req_name(h) + ": no SSM slot for the copy-on-write"};
  note_writers(m.match.last_node);  // the prefix it reads and the COW source
  r.row_kv = std::move(m.match.indices);
  r.kv_committed = r.row_kv.size();
  r.cache_protected_len = r.row_kv.size();
  r.last_node = m.match.last_node;
  r.branching = m.match.branching;
  if (m.new_working_slot != no_slot) r.working = m.new_working_slot;
  if (m.cow_src != no_slot) {
    r.cow_src = m.cow_src;
    r.needs_clear = false;
  }
  match_info info;
  info.prefix_len = r.row_kv.size();
  info.indices = r.row_kv;
  info.node_slot = m.match.last_slot;
  info.branching = r.branching;
  info.working = r.working;
  info.kv_matched = std::max(m.match.kv_matched, info.prefix_len);
  info.loaded_tokens = m.loaded_tokens;
  queried_tokens_ += key.size();
  return info;
}

status request_manager::lock(request_handle h) {
  auto r = get(h);
  if (!r) return r.err();
  if ((*r)->locked) return {errc::invalid_argument, req_name(h) + " is already locked"};
  if (status s = cache_.tree().inc_lock((*r)->last_node); !s) return s;
  (*r)->locked = true;
  return {};
}

status request_manager::unlock(request_handle h) {
  auto r = get(h);
  if (!r) return r.err();
  if (!(*r)->locked) return {errc::invalid_argument, req_name(h) + " is not locked"};
  if (reads_tree_prefix(**r))
    return {errc::invalid_argument,
            req_name(h) + ": its row reads the locked prefix (" +
                std::to_string((*r)->cache_protected_len) +
                " tokens the tree owns); finish or abort releases the lock"};
  if (status s = cache_.tree().dec_lock((*r)->last_node); !s) return s;
  (*r)->locked = false;
  return {};
}

result<admit_info> request_manager::alloc_req(request_handle h) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  if (r.row != no_row) return error{errc::invalid_argument, req_name(h) + " already has a row"};
  if (!r.locked && r.cache_protected_len > 0)
    return error{errc::invalid_argument,
                 req_name(h) + ": lock its matched prefix (" +
                     std::to_string(r.cache_protected_len) +
                     " tokens) before alloc_req; the row would read ids the tree may evict"};
  cache_.ensure_free_slots(cfg_.alloc_factor);
  const row_id row = rows_.alloc();
  if (row == no_row) return error{errc::out_of_memory, "no free request row for " + req_name(h)};
  bool took_working = false;
  if (r.working == no_slot) {
    r.working = cache_.slots().alloc_one();
    if (r.working == no_slot) {
      (void)rows_.free(row);
      return error{errc::out_of_memory, "no SSM slot for the working state of " + req_name(h)};
    }
    r.needs_clear = true;
    took_working = true;
  }
  if (extra() && !r.has_pingpong) {
    std::vector<slot_id> pp;
    const std::size_t want = lazy() ? 1 : static_cast<std::size_t>(cfg_.pp_size);
    if (!cache_.slots().alloc(want, pp)) {
      if (took_working) {
        free_slot(r.working);
        r.working = no_slot;
        r.needs_clear = false;
      }
      (void)rows_.free(row);
      return error{errc::out_of_memory, "no SSM slots for the track buffers of " + req_name(h)};
    }
    r.pingpong = {pp[0], pp.size() > 1 ? pp[1] : no_slot};
    r.has_pingpong = true;
    r.next_track_idx = 0;
  }
  r.row = row;
  publish_row(r, 0, r.row_kv.size());  // the matched prefix
  admit_info info;
  info.row = row;
  info.working = r.working;
  if (r.has_pingpong) {
    info.pingpong = r.pingpong;
    if (!lazy() && cfg_.pp_size == 1) (*info.pingpong)[1] = no_slot;
  }
  return info;
}

result<std::span<const kv_index>> request_manager::alloc_kv(request_handle h, std::size_t start,
                                                            std::size_t n) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  if (r.row == no_row) return error{errc::invalid_argument, req_name(h) + " has no row yet"};
  if (start != r.kv_allocated())
    return error{errc::invalid_argument, req_name(h) + ": KV extend starts at " +
                                             std::to_string(start) + " but the row holds " +
                                             std::to_string(r.kv_allocated())};
  // n > max - start, not start + n > max, which wraps for n near 2^64.
  if (cfg_.max_context_len && (start > cfg_.max_context_len || n > cfg_.max_context_len - start))
    return error{errc::invalid_argument, req_name(h) + ": " + std::to_string(start) + " + " +
                                             std::to_string(n) + " tokens exceed max_context_len " +
                                             std::to_string(cfg_.max_context_len)};
  const kv_index last = start > 0 ? r.row_kv[start - 1] : 0;
  if (status s = cache_.alloc_kv(start, last, n, r.row_kv); !s) return s.err();
  r.kv_committed = r.row_kv.size();
  publish_row(r, start, start + n);
  return std::span<const kv_index>(r.row_kv.data() + start, n);
}

result<std::span<const kv_index>> request_manager::alloc_kv_to_end(request_handle h) {
  auto rr = get(h);
  if (!rr) return rr.err();
  const request_record& r = **rr;
  const std::size_t start = r.kv_allocated();
  return alloc_kv(h, start, r.tokens.size() > start ? r.tokens.size() - start : 0);
}

result<slot_id> request_manager::record_track(request_handle h, std::size_t seqlen, bool flip) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  if (!r.has_pingpong) return error{errc::invalid_argument, req_name(h) + " has no track slots"};
  r.tracked_len = seqlen;
  if (flip) r.next_track_idx = other_idx(r.next_track_idx);
  return r.pingpong[static_cast<std::size_t>(keep_idx(r))];
}

result<extend_track> request_manager::prepare_extend(request_handle h, std::size_t prefix_len,
                                                     std::size_t extend_len) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  extend_track t;
  if (!extra() || !r.has_pingpong) return t;
  t.plan = plan_prefill_track(prefix_len, extend_len, cfg_.chunk_size, r.branching, lazy(),
                              r.next_track_idx, cfg_.pp_size);
  if (t.plan.mask) {
    t.track_slot = r.pingpong[static_cast<std::size_t>(t.plan.track_entry)];
    r.tracked_len = t.plan.tracked_len;
    r.next_track_idx = t.plan.next_after;
  }
  return t;
}

result<decode_track> request_manager::prepare_decode(request_handle h) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  decode_track t;
  if (!extra() || !r.has_pingpong) return t;
  if (r.prepared_count == r.prepared_decodes.size()) {  // a step never processed: dropped
    r.prepared_decodes[0] = r.prepared_decodes[1];
    --r.prepared_count;
  }
  request_record::prepared_decode& step = r.prepared_decodes[r.prepared_count++];
  step = {r.kv_committed, false};
  t.mask = is_decode_boundary(r.kv_committed, cfg_.track_interval);
  if (t.mask && lazy()) {
    const int other = 1 - r.next_track_idx;
    if (r.pingpong[static_cast<std::size_t>(other)] == no_slot) {
      slot_id s = no_slot;
      if (!cfg_.force_lazy_prealloc_failure) {
        s = cache_.slots().alloc_one();
        if (s == no_slot) {
          (void)cache_.tree().evict(0, 1);
          s = cache_.slots().alloc_one();
        }
      }
      if (s != no_slot) {
        r.pingpong[static_cast<std::size_t>(other)] = s;
        r.next_track_idx = other;
        step.lazy_flip = true;
      }
    }
    step.lazy_overwrite = !step.lazy_flip;
  }
  t.track_slot = r.pingpong[static_cast<std::size_t>(r.next_track_idx)];
  return t;
}

status request_manager::process_decode(request_handle h, bool finished) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  if (!extra() || !r.has_pingpong) return {};
  // The step these results belong to is the oldest one prepared: under overlap scheduling
  // the next step is already prepared (kv_committed counts it), and its boundary is not
  // this step's (SGLang reads kv_committed_len here, which is the same without overlap).
  std::size_t len = r.kv_committed;
  if (r.prepared_count > 0) {
    len = r.prepared_decodes[0].len;
    r.prepared_decodes[0] = r.prepared_decodes[1];
    --r.prepared_count;
  }
  if (!is_decode_boundary(len, cfg_.track_interval)) return {};
  r.tracked_len = len;
  if (!lazy()) {
    r.next_track_idx = other_idx(r.next_track_idx);
    return {};
  }
  const std::size_t other = static_cast<std::size_t>(1 - r.next_track_idx);
  if (r.pingpong[other] != no_slot) {
    free_slot(r.pingpong[other]);
    r.pingpong[other] = no_slot;
  } else if (finished) {
    r.lazy_is_insert = false;  // the only track slot was overwritten by this boundary
  }
  return {};
}

status request_manager::process_spec_decode(request_handle h, std::size_t accepted, bool finished) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  (void)finished;
  if (!extra() || lazy())
    return {errc::invalid_argument,
            req_name(h) + ": " + std::to_string(accepted) +
                " accepted drafts: speculative decoding needs the extra_buffer strategy (SGLang " +
                (lazy() ? "does not support it with extra_buffer_lazy: an assert at start)"
                        : "runs it without a radix cache under no_buffer)")};
  if (!r.has_pingpong) return {};
  auto tracked = spec_decode_boundary(r.kv_committed, accepted, cfg_.track_interval);
  if (!tracked) return {};
  r.tracked_len = *tracked;
  r.next_track_idx = other_idx(r.next_track_idx);
  return {};
}

result<unfinished_info> request_manager::cache_unfinished(request_handle h, std::size_t fill_len) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  radix_tree& tree = cache_.tree();
  // Only an admitted request has KV of its own to offer. Before admission its row holds
  // just the matched prefix's tree ids, which nothing protects until it is locked: an
  // eviction in between frees them, and inserting them would put free ids in the tree
  // (fuzz_executor, tests/fuzz/regressions/executor/). SGLang calls cache_unfinished_req
  // only for running requests.
  if (r.row == no_row) return error{errc::invalid_argument, req_name(h) + " has no row yet"};
  if (fill_len > r.tokens.size() || fill_len > r.kv_allocated())
    return error{errc::invalid_argument,
                 req_name(h) + ": fill length " + std::to_string(fill_len) + " beyond its KV"};
  unfinished_info info;
  const std::optional<std::size_t> cache_len =
      extra() ? r.tracked_len : std::optional<std::size_t>(fill_len);
  if (!cache_len) {
    info.protected_len = r.cache_protected_len;
    info.prefix = std::span<const kv_index>(r.row_kv.data(), r.cache_protected_len);
    info.node_slot = tree.slot_of(r.last_node);
    return info;
  }
  const std::size_t len = *cache_len;
  if (len > fill_len || len % cache_.page_size() != 0)
    return error{errc::invalid_argument, req_name(h) + ": tracked length " + std::to_string(len) +
                                             " is unaligned or beyond the fill length"};
  // A length inside the protected prefix would move the lock to an ancestor and leave the
  // row pointing at tree ids it no longer protects. Real tracking never produces one (it
  // snapshots at prefix + k·C); an injected or caller-given length can (fuzz_executor).
  if (len < r.cache_protected_len)
    return error{errc::invalid_argument, req_name(h) + ": " + (extra() ? "tracked" : "fill") +
                                             " length " + std::to_string(len) +
                                             " is inside its protected prefix of " +
                                             std::to_string(r.cache_protected_len) + " tokens"};
  slot_id donated = no_slot;
  if (extra()) {
    const std::size_t k = static_cast<std::size_t>(keep_idx(r));
    if (r.pingpong[k] == no_slot)
      return error{errc::invariant_violated, req_name(h) + ": keep track slot is empty"};
    const slot_id fresh = cache_.alloc_slot_evicting();
    if (fresh == no_slot)
      return error{errc::out_of_memory, req_name(h) + ": no SSM slot to replace the donated one"};
    donated = r.pingpong[k];
    r.pingpong[k] = fresh;
  } else {
    donated = cache_.alloc_slot_evicting();
    if (donated == no_slot)
      return error{errc::out_of_memory, req_name(h) + ": no SSM slot for the prefill snapshot"};
  }
  const std::span<const token_id> key(r.tokens.data(), len);
  std::vector<kv_index> dups;  // freed by the session: its forward may still write them
  auto ins = tree.insert(r.ns, key, std::span<const kv_index>(r.row_kv.data(), len), donated,
                         r.cache_protected_len, &dups, locked_prefix(r));
  if (!ins) {
    free_slot(donated);
    return ins.err();
  }
  free_kv(dups);
  mark_written(*ins, std::span<const kv_index>(r.row_kv.data(), len), r.cache_protected_len);
  if (ins->mamba_exist) {
    free_slot(donated);
  } else if (!extra()) {
    pending_snapshots_.push_back({r.working, donated});  // copy once the forward is done
  }
  // SGLang re-matches the key; the tree answers from the insert's end node, writing the
  // tree's ids past the protected prefix straight into the row (dedup).
  const inserted_match im = tree.match_inserted(*ins, r.row_kv, r.cache_protected_len);
  const match_result& m = im.match;
  note_writers(m.last_node);  // the row now points at the tree's ids
  publish_row(r, r.cache_protected_len, im.prefix_len);
  if (r.locked) (void)tree.dec_lock(r.last_node);
  (void)tree.inc_lock(m.last_node);
  r.locked = true;
  r.last_node = m.last_node;
  r.cache_protected_len = im.prefix_len;
  r.tracked_len.reset();
  info.inserted = true;
  info.protected_len = r.cache_protected_len;
  info.prefix = std::span<const kv_index>(r.row_kv.data(), r.cache_protected_len);
  info.node_slot = m.last_slot;
  return info;
}

void request_manager::free_mamba_cache(request_record& r, std::optional<int> keep) {
  free_slot(r.working);
  r.working = no_slot;
  r.cow_src = no_slot;
  r.needs_clear = false;
  if (!r.has_pingpong) return;
  for (int i = 0; i < 2; ++i) {
    if (keep && (cfg_.pp_size == 1 || i == *keep)) continue;
    free_slot(r.pingpong[static_cast<std::size_t>(i)]);
  }
  r.pingpong = {no_slot, no_slot};
  r.has_pingpong = false;
  r.next_track_idx = 0;
}

void request_manager::drop_pending_ops(const request_record& r) {
  std::erase_if(pending_snapshots_, [&](const slot_copy& c) { return c.src == r.working; });
}

status request_manager::release(request_record& r, bool is_insert, finish_info* info) {
  radix_tree& tree = cache_.tree();
  drop_pending_ops(r);
  if (r.row == no_row) {
    // Never admitted: only a COW working slot (and nothing else) can be held.
    free_mamba_cache(r, std::nullopt);
    if (r.locked) (void)tree.dec_lock(r.last_node);
    return {};
  }
  const std::size_t p = cache_.page_size();
  const std::size_t n = std::min(r.kv_committed, r.kv_allocated());
  const std::size_t prot = std::min(r.cache_protected_len, n);
  bool exist = true;
  std::optional<std::size_t> cache_len;
  if (is_insert) {
    cache_len = extra() ? r.tracked_len.value_or(0) : n;
    if (*cache_len > n || *cache_len % p != 0) cache_len.reset();  // never insert a misplaced state
  }
  const slot_id slot =
      !cache_len ? no_slot
                 : (extra() ? r.pingpong[static_cast<std::size_t>(keep_idx(r))] : r.working);
  if (cache_len && slot == no_slot && *cache_len > 0) cache_len.reset();
  if (cache_len) {
    const std::size_t len = *cache_len;
    if (len != n) {
      const std::size_t from = std::max(len, prot);
      if (from < n) free_kv(std::span<const kv_index>(r.row_kv.data() + from, n - from));
    }
    if (slot == no_slot) {  // len == 0 with an empty keep slot: nothing to offer
      exist = true;
    } else {
      std::vector<kv_index> dups;
      auto ins = tree.insert(r.ns, std::span<const token_id>(r.tokens.data(), len),
                             std::span<const kv_index>(r.row_kv.data(), len), slot, prot, &dups,
                             locked_prefix(r));
      must(ins.ok(), "a request's prefix inserts into the tree");
      free_kv(dups);
      exist = !ins.ok() || ins->mamba_exist;
      if (ins.ok()) mark_written(*ins, std::span<const kv_index>(r.row_kv.data(), len), prot);
      if (info) {
        info->inserted = ins.ok();
        info->cached_len = len;
        info->mamba_exist = exist;
      }
    }
  } else if (prot < n) {
    free_kv(std::span<const kv_index>(r.row_kv.data() + prot, n - prot));
  }
  std::optional<int> keep;
  if (extra() && !exist) keep = keep_idx(r);
  if (extra() || exist) {
    free_mamba_cache(r, keep);
  } else {
    r.working = no_slot;  // no_buffer: the working slot itself now belongs to the tree
  }
  if (r.locked) (void)tree.dec_lock(r.last_node);
  r.locked = false;
  // Over-allocated KV (beyond the committed length, rounded up to a page).
  const std::size_t over_from = (n + p - 1) / p * p;
  if (r.kv_allocated() > over_from)
    free_kv(std::span<const kv_index>(r.row_kv.data() + over_from, r.kv_allocated() - over_from));
  (void)rows_.free(r.row);
  r.row = no_row;
  return {};
}

result<finish_info> request_manager::finish(request_handle h) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  // The tokens must cover what is inserted: the committed length (no_buffer), or the
  // tracked length (extra_buffer). With overlap scheduling an extra_buffer request that
  // finished in batch k was already scheduled in batch k+1, so its committed length is one
  // past its tokens; SGLang slices tokens[:n] and inserts at the tracked length.
  const std::size_t tracked = r.tracked_len.value_or(0);
  const std::size_t needed = !extra() ? r.kv_committed : tracked <= r.kv_committed ? tracked : 0;
  if (needed > r.tokens.size())
    return error{errc::invalid_argument, req_name(h) + ": " + (extra() ? "tracked" : "committed") +
                                             " length " + std::to_string(needed) + " exceeds its " +
                                             std::to_string(r.tokens.size()) + " tokens"};
  finish_info info;
  // Lazy + overlap: a step scheduled after the last one (its results dropped) may be
  // writing a boundary snapshot into the only track slot.
  const bool is_insert = !lazy() || (r.lazy_is_insert && !pending_step(r, /*overwrite=*/true));
  if (status s = release(r, is_insert, &info); !s) return s.err();
  drop(h);
  return info;
}

status request_manager::abort(request_handle h) {
  auto rr = get(h);
  if (!rr) return rr.err();
  if (status s = release(**rr, /*is_insert=*/false, nullptr); !s) return s;
  drop(h);
  return {};
}

status request_manager::not_admitted(request_handle h) {
  auto rr = get(h);
  if (!rr) return rr.err();
  request_record& r = **rr;
  if (r.row != no_row)
    return {errc::invalid_argument, req_name(h) + " was admitted; use finish or abort"};
  return abort(h);
}

std::vector<slot_copy> request_manager::take_pending_snapshots() {
  std::vector<slot_copy> out;
  out.swap(pending_snapshots_);
  return out;
}

bool request_manager::snapshot_pending_into(slot_id slot) const {
  return std::any_of(pending_snapshots_.begin(), pending_snapshots_.end(),
                     [slot](const slot_copy& c) { return c.dst == slot; });
}

forward_ops request_manager::take_forward_ops(std::span<const request_handle> extend_batch) {
  forward_ops ops;
  if (cfg_.snapshots_in_forward_ops) ops.snapshots.swap(pending_snapshots_);
  for (request_handle h : extend_batch) {
    auto it = reqs_.find(h);
    if (it == reqs_.end()) continue;
    request_record& r = it->second;
    if (r.working == no_slot) continue;
    if (r.cow_src != no_slot) {
      ops.cows.push_back({r.cow_src, r.working});
      r.cow_src = no_slot;
      r.needs_clear = false;
    } else if (r.needs_clear) {
      ops.clears.push_back(r.working);
      r.needs_clear = false;
    }
  }
  return ops;
}

std::size_t request_manager::held_slots() const {
  std::size_t n = 0;
  for (const auto& [h, r] : reqs_) {
    n += r.working != no_slot ? 1 : 0;
    if (r.has_pingpong)
      for (slot_id s : r.pingpong)
        n += s != no_slot ? 1 : 0;
  }
  return n + quarantine_slots_.size();
}

std::size_t request_manager::held_kv_tokens() const {
  const std::size_t p = cache_.page_size();
  std::size_t n = 0;
  std::unordered_set<kv_index> pages;
  for (const auto& [h, r] : reqs_) {
    const std::size_t from = std::min(r.cache_protected_len, r.kv_allocated());
    if (p == 1) {
      n += r.kv_allocated() - from;
      continue;
    }
    pages.clear();
    for (std::size_t i = from; i < r.kv_allocated(); ++i)
      pages.insert(r.row_kv[i] / static_cast<kv_index>(p));
    n += pages.size() * p;
  }
  return n + quarantined_kv_tokens();
}

status request_manager::check_pool_invariants() const {
  const radix_tree& tree = cache_.tree();
  const tree_sizes& s = tree.sizes();
  const std::size_t kv_sum =
      cache_.kv().available() + s.full_evictable + s.full_protected + held_kv_tokens();
  if (kv_sum != cache_.kv().capacity())
    return {errc::invariant_violated,
            "KV leak: available " + std::to_string(cache_.kv().available()) + " + evictable " +
                std::to_string(s.full_evictable) + " + protected " +
                std::to_string(s.full_protected) + " + held " + std::to_string(held_kv_tokens()) +
                " != capacity " + std::to_string(cache_.kv().capacity())};
  const std::size_t slot_sum =
      cache_.slots().available() + s.mamba_evictable + s.mamba_protected + held_slots();
  if (slot_sum != cache_.slots().capacity())
    return {errc::invariant_violated,
            "slot leak: available " + std::to_string(cache_.slots().available()) + " + evictable " +
                std::to_string(s.mamba_evictable) + " + protected " +
                std::to_string(s.mamba_protected) + " + held " + std::to_string(held_slots()) +
                " != capacity " + std::to_string(cache_.slots().capacity())};
  if (reqs_.empty() && rows_.available() != rows_.capacity())
    return {errc::invariant_violated, "request row leak"};
  return {};
}

std::vector<request_handle> request_manager::live_handles() const {
  std::vector<request_handle> out;
  out.reserve(reqs_.size());
  for (const auto& [h, r] : reqs_)
    out.push_back(h);
  return out;
}

}  // namespace hc
