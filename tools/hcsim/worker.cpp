// One hcsim worker: a session on the node, a scheduler loop over up to `batch` requests,
// and the toy model's forwards written into the mapped L1 pools (see sim.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

#include "actors/host_storage/host_pools.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "schema/client.hpp"
#include "tools/hcsim/forward_device.hpp"
#include "tools/hcsim/sim.hpp"
#include "tools/hcsim/toy_model.hpp"

namespace hc::sim {
namespace {

using clk = std::chrono::steady_clock;

toy_model_config model_config(const sim_config& c) {
  toy_model_config m;
  m.chunk = std::max(c.chunk, c.page_size);
  m.convention = c.mamba2 ? chunk_convention::mamba2 : chunk_convention::fla;
  return m;
}

instance_spec spec_of(const sim_config& c, const toy_model_config& m) {
  instance_spec s;
  s.model_id = c.model;
  s.page_size = c.page_size;
  s.kv_tokens = c.kv_tokens;
  s.kv_bytes_per_token = m.token_bytes();
  s.ssm_slots = c.slots;
  s.ssm_slot_bytes = m.slot_bytes();
  s.chunk_size = m.chunk;
  s.strat = c.strat;
  s.device = c.device;
  s.device_ordinal = c.device_ordinal;
  s.track_interval = c.track_interval;
  s.overlap = c.overlap;
  s.request_rows = c.batch + 2;
  s.hicache_ratio = c.host_ratio;
  s.hicache_ssm_bytes = std::uint64_t{c.host_ssm_slots} * s.ssm_slot_bytes;
  s.prefetch_threshold = 2 * m.chunk;
  s.prefetch_policy = prefetch_termination::wait_complete;
  return s;
}

}  // namespace

status check_instance(const sim_config& cfg) {
  const toy_model_config m = model_config(cfg);
  const instance_spec spec = spec_of(cfg, m);
  if (status ok = validate(spec); !ok) return ok;
  if (spec.host_tier())  // the host pools' sizes, as the node checks them at open
    if (auto sizes = size_host_pools(host_pool_request_of(spec)); !sizes) return sizes.err();
  // What the node cannot check, as the instance carries C alone: the model's own chunk and
  // kernel family, which SGLang's Mamba2 backend checks against the strategy — the same
  // rules as the node's sizing (track interval >= the model's chunk, K - 1 < it).
  strategy_options o = strategy_options_of(spec);
  o.model_chunk = cfg.chunk;
  o.backend = m.convention;
  o.conv_kernel = m.conv_kernel;
  if (auto v = validate_strategy(o); !v) return v.err();
  return status::success();
}

namespace {

struct request {
  request_handle h = 0;
  unsigned conv = 0;
  std::vector<token_id> tokens;  ///< the prompt
  std::vector<token_id> outputs;
  std::size_t input_len = 0, prefix = 0, pos = 0, len = 0;
  std::vector<kv_index> prefix_kv;  ///< matched prefix, checked at the first forward
  slot_id working = no_slot;
  std::size_t decode_total = 0;
  bool first_forward = true;
  bool decoding = false;
  bool gone = false;              ///< finished or aborted: removed at the end of the batch
  bool retracted = false;         ///< gone, but re-queued: its conversation stays busy
  std::size_t decode_preset = 0;  ///< re-admitted after a retraction: decode steps left
  std::size_t decoded = 0;        ///< decode steps scheduled
  std::size_t loaded = 0;
  slot_id node_slot = no_slot;
};

class worker {
 public:
  worker(const sim_config& cfg, unsigned index)
      : cfg_(cfg),
        index_(index),
        model_(model_config(cfg)),
        rng_(cfg.seed * 1000003ull + index),
        overlap_(cfg.overlap_scheduling && cfg.overlap && cfg.strat != strategy::no_buffer) {}

  sim_report run() {
    const auto t0 = clk::now();
    if (connect()) loop();
    if (session_) {
      drain();
      (void)session_->close();
    }
    rep_.seconds = std::chrono::duration<double>(clk::now() - t0).count();
    rep_.mismatches = rep_.kv_mismatches + rep_.state_mismatches;
    return rep_;
  }

