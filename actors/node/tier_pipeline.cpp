#include "actors/node/tier_pipeline.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "actors/node/json_text.hpp"

#include "storage/l3_keys.hpp"

namespace hc {
namespace {}  // namespace

tier_pipeline::tier_pipeline(msg::cache_actor::pointer self, radix_cache& cache,
                             msg::stream_actor stream, tier_wiring wiring, metrics_sink* metrics)
    : self_(self),
      cache_(cache),
      stream_(std::move(stream)),
      w_(std::move(wiring)),
      metrics_(metrics) {
  if (cache_.has_host_tier())
    planner_ = std::make_unique<prefetch_planner>(w_.prefetch, cache_.tree(), cache_.host_kv(),
                                                  cache_.host_slots(), cache_.kv().capacity());
}

void tier_pipeline::name_namespace(namespace_id id, const std::string& name) {
  if (ns_names_.size() <= id) ns_names_.resize(id + 1);
  ns_names_[id] = name;
}

const std::string& tier_pipeline::ns_name(namespace_id id) const {
  static const std::string none;
  return id < ns_names_.size() ? ns_names_[id] : none;
}

void tier_pipeline::when_idle(caf::typed_response_promise<bool> done) {
  if (in_flight_ == 0) {
    done.deliver(true);
    return;
  }
  drains_.push_back(std::move(done));
}

void tier_pipeline::answered() {
  if (after_answer_) after_answer_();
  if (--in_flight_ != 0) return;
  for (caf::typed_response_promise<bool>& d : std::exchange(drains_, {}))
    d.deliver(true);
}

void tier_pipeline::send_copies(msg::tier_kind kind, session_id s, std::vector<tier_copy> copies) {
  if (copies.empty()) return;
  sent();
  self_->request(stream_, caf::infinite, msg::tier_atom::value, kind, s, std::move(copies))
      .then(
          [this, kind](msg::tier_copies& done) {
            radix_tree& t = cache_.tree();
            for (const tier_copy& c : done) {
              switch (kind) {
                case msg::tier_kind::load:
                  (void)cache_.load_done(c);
                  break;
                case msg::tier_kind::demotion:
                  store_to_l3(c.node);  // protects it again before the hold ends
                  (void)t.demotion_done(c);
                  break;
                case msg::tier_kind::backup:
                  (void)t.backup_done(c.node);
                  if (c.host_slot != no_slot) (void)t.release_host_mamba(c.node);
                  store_to_l3(c.node);
                  break;
              }
            }
            answered();
          },
          // The peer is gone (shutdown): nothing left to release.
          [this](caf::error&) { answered(); });
}

void tier_pipeline::pump(session_id s, const std::function<bool(slot_id)>& pending_snapshot) {
  if (!enabled()) return;
  radix_tree& t = cache_.tree();
  // Demotions first: they read device ids this step freed, which a load of this step may
  // have been given (forward_stream runs both at once when nothing is in flight).
  std::vector<tier_copy> demoted = t.drain_copies();
  n_.demotions += demoted.size();
  send_copies(msg::tier_kind::demotion, s, std::move(demoted));
  std::vector<tier_copy> loads = cache_.drain_loads();
  n_.loads += loads.size();
  send_copies(msg::tier_kind::load, s, std::move(loads));

  std::vector<node_ref> candidates = std::exchange(deferred_, {});
  for (node_ref n : t.take_backup_candidates())
    candidates.push_back(n);
  std::vector<tier_copy> backups;
  for (node_ref n : candidates) {
    if (!t.valid(n) || n.node->backed_up() || n.node->evicted()) continue;
    if (n.node->mamba != no_slot && pending_snapshot(n.node->mamba)) {
      deferred_.push_back(n);  // its state is not in its slot yet
      continue;
    }
    auto c = t.write_backup(n);
    if (!c) {
      // A parent deferred above: its backup comes first (a demotion queues both).
      if (std::any_of(deferred_.begin(), deferred_.end(),
                      [&](node_ref d) { return d.node == n.node->parent; })) {
        deferred_.push_back(n);
        continue;
      }
      ++n_.backups_refused;  // host full of protected data, or a parent without backup
      continue;
    }
    // The backup lock holds the KV path and the device slot the copy reads (until
    // backup_done); the new host slot must not be evicted before the copy writes it.
    if (c->host_slot != no_slot) (void)t.protect_host_mamba(n);
    backups.push_back(std::move(*c));
  }
  n_.backups_sent += backups.size();
  send_copies(msg::tier_kind::backup, s, std::move(backups));
}

void tier_pipeline::store_to_l3(node_ref n) {
  radix_tree& t = cache_.tree();
  if (!w_.storage || !w_.host || !t.valid(n) || !n.node->backed_up()) return;
  const std::size_t p = cache_.page_size();
  std::span<const page_digest> hashes = t.node_hashes(n);
  if (hashes.empty() || hashes.size() * p != n.node->host_value.size()) return;
  auto job = std::make_shared<l3_write_job>();
  job->host = w_.host;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    job->keys.push_back(l3::page_key(w_.fingerprint, ns_name(n.node->ns), hashes[i]));
    job->page_starts.push_back(n.node->host_value[i * p]);
  }
  (void)t.protect_host(n);
  if (n.node->mamba_host != no_slot) {
    job->state_slot = n.node->mamba_host;
    (void)t.protect_host_mamba(n);
  }
  ++n_.l3_writes;
  sent();
  self_->request(w_.storage, caf::infinite, msg::store_atom::value, job)
      .then(
          [this, n](l3_write_ptr& j) {  // the node stays with the sender
            if (j->report.failed) ++n_.l3_write_failures;
            if (j->skipped) ++n_.l3_writes_skipped;
            radix_tree& tr = cache_.tree();
            if (j->state_slot != no_slot) (void)tr.release_host_mamba(n);
            (void)tr.release_host(n);
            answered();
          },
          [this](caf::error&) { answered(); });
}