 private:
  // ---- plumbing -----------------------------------------------------------------------
  void error(const std::string& what) {
    ++rep_.errors;
    if (rep_.first_error.empty())
      rep_.first_error = "worker " + std::to_string(index_) + ": " + what;
  }
  bool connect() {
    auto c = client::connect("unix:" + cfg_.socket);
    if (!c) {
      error("connect: " + c.err().message);
      return false;
    }
    client_ = std::move(*c);
    auto s = client_->open(spec_of(cfg_, model_.config()));
    if (!s) {
      error("open: " + s.err().message);
      return false;
    }
    session_ = std::move(*s);
    auto d = forward_device::open(session_->pools(), model_);
    if (!d) {
      error(d.err().message);
      session_.reset();
      return false;
    }
    device_ = std::move(*d);
    return true;
  }
  /// One step; nullopt on a transport / step-level error (counted).
  std::optional<std::vector<command_result>> step(const std::vector<command>& cmds) {
    rep_.ops += cmds.size();
    ++rep_.steps;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = session_->step(cmds);
    rep_.step_latency.add_ns(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count()));
    if (!r) {
      error("step: " + r.err().message);
      return std::nullopt;
    }
    return std::move(*r);
  }
  bool fence(std::uint64_t b, bool begin) {
    ++rep_.forwards;
    if (begin) {
      auto r = session_->begin_forward(b);
      if (!r) error("begin_forward: " + r.err().message);
      if (!r) return false;
      status w = device_->after_begin();  // the batch's clears and copies first
      if (!w) error("waiting for the node's ops: " + w.err().message);
      return w.ok();
    }
    if (status w = device_->before_end(); !w) {
      error("marking the forward's end: " + w.err().message);
      return false;
    }
    status s = session_->end_forward(b);
    if (!s) error("end_forward: " + s.err().message);
    return s.ok();
  }
  std::size_t around(std::size_t mean) { return mean == 0 ? 0 : 1 + rng_() % (2 * mean); }
  token_id token() { return static_cast<token_id>(1 + rng_() % 60000); }

  // ---- workload -----------------------------------------------------------------------
  void ensure_conversations() {
    if (!history_.empty()) return;
    std::mt19937_64 shared(cfg_.seed);  // system prompts are the same in every worker
    std::vector<std::vector<token_id>> sys(std::max(1u, cfg_.system_prompts));
    for (auto& s : sys)
      for (unsigned i = 0; i < cfg_.system_prompt_len; ++i)
        s.push_back(static_cast<token_id>(1 + shared() % 60000));
    system_ = sys;
    history_.resize(std::max(1u, cfg_.conversations));
    busy_.assign(history_.size(), false);
    waits_until_.assign(history_.size(), 0);
    for (std::size_t c = 0; c < history_.size(); ++c)
      history_[c] = system_[c % system_.size()];
  }

  /// Admits one request — a retracted one first (SGLang puts them at the front of the
  /// waiting queue), else a new turn of a free conversation: create, (prefetch,) match,
  /// lock, alloc_req. False if nothing was admitted now (no free conversation, out of
  /// memory).
  bool admit() {
    ensure_conversations();
    request r;
    if (!retracted_.empty()) {
      r = std::move(retracted_.front());
      retracted_.pop_front();
    } else {
      unsigned c = static_cast<unsigned>(rng_() % history_.size());
      const auto taken = [&](unsigned k) { return busy_[k] || waits_until_[k] > iterations_; };
      for (unsigned tries = 0; taken(c) && tries < history_.size(); ++tries)
        c = (c + 1) % static_cast<unsigned>(history_.size());
      if (taken(c)) return false;
      if (history_[c].size() > cfg_.max_context) history_[c] = system_[c % system_.size()];
      r.conv = c;
      r.tokens = history_[c];
      for (std::size_t i = around(cfg_.turn_len); i > 0; --i)
        r.tokens.push_back(token());
    }
    const unsigned c = r.conv;
    r.h = ++next_handle_;
    r.input_len = r.tokens.size();
    const cmd::create create{r.h, 0, r.tokens, {}};
    if (cfg_.prefetch) {
      auto p = step({create, cmd::prefetch{r.h, false}});
      if (!p) return false;
      if (!(*p)[0].ok()) {  // the cause, not the prefetch it skipped
        error("create: " + (*p)[0].error);
      } else if (!(*p)[1].ok()) {
        error("prefetch: " + (*p)[1].error);
      } else {
        command_result last = (*p)[1];
        while (last.ok() && !last.as<res::prefetch>().ready) {
          auto q = step({cmd::prefetch{r.h, false}});
          if (!q) return false;
          last = (*q)[0];
        }
        if (last.ok()) rep_.l3_hit_tokens += last.as<res::prefetch>().storage_hit_tokens;
        (void)step({cmd::prefetch{r.h, /*admit_now=*/true}});
      }
    }
    std::vector<command> cmds;
    if (!cfg_.prefetch) cmds.emplace_back(create);
    const std::size_t first = cmds.size();
    cmds.emplace_back(cmd::match{r.h});
    cmds.emplace_back(cmd::lock{r.h});
    cmds.emplace_back(cmd::alloc_req{r.h});
    auto res = step(cmds);
    if (!res) return false;
    ++rep_.requests;
    rep_.prompt_tokens += r.input_len;
    if (const command_result& m = (*res)[first]; m.ok()) {  // the node counts it, whatever follows
      rep_.queried_tokens += r.input_len - 1;
      rep_.matched_kv_tokens += m.as<res::match>().kv_matched;
    }
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      const command_result& x = (*res)[i];
      if (x.ok()) continue;
      if (x.code == errc::out_of_memory) {
        ++rep_.rejected;  // not admitted now: released, the conversation retries later
      } else {
        error(std::string(to_string(kind_of(cmds[i]))) + ": " + x.error);
      }
      (void)step({cmd::abort{r.h}});
      if (r.decode_preset) retracted_.push_front(std::move(r));  // stays first in line
      return false;  // admission stops for this round (SGLang stops at the first misfit)
    }
    const auto& m = (*res)[first].as<res::match>();
    r.prefix = m.prefix_len;
    r.prefix_kv = m.indices;
    r.pos = r.prefix;
    r.len = r.prefix;
    r.working = (*res)[first + 2].as<res::alloc_req>().working;
    r.loaded = m.loaded_tokens;
    r.node_slot = m.node_slot;
    rep_.reused_tokens += r.prefix;
    rep_.l2_hit_tokens += m.loaded_tokens;
    rep_.l1_hit_tokens += r.prefix - m.loaded_tokens;
    busy_[c] = true;
    active_.push_back(std::move(r));
    return true;
  }

  /// Removes the requests marked gone (their conversations are free again, unless the
  /// request was retracted and waits to be re-admitted).
  void sweep() {
    for (const request& r : active_)
      if (r.gone && !r.retracted) busy_[r.conv] = false;
    std::erase_if(active_, [](const request& r) { return r.gone; });
  }

  /// SGLang's retract_decode for decoding requests out of KV: released without insert
  /// (their decode KV is dropped) and re-queued with prompt + the outputs they consumed,
  /// to be prefilled again — through whatever prefix the tree still holds — and decode
  /// the steps they had left. One whose steps were all scheduled is aborted instead.
  void retract_all(const std::vector<std::size_t>& idx) {
    std::vector<std::size_t> aborts;
    std::vector<command> cmds;
    for (std::size_t i : idx) {
      request& r = active_[i];
      if (r.gone) continue;
      if (r.decoded >= r.decode_total) {
        aborts.push_back(i);
        continue;
      }
      request again;
      again.conv = r.conv;
      again.tokens = r.tokens;
      again.tokens.insert(again.tokens.end(), r.outputs.begin(),
                          r.outputs.begin() + static_cast<std::ptrdiff_t>(r.decoded));
      again.decode_preset = r.decode_total - r.decoded;
      retracted_.push_back(std::move(again));
      cmds.emplace_back(cmd::abort{r.h});  // release_kv_cache(is_insert=False)
      r.gone = r.retracted = true;
      ++rep_.retracted;
    }
    if (!cmds.empty()) {
      auto res = step(cmds);
      if (res)
        for (std::size_t k = 0; k < cmds.size(); ++k)
          if (!(*res)[k].ok()) error("retract: " + (*res)[k].error);
    }
    abort_all(aborts);
    sweep();
  }
  /// Aborts requests on the node and removes them (indices into active_ are stale after).
  void abort_all(const std::vector<std::size_t>& idx) {
    std::vector<command> cmds;
    for (std::size_t i : idx) {
      if (i >= active_.size() || active_[i].gone) continue;
      cmds.emplace_back(cmd::abort{active_[i].h});
      active_[i].gone = true;
      ++rep_.aborted;
    }
    if (cmds.empty()) return;
    auto r = step(cmds);
    if (r)
      for (std::size_t k = 0; k < cmds.size(); ++k)
        if (!(*r)[k].ok()) error("abort: " + (*r)[k].error);
    sweep();
  }

  /// Aborts a random active request with probability abort_rate.
  void maybe_abort() {
    if (active_.empty() || std::uniform_real_distribution<double>(0, 1)(rng_) >= cfg_.abort_rate)
      return;
    std::vector<std::size_t> live;
    for (std::size_t i = 0; i < active_.size(); ++i)
      if (!active_[i].gone) live.push_back(i);
    if (live.empty()) return;
    abort_all({live[rng_() % live.size()]});
  }