bool tier_pipeline::on_command(session_id s, const request_manager& m, const command& cmd,
                               command_result& out) {
  const auto* c = std::get_if<cmd::prefetch>(&cmd);
  if (c == nullptr) return false;
  if (!planner_ || !w_.storage) {
    out.code = errc::invalid_argument;
    out.error =
        "prefetch: this instance has no storage tier (open it with hicacheRatio > 1 and "
        "hicacheStorage, on a node with an L3 store)";
    return true;
  }
  const record_key key{s, c->req};
  auto it = prefetches_.find(key);
  if (it == prefetches_.end()) {
    const request_record* r = m.find(c->req);
    if (r == nullptr) {
      out.code = errc::not_found;
      out.error = "prefetch: request " + std::to_string(c->req) + " is unknown";
      return true;
    }
    it = prefetches_.emplace(key, prefetch_record{}).first;
    start_prefetch(s, *r, it->second);
  }
  prefetch_record& rec = it->second;
  res::prefetch body;
  if (rec.running) {
    const double waited = seconds_between(rec.started, w_.time->now());
    switch (w_.prefetch.termination) {
      case prefetch_termination::best_effort:
        body.ready = true;
        break;
      case prefetch_termination::wait_complete:
        body.ready = false;
        break;
      case prefetch_termination::timeout:
        body.ready = waited >= rec.timeout_s;
        break;
    }
    if (c->admit_now) rec.admitted_early = true;  // what arrives later still lands in the tree
  } else {
    body.ready = true;
    body.outcome = rec.outcome;
    body.storage_hit_tokens = rec.storage_hit_tokens;
    if (c->admit_now) prefetches_.erase(it);
  }
  out.body = std::move(body);
  return true;
}

void tier_pipeline::start_prefetch(session_id s, const request_record& r, prefetch_record& rec) {
  radix_tree& t = cache_.tree();
  const std::size_t p = cache_.page_size();
  rec.ns = r.ns;
  rec.started = w_.time->now();
  const std::size_t len = r.input_len > 0 ? r.input_len - 1 : 0;
  const std::span<const token_id> key(r.tokens.data(), std::min(len, r.tokens.size()));
  const match_result mr = t.match(r.ns, key);
  const std::size_t depth = t.prefix_length(mr.last_host_node);
  auto begun = planner_->begin(mr.last_host_node, key.subspan(std::min(depth, key.size())));
  if (auto* o = std::get_if<prefetch_outcome>(&begun)) {
    rec.running = false;
    rec.outcome = std::string(to_string(*o));
    metrics_->prefetch(rec.outcome, 0, 0, 0);
    return;
  }
  rec.ticket = std::get<prefetch_ticket>(std::move(begun));
  const prefetch_ticket& tk = rec.ticket;
  rec.timeout_s = prefetch_timeout_s(w_.prefetch, tk.tokens.size());
  auto job = std::make_shared<l3_read_job>();
  job->host = w_.host;
  std::optional<page_digest> prior;
  if (std::span<const page_digest> h = t.node_hashes(tk.anchor); !h.empty()) prior = h.back();
  const page_hasher& hasher = *t.hasher();
  for (std::size_t i = 0; i + p <= tk.tokens.size(); i += p) {
    prior = hasher.hash_page(prior ? &*prior : nullptr,
                             std::span<const token_id>(tk.tokens).subspan(i, p));
    job->keys.push_back(l3::page_key(w_.fingerprint, ns_name(r.ns), *prior));
    job->page_starts.push_back(tk.host_kv[i]);
  }
  job->state_slot = tk.host_slot;
  const double budget = w_.prefetch.termination == prefetch_termination::timeout
                            ? rec.timeout_s
                            : w_.prefetch.timeout_max_s;
  job->deadline = rec.started + from_seconds(budget);
  const record_key key_of{s, r.handle};
  sent();
  self_->request(w_.storage, caf::infinite, msg::prefetch_atom::value, job)
      .then(
          [this, key_of](l3_read_ptr& j) {
            prefetch_done(key_of, j->usable_pages, j->report.pages_read, j->report.state_read,
                          j->report.timed_out, j->seconds);
            answered();
          },
          [this, key_of](caf::error&) {
            prefetch_done(key_of, 0, 0, false, false, 0);
            answered();
          });
}