  /// The first forward of a request reads its restored prefix: every KV token and the
  /// working slot (cleared, or the copy-on-write of the matched state) must equal the
  /// recomputation.
  void verify_prefix(request& r) {
    if (!r.first_forward) return;
    r.first_forward = false;
    for (std::size_t i = 0; i < r.prefix_kv.size(); ++i) {
      const std::vector<std::byte> want = model_.kv(i, r.tokens[i]);
      auto got = device_->kv_row(r.prefix_kv[i]);
      if (!std::equal(got.begin(), got.end(), want.begin())) {
        ++rep_.kv_mismatches;
        note_mismatch("KV of token " + std::to_string(i) + " of a " + std::to_string(r.prefix) +
                      "-token hit");
        break;  // one per request
      }
    }
    const std::vector<std::byte> want =
        model_.state_after(std::span<const token_id>(r.tokens).first(r.prefix));
    auto got = device_->slot(r.working);
    if (!std::equal(got.begin(), got.end(), want.begin())) {
      ++rep_.state_mismatches;
      note_mismatch("state of a " + std::to_string(r.prefix) + "-token hit (" +
                    std::to_string(r.loaded) + " loaded from the host, node slot " +
                    std::to_string(r.node_slot) + ", working slot " + std::to_string(r.working) +
                    "; " + which_prefix(r, got) + ")");
    }
    r.prefix_kv.clear();
  }
  /// For a mismatch report: the prefix of the request's tokens whose state the slot holds.
  std::string which_prefix(const request& r, std::span<const std::byte> got) {
    if (rep_.state_mismatches > 1) return "";  // only the first one is reported
    for (std::size_t n = 0; n <= r.tokens.size(); ++n) {
      const std::vector<std::byte> s =
          model_.state_after(std::span<const token_id>(r.tokens).first(n));
      if (std::equal(got.begin(), got.end(), s.begin()))
        return "it holds the state after " + std::to_string(n) + " tokens";
    }
    return "it holds no prefix of the prompt";
  }
  void note_mismatch(const std::string& what) {
    if (rep_.first_error.empty())
      rep_.first_error = "worker " + std::to_string(index_) + ": mismatch: " + what;
  }

  /// A forward: what the scheduler put in it, and the thread writing its bytes.
  struct forward_run {
    std::uint64_t batch = 0;
    bool extend = false;
    std::vector<request_handle> reqs;
    std::vector<std::size_t> ends;          ///< extend: each request's position after it
    std::vector<std::size_t> step_no;       ///< decode: each request's step (1-based)
    std::vector<std::vector<token_id>> in;  ///< the tokens it consumes (owned: requests
                                            ///< may finish while it runs)
    std::vector<extend_job> extends;
    std::vector<decode_job> decodes;
    std::thread thread;
    status outcome;  ///< of the forward's run (written by its thread)
  };

  request* find(request_handle h) {
    for (request& r : active_)
      if (r.h == h && !r.gone) return &r;
    return nullptr;
  }
  std::size_t index_of(request_handle h) const {
    for (std::size_t i = 0; i < active_.size(); ++i)
      if (active_[i].h == h) return i;
    return active_.size();
  }

  /// SGLang caches a chunked request's prefix when it schedules its next chunk (the
  /// previous chunk's forward may still run: only ids move).
  void cache_chunked(const forward_run* prev) {
    if (!prev || !prev->extend) return;
    std::vector<command> cmds;
    for (std::size_t k = 0; k < prev->reqs.size(); ++k) {
      request* r = find(prev->reqs[k]);
      if (r && prev->ends[k] < r->input_len)
        cmds.emplace_back(cmd::cache_unfinished{r->h, prev->ends[k]});
    }
    if (cmds.empty()) return;
    auto u = step(cmds);
    std::vector<std::size_t> failed;
    for (std::size_t k = 0; u && k < cmds.size(); ++k) {
      if ((*u)[k].ok()) continue;
      // Out of slots for the donation (workers share the pools; each one's admission sees
      // only its own requests): the request stops, like one that ran out of KV.
      if ((*u)[k].code != errc::out_of_memory) error("cache_unfinished: " + (*u)[k].error);
      failed.push_back(index_of(std::get<cmd::cache_unfinished>(cmds[k]).req));
    }
    abort_all(failed);
  }

  /// Schedules the next forward: one chunk of every request still in prefill, or else one
  /// decode step of every decoding request (one whose last decode is still in flight is
  /// scheduled again: the scheduler learns it finished only from that forward's results).
  std::unique_ptr<forward_run> schedule() {
    auto fp = std::make_unique<forward_run>();
    forward_run& f = *fp;
    f.batch = batch_ + 1;
    auto prefilling = [](const request& r) {
      return !r.gone && !r.decoding && r.pos < r.input_len;
    };
    f.extend = std::any_of(active_.begin(), active_.end(), prefilling);
    std::vector<command> cmds;
    std::vector<std::size_t> who;
    for (std::size_t i = 0; i < active_.size(); ++i) {
      request& r = active_[i];
      // (A request whose last chunk ran but whose results are not processed yet waits.)
      if (f.extend ? !prefilling(r) : (r.gone || !r.decoding)) continue;
      who.push_back(i);
      if (f.extend) {
        const std::size_t n = std::min<std::size_t>(cfg_.chunked_prefill, r.input_len - r.pos);
        cmds.emplace_back(cmd::alloc_kv{r.h, r.pos, n});
        cmds.emplace_back(cmd::prepare_extend{r.h, r.pos, n});
      } else {
        cmds.emplace_back(cmd::alloc_kv{r.h, r.len, 1});
        cmds.emplace_back(cmd::prepare_decode{r.h});
      }
    }
    if (who.empty()) return nullptr;
    cmd::take_ops ops;  // pending snapshot copies run before any forward
    ops.batch = f.batch;
    if (f.extend)
      for (std::size_t i : who)
        ops.reqs.push_back(active_[i].h);
    cmds.emplace_back(std::move(ops));
    auto res = step(cmds);
    if (!res) return nullptr;
    batch_ = f.batch;
    std::vector<std::size_t> failed;
    for (std::size_t k = 0; k < who.size(); ++k) {
      const command_result& a = (*res)[2 * k];
      const command_result& p = (*res)[2 * k + 1];
      request& r = active_[who[k]];
      if (!a.ok() || !p.ok()) {
        if (a.code != errc::out_of_memory && p.code != errc::out_of_memory)
          error(std::string(f.extend ? "extend: " : "decode: ") + (a.ok() ? p.error : a.error));
        failed.push_back(who[k]);  // out of KV under small pools
        continue;
      }
      f.reqs.push_back(r.h);
      const std::vector<kv_index>& kv = a.as<res::alloc_kv>().indices;
      if (f.extend) {
        const res::prepare_extend& plan = p.as<res::prepare_extend>();
        const std::size_t n = kv.size();
        f.in.emplace_back(r.tokens.begin() + static_cast<std::ptrdiff_t>(r.pos),
                          r.tokens.begin() + static_cast<std::ptrdiff_t>(r.pos + n));
        extend_job it;
        it.working = r.working;
        it.prefix_len = r.pos;
        it.kv = kv;
        it.mask = plan.mask;
        it.kernel_seqlen = plan.kernel_seqlen;
        if (plan.mask) it.track = plan.track_slot;
        f.extends.push_back(std::move(it));
        r.pos += n;  // scheduled: the next chunk starts here
        r.len = r.pos;
        f.ends.push_back(r.pos);
      } else {
        if (r.outputs.size() <= r.decoded) next_output(r);
        decode_job d;
        d.working = r.working;
        const res::prepare_decode& plan = p.as<res::prepare_decode>();
        d.kv = kv[0];
        if (plan.mask) d.track = plan.track_slot;
        d.pos = r.len;
        d.token = r.outputs[r.decoded];
        f.decodes.push_back(d);
        ++r.len;
        f.step_no.push_back(++r.decoded);
      }
    }
    if (f.extend) {
      abort_all(failed);  // a prefill that does not fit stops
    } else {
      retract_all(failed);
    }
    for (std::size_t k = 0; k < f.extends.size(); ++k)
      f.extends[k].tokens = f.in[k];
    return fp;
  }

  /// beginForward, the check of every restored prefix, and the forward's bytes (on its own
  /// thread when overlapping, so the scheduler runs on while it writes).
  bool launch(forward_run& f) {
    if (!fence(f.batch, true)) return false;
    const bool checks = std::any_of(f.reqs.begin(), f.reqs.end(), [&](request_handle h) {
      const request* r = find(h);
      return r != nullptr && r->first_forward;
    });
    if (checks) {
      if (status s = device_->refresh(); !s) {
        error("reading the pools back: " + s.err().message);
        return false;
      }
    }
    for (request_handle h : f.reqs)
      if (request* r = find(h)) verify_prefix(*r);
    auto body = [this, &f] {
      f.outcome = f.extend ? device_->run_extend(f.extends) : device_->run_decode(f.decodes);
    };
    for (const auto& it : f.extends)
      rep_.computed_tokens += it.tokens.size();
    rep_.computed_tokens += f.decodes.size();
    if (overlap_ && !device_->asynchronous()) {
      f.thread = std::thread(body);
    } else {
      body();
    }
    return true;
  }

  /// Waits for the forward's bytes, then endForward.
  bool finish_forward(forward_run& f) {
    if (f.thread.joinable()) f.thread.join();
    if (!f.outcome) {
      error("forward: " + f.outcome.err().message);
      return false;
    }
    return fence(f.batch, false);
  }