void tier_pipeline::prefetch_done(record_key key, std::size_t usable_pages, std::size_t pages_read,
                                  bool state_read, bool timed_out, double seconds) {
  auto it = prefetches_.find(key);
  if (it == prefetches_.end()) return;
  prefetch_record& rec = it->second;
  const std::size_t p = cache_.page_size();
  std::uint64_t resumable = 0;
  if (rec.abandoned) {
    planner_->abort(rec.ticket);
    rec.outcome = std::string(to_string(prefetch_outcome::aborted));
  } else if (auto o = planner_->on_exists(rec.ticket, usable_pages * p)) {
    rec.outcome = std::string(to_string(*o));
  } else {
    auto fin = planner_->finish(rec.ticket, rec.ns, pages_read * p, state_read,
                                timed_out || rec.admitted_early);
    rec.outcome = std::string(to_string(fin.outcome));
    rec.storage_hit_tokens = fin.storage_hit_tokens;
    if (state_read) resumable = fin.storage_hit_tokens;
  }
  rec.running = false;
  metrics_->prefetch(rec.outcome, rec.storage_hit_tokens, resumable, seconds);
  if (rec.abandoned) prefetches_.erase(it);
}

void tier_pipeline::sweep(session_id s, const request_manager* m) {
  for (auto it = prefetches_.lower_bound({s, 0});
       it != prefetches_.end() && it->first.first == s;) {
    if (m != nullptr && m->find(it->first.second) != nullptr) {
      ++it;
      continue;
    }
    if (it->second.running) {
      it->second.abandoned = true;  // released when its I/O answers
      ++it;
    } else {
      it = prefetches_.erase(it);
    }
  }
}

std::string tier_pipeline::inspect() const {
  if (!enabled()) return "null";
  const radix_cache& c = cache_;
  const tree_counters& tc = c.tree().counters();
  const host_sizes& hs = c.tree().host_usage();
  nlohmann::json outcomes = nlohmann::json::object();
  for (std::size_t i = 0; i < prefetch_outcome_count; ++i)
    outcomes[std::string(to_string(static_cast<prefetch_outcome>(i)))] = planner_->outcomes()[i];
  return json_text(nlohmann::json{{"kv_capacity", c.host_kv().capacity()},
                                  {"kv_available", c.host_kv().available()},
                                  {"slot_capacity", c.host_slots().capacity()},
                                  {"slot_available", c.host_slots().available()},
                                  {"tree_tokens", hs.tokens},
                                  {"tree_slots", hs.slots},
                                  {"evicted_nodes", hs.evicted_nodes},
                                  {"backed_up_tokens", tc.backed_up_tokens},
                                  {"demoted_tokens", tc.demoted_tokens},
                                  {"loaded_back_tokens", tc.loaded_back_tokens},
                                  {"host_evicted_tokens", tc.host_evicted_tokens},
                                  {"host_evicted_slots", tc.host_evicted_slots},
                                  {"backups_sent", n_.backups_sent},
                                  {"backups_refused", n_.backups_refused},
                                  {"l3_writes", n_.l3_writes},
                                  {"l3_write_failures", n_.l3_write_failures},
                                  {"l3_writes_skipped", n_.l3_writes_skipped},
                                  {"prefetches_in_flight", prefetches_.size()},
                                  {"prefetch_occupied_tokens", planner_->occupied_tokens()},
                                  {"prefetch", std::move(outcomes)},
                                  {"l3", w_.storage ? true : false}});
}

}  // namespace hc