  /// The forward's results: prefills that completed start decoding; decodes that reached
  /// their length finish (their outputs appended, then inserted).
  void results(const forward_run& f) {
    if (f.extend) {
      for (std::size_t k = 0; k < f.reqs.size(); ++k) {
        request* r = find(f.reqs[k]);
        if (!r || f.ends[k] < r->input_len || r->decoding) continue;
        r->decoding = true;
        r->decode_total = r->decode_preset ? r->decode_preset : around(cfg_.output_len);
      }
      return;
    }
    std::vector<command> after;
    std::vector<request_handle> finishing;
    for (std::size_t k = 0; k < f.reqs.size(); ++k) {
      const request_handle h = f.reqs[k];
      request* r = find(h);
      if (!r) continue;  // finished (or aborted) while this forward ran: results dropped
      const bool done = f.step_no[k] == r->decode_total;
      after.emplace_back(cmd::process_decode{h, done, 0});
      if (!done) continue;
      // Its next decode may already be scheduled (overlap): the outputs appended are the
      // ones its steps up to here consumed; the step scheduled after is discarded.
      after.emplace_back(cmd::append{
          h,
          {r->outputs.begin(), r->outputs.begin() + static_cast<std::ptrdiff_t>(r->decode_total)},
          {}});
      after.emplace_back(cmd::finish{h, 0});
      finishing.push_back(h);
    }
    if (!after.empty()) {
      auto u = step(after);
      if (u)
        for (std::size_t k = 0; k < after.size(); ++k)
          if (!(*u)[k].ok())
            error(std::string(to_string(kind_of(after[k]))) + ": " + (*u)[k].error);
    }
    for (request_handle h : finishing) {  // the conversation continues from here
      request* r = find(h);
      std::vector<token_id> full = r->tokens;
      full.insert(full.end(), r->outputs.begin(),
                  r->outputs.begin() + static_cast<std::ptrdiff_t>(r->decode_total));
      history_[r->conv] = std::move(full);
      if (cfg_.pin_rate > 0 && to_pin_.size() + pins_.size() < 2 &&
          std::uniform_real_distribution<double>(0, 1)(rng_) < cfg_.pin_rate)
        to_pin_.push_back(history_[rng_() % 2 ? r->conv : rng_() % history_.size()]);
      if (cfg_.demote_rate > 0 &&
          std::uniform_real_distribution<double>(0, 1)(rng_) < cfg_.demote_rate)
        to_demote_.push_back(history_[r->conv]);
      if (cfg_.tool_rate > 0 &&
          std::uniform_real_distribution<double>(0, 1)(rng_) < cfg_.tool_rate) {
        waits_until_[r->conv] = iterations_ + cfg_.tool_steps;  // a tool runs meanwhile
        ++rep_.tool_waits;
        if (cfg_.demote_tools) to_demote_.push_back(history_[r->conv]);
      }
      ++rep_.finished;
      r->gone = true;
    }
    sweep();
  }

  /// --pin-rate: one step that looks up every held pin's tokens (each must still match at
  /// least its pinned length: no eviction may take a pinned prefix), unpins those whose
  /// time is up and pins the conversations chosen since the last call.
  void pins_turn() {
    const bool due = std::any_of(pins_.begin(), pins_.end(),
                                 [&](const held_pin& p) { return p.until_step <= rep_.steps; });
    if (to_pin_.empty() && !due && (pins_.empty() || rep_.steps % 8 != 0)) return;
    // Held pins in order: those kept, then those released now (each looked up first).
    const auto released_from = std::stable_partition(
        pins_.begin(), pins_.end(), [&](const held_pin& p) { return p.until_step > rep_.steps; });
    std::vector<command> cmds;
    for (const held_pin& p : pins_)
      cmds.emplace_back(cmd::lookup{0, p.tokens, true, {}});
    const std::size_t unpins_at = cmds.size();
    for (auto it = released_from; it != pins_.end(); ++it)
      cmds.emplace_back(cmd::unpin{it->id});
    const std::size_t pins_at = cmds.size();
    for (const std::vector<token_id>& t : to_pin_)
      cmds.emplace_back(cmd::pin{0, t, {}, 0});
    auto r = step(cmds);
    if (!r) return;
    for (std::size_t i = 0; i < unpins_at; ++i) {
      const held_pin& p = pins_[i];
      const command_result& x = (*r)[i];
      if (!x.ok()) {
        error("lookup of pin " + std::to_string(p.id) + ": " + x.error);
      } else if (x.as<res::lookup>().prefix_len < p.len) {
        ++rep_.pin_losses;
        error("pin " + std::to_string(p.id) + " held " + std::to_string(p.len) +
              " tokens; a lookup matched " + std::to_string(x.as<res::lookup>().prefix_len));
      }
    }
    for (std::size_t i = unpins_at; i < pins_at; ++i)
      if (!(*r)[i].ok()) error("unpin: " + (*r)[i].error);
    pins_.erase(released_from, pins_.end());
    for (std::size_t i = pins_at; i < cmds.size(); ++i) {
      const command_result& x = (*r)[i];
      if (!x.ok()) {  // the instance's pins hold half its KV pool: refused, not an error
        if (x.code != errc::out_of_memory) error("pin: " + x.error);
        continue;
      }
      const res::pin& p = x.as<res::pin>();
      if (p.id == 0) continue;  // nothing of it cached (evicted already)
      ++rep_.pins;
      rep_.pin_loaded_tokens += p.loaded_tokens;
      pins_.push_back(
          {p.id, std::move(to_pin_[i - pins_at]), p.pinned_len, rep_.steps + 10 + rng_() % 191});
    }
    to_pin_.clear();
  }

  /// --demote-rate: one step that demotes the conversations chosen since the last call.
  /// A result must account for no more than the prompt found; what it keeps is checked
  /// by the pins' lookups (a pinned prefix never goes) and the next turn's match.
  void demotes_turn() {
    if (to_demote_.empty()) return;
    std::vector<command> cmds;
    for (std::vector<token_id>& t : to_demote_)
      cmds.emplace_back(cmd::demote{0, std::move(t), {}});
    to_demote_.clear();
    auto r = step(cmds);
    if (!r) return;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      const command_result& x = (*r)[i];
      if (!x.ok()) {
        error("demote: " + x.error);
        continue;
      }
      const res::demote& d = x.as<res::demote>();
      const std::size_t asked = std::get<cmd::demote>(cmds[i]).tokens.size();
      if (d.matched_tokens > asked || (d.evicted_tokens > 0 && cfg_.host_ratio > 0))
        error("demote of " + std::to_string(asked) + " tokens: matched " +
              std::to_string(d.matched_tokens) + ", evicted " + std::to_string(d.evicted_tokens) +
              (cfg_.host_ratio > 0 ? " with a host tier" : ""));
      ++rep_.demotes;
      rep_.demoted_tokens += d.demoted_tokens;
      rep_.demote_evicted_tokens += d.evicted_tokens;
      rep_.demote_deferred_tokens += d.deferred_tokens;
      rep_.demote_kept_tokens += d.kept_tokens;
    }
  }

  /// The output the request's next decode consumes (recorded as it is generated).
  token_id next_output(request& r) {
    r.outputs.push_back(token());
    return r.outputs.back();
  }

  void progress(std::uint64_t budget, clk::time_point& last) {
    if (!cfg_.progress || index_ != 0 || clk::now() - last < std::chrono::seconds(2)) return;
    last = clk::now();
    std::fprintf(stderr, "hcsim: worker 0: %llu/%llu ops, %llu requests, %llu mismatches\n",
                 static_cast<unsigned long long>(rep_.ops), static_cast<unsigned long long>(budget),
                 static_cast<unsigned long long>(rep_.requests),
                 static_cast<unsigned long long>(rep_.kv_mismatches + rep_.state_mismatches));
  }

  /// Without overlap: schedule, forward, results, in turn.
  /// With overlap (SGLang's event loop): schedule batch k+1 and process the results of
  /// batch k while forward k+1 writes its bytes on another thread; the chunked requests of
  /// batch k are cached when the next batch is scheduled, as SGLang does.
  void loop() {
    const std::uint64_t budget = cfg_.ops / std::max(1u, cfg_.workers);
    auto last = clk::now();
    std::unique_ptr<forward_run> prev;
    while (rep_.ops < budget && rep_.errors == 0) {
      ++iterations_;  // advances while every conversation waits on a tool, too
      if (overlap_) cache_chunked(prev.get());
      demotes_turn();  // before a next turn of the conversation is admitted (and locks it)
      while (active_.size() < cfg_.batch && admit()) {
      }
      maybe_abort();
      pins_turn();
      std::unique_ptr<forward_run> next = schedule();
      if (!overlap_) {
        if (next && (!launch(*next) || !finish_forward(*next))) break;
        if (next) {
          cache_chunked(next.get());
          results(*next);
        }
        progress(budget, last);
        continue;
      }
      if (prev && !finish_forward(*prev)) break;
      if (next && !launch(*next)) break;
      if (prev) results(*prev);  // while the next forward writes its bytes
      prev = std::move(next);
      progress(budget, last);
    }
    if (prev) {
      (void)finish_forward(*prev);
      cache_chunked(prev.get());
      results(*prev);
    }
  }

  /// The end of the run: every request still in flight is aborted.
  void drain() {
    std::vector<std::size_t> all(active_.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    abort_all(all);
  }

  sim_config cfg_;
  unsigned index_;
  toy_model model_;
  std::mt19937_64 rng_;
  std::unique_ptr<client> client_;
  std::unique_ptr<client_session> session_;
  std::unique_ptr<forward_device> device_;
  std::vector<std::vector<token_id>> system_, history_;
  std::vector<bool> busy_;
  std::vector<std::uint64_t> waits_until_;  ///< --tool-rate: no turn before this iteration
  std::uint64_t iterations_ = 0;            ///< of the scheduling loop (the tools' clock)
  std::vector<request> active_;
  std::deque<request> retracted_;  ///< re-admitted before any new turn
  struct held_pin {
    std::uint64_t id;
    std::vector<token_id> tokens;
    std::uint64_t len;         ///< its pinned length
    std::uint64_t until_step;  ///< unpinned at the first pins_turn from this step on
  };
  std::vector<held_pin> pins_;                    ///< --pin-rate: held now
  std::vector<std::vector<token_id>> to_pin_;     ///< conversations to pin at the next turn
  std::vector<std::vector<token_id>> to_demote_;  ///< --demote-rate: at the next step
  request_handle next_handle_ = 0;
  std::uint64_t batch_ = 0;
  /// Forwards run on a thread while the next batch is scheduled (SGLang disables overlap
  /// for no_buffer with the radix cache, cache-semantics.md §7.1.2).
  bool overlap_;
  sim_report rep_;
};

}  // namespace

sim_report run_worker(const sim_config& cfg, unsigned index) {
  return worker(cfg, index).run();
}

namespace {

/// Records the first error of `r`.
void fail(sim_report& r, const std::string& what) {
  ++r.errors;
  if (r.first_error.empty()) r.first_error = what;
}

/// The served counters of instance `instance` in the node's inspect document (zeros when
/// it is not there); false when the node cannot say.
bool read_served(client& c, std::uint64_t instance, served_counts& out, sim_report& r) {
  auto text = c.inspect(false);
  if (!text) {
    fail(r, "inspect: " + text.err().message);
    return false;
  }
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    fail(r, "inspect: the node's answer is not a JSON object");
    return false;
  }
  out = {instance, 0, 0};
  for (const auto& in : doc.value("instances", nlohmann::json::array())) {
    const nlohmann::json* tree = in.is_object() && in.contains("tree") ? &in["tree"] : nullptr;
    if (tree == nullptr || !tree->is_object() || tree->value("instance", 0ULL) != instance)
      continue;
    const nlohmann::json served = tree->value("served", nlohmann::json::object());
    out.queried_tokens = served.value("queried_tokens", 0ULL);
    out.matched_kv_tokens = served.value("matched_kv_tokens", 0ULL);
  }
  return true;
}

}  // namespace

served_counts served_before(const sim_config& cfg, sim_report& r) {
  served_counts out;
  auto c = client::connect("unix:" + cfg.socket);
  if (!c) {
    fail(r, "before the run: connect: " + c.err().message);
    return out;
  }
  auto s = (*c)->open(spec_of(cfg, model_config(cfg)));
  if (!s) {
    fail(r, "before the run: open: " + s.err().message);
    return out;
  }
  (void)read_served(**c, (*s)->pools().instance_id, out, r);
  (void)(*s)->close();
  return out;
}

void check_idle(const sim_config& cfg, const served_counts& before, sim_report& r) {
  auto c = client::connect("unix:" + cfg.socket);
  if (!c) {
    ++r.errors;
    return;
  }
  const toy_model_config m = model_config(cfg);
  auto s = (*c)->open(spec_of(cfg, m));
  if (!s) {
    ++r.errors;
    if (r.first_error.empty()) r.first_error = "idle check: open: " + s.err().message;
    return;
  }
  const command check = cmd::check{/*full=*/true};
  // Backups and L3 writes finish asynchronously after the last step: a leak is what is
  // still held once the node says none of them is in flight.
  if (status d = (*c)->drain(); !d) {
    ++r.errors;
    if (r.first_error.empty()) r.first_error = "idle check: drain: " + d.err().message;
    return;
  }
  auto res = (*s)->step(std::vector<command>{check});
  if (!res || res->empty()) {
    ++r.errors;
    return;
  }
  if (auto st = (*c)->stats(); st) {
    for (const auto& [name, value] : *st)
      if (name == "invariant_violations" && value > 0) {
        ++r.errors;
        if (r.first_error.empty())
          r.first_error = "the node counted " + std::to_string(value) +
                          " internal invariant violations (inspect: first_invariant_violation)";
      }
  }
  const command_result& x = (*res)[0];
  if (!x.ok()) {
    ++r.errors;
    if (r.first_error.empty()) r.first_error = "idle check: check: " + x.error;
    return;
  }
  // The node counted every match the workers made, and nothing else. Only where the
  // instance outlived the run: a node that keeps no idle instance (--max-idle-instances 0)
  // dropped the one counted before when its session closed, and the workers' one when
  // theirs did (ids are never reused, so the same id is the same instance throughout).
  served_counts after;
  if (before.instance != 0 && (*s)->pools().instance_id == before.instance &&
      read_served(**c, before.instance, after, r)) {
    if (after.queried_tokens - before.queried_tokens != r.queried_tokens ||
        after.matched_kv_tokens - before.matched_kv_tokens != r.matched_kv_tokens)
      fail(r, "idle check: the instance's served counters grew by " +
                  std::to_string(after.queried_tokens - before.queried_tokens) + " queried and " +
                  std::to_string(after.matched_kv_tokens - before.matched_kv_tokens) +
                  " matched KV tokens; the workers' matches looked up " +
                  std::to_string(r.queried_tokens) + " and matched " +
                  std::to_string(r.matched_kv_tokens));
  }
  const res::check& tree = x.as<res::check>();
  const pool_state& p = x.pools;
  const bool kv_ok = p.kv_avail + p.full_evictable + p.full_protected == cfg.kv_tokens;
  const bool slots_ok = p.slots_avail + p.mamba_evictable + p.mamba_protected == cfg.slots;
  std::string problem;
  if (!tree.sanity || !kv_ok || !slots_ok || p.full_protected != 0 || p.mamba_protected != 0)
    problem = tree.sanity ? "pool ids unaccounted for or still protected" : tree.sanity_detail;
  if (!problem.empty()) {
    ++r.leaks;
    if (r.first_error.empty()) r.first_error = "idle check: " + problem;
  }
  (void)(*s)->close();
}

}  // namespace hc::sim
