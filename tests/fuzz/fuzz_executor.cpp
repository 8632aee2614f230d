// Fuzz target 2: command sequences through the engine as the node runs them, checked after
// every step. Two sessions share one cache instance on small pools (strategy, page size,
// chunk, tracking and overlap chosen by the input); each step is a batch of commands of
// every kind with fields from the input, validated as the node validates a worker's step
// (validate_command) and run by run_step; its ops, read-after marks and donations go to
// the pure stream rules (stream_rules), whose begin / end reports reach the sessions as
// the radix_cache actor passes them (stream_claimed / stream_ended). Sessions close and
// reopen as on a disconnect.
//
// After every step: the tree invariants and the pool identity over both sessions
//   available + evictable + protected + held(session 1) + held(session 2) == capacity
// for KV tokens and SSM slots; every slot an op names is in the pool (1..capacity); a COW never
// copies a slot onto itself; the second session's rows are shared (when the spec has a
// width) and each admitted request's shared row holds exactly its KV ids. At the end every request
// is aborted, both sessions close, and the idle checks must hold exactly: SGLang's sanity_check,
// and after evicting everything, every KV token and slot available again.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "actors/forward_stream/stream_rules.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "actors/scheduler/step.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "tests/support/manual_clock.hpp"

namespace hc::fuzz {
namespace {

constexpr std::size_t max_command_tokens = 4096;  // the node's limit, scaled to the pools

struct session_state {
  session_id id = 0;
  std::vector<kv_index> rows;  ///< shared request rows (the second session, with a width)
  std::unique_ptr<request_manager> requests;
  std::uint64_t next_batch = 1;
};

struct world {
  instance_spec spec;
  std::unique_ptr<radix_cache> cache;
  stream_rules stream;
  std::array<session_state, 2> sessions;
  session_id next_session = 1;
  std::size_t slot_capacity = 0;
  test::manual_clock time;  ///< moved by the input: pins expire at chosen steps

  void open(session_state& s) {
    s.id = next_session++;
    request_config rc = request_config_of(spec);
    rc.snapshots_in_forward_ops = false;  // as radix_cache_actor's attach
    rc.session = s.id;
    if (&s == &sessions[1] && spec.max_context_len > 0) {  // as the node's sharedRows
      s.rows.assign((spec.request_rows + 1) * spec.max_context_len, 0);
      rc.shared_rows = s.rows;
    }
    s.requests = std::make_unique<request_manager>(rc, *cache);
    stream.attach(s.id);
    s.next_batch = 1;
  }
  void close(session_state& s) {
    stream_actions out;
    stream.detach(s.id, out);
    perform(out);
    for (request_handle h : s.requests->live_handles())
      if (status st = s.requests->abort(h); !st) fail("abort at close: " + st.err().message);
    s.requests->release_quarantine();
    s.requests->release_pins();  // as the node's close
    s.requests.reset();
  }
  session_state* find(session_id id) {
    for (session_state& s : sessions)
      if (s.requests && s.id == id) return &s;
    return nullptr;
  }
  /// What the forward_stream actor does with the rules' actions: the reports reach the
  /// sessions' request tables; ops and copies would touch bytes (none here).
  void perform(const stream_actions& out) {
    for (const stream_action_v& a : out) {
      if (const auto* r = std::get_if<stream_action::report>(&a)) {
        session_state* s = find(r->session);
        if (!s) continue;
        if (r->ended) {
          s->requests->stream_ended(r->batch);
        } else {
          s->requests->stream_claimed(r->batch);
        }
      } else if (const auto* o = std::get_if<stream_action::run_ops>(&a)) {
        check_ops(o->ops);
      }
    }
  }
  void check_ops(const forward_ops& ops) const {
    auto in_pool = [&](slot_id s) {  // ids 1..capacity; 0 is reserved
      return s >= 1 && static_cast<std::size_t>(s) <= slot_capacity;
    };
    for (const slot_copy& c : ops.cows) {
      if (c.src == c.dst) fail("COW of a slot onto itself");
      if (!in_pool(c.src) || !in_pool(c.dst)) fail("COW names a slot outside the pool");
    }
    for (const slot_copy& c : ops.snapshots)
      if (!in_pool(c.src) || !in_pool(c.dst)) fail("snapshot names a slot outside the pool");
    for (slot_id c : ops.clears)
      if (!in_pool(c)) fail("clear names a slot outside the pool");
  }
  void check(const char* when) const {
    const radix_tree& tree = cache->tree();
    if (status s = tree.check_invariants(); !s)
      fail(std::string(when) + ": tree: " + s.err().message);
    const tree_sizes& z = tree.sizes();
    std::size_t held_kv = 0, held_slots = 0;
    for (const session_state& s : sessions) {
      if (!s.requests) continue;
      held_kv += s.requests->held_kv_tokens();
      held_slots += s.requests->held_slots();
    }
    if (cache->kv().available() + z.full_evictable + z.full_protected + held_kv !=
        cache->kv().capacity())
      fail(std::string(when) + ": KV tokens leaked or double counted");
    if (cache->slots().available() + z.mamba_evictable + z.mamba_protected + held_slots !=
        cache->slots().capacity())
      fail(std::string(when) + ": SSM slots leaked or double counted");
    for (const session_state& s : sessions) {  // a shared row holds its request's KV ids
      if (!s.requests || s.rows.empty()) continue;
      for (request_handle h : s.requests->live_handles()) {
        const request_record* r = s.requests->find(h);
        if (!r || r->row == no_row) continue;
        const std::size_t n = std::min(r->row_kv.size(), spec.max_context_len);
        const kv_index* row =
            s.rows.data() + static_cast<std::size_t>(r->row) * spec.max_context_len;
        if (!std::equal(row, row + n, r->row_kv.begin()))
          fail(std::string(when) + ": a shared row differs from its request's KV ids");
      }
    }
  }
};

instance_spec spec_from(fuzz_input& in) {
  instance_spec s;
  s.model_id = "fuzz";
  s.strat = static_cast<strategy>(in.range(0, 2));
  s.page_size = std::size_t{1} << in.range(0, 3);
  s.kv_tokens = s.page_size * in.range(8, 96);
  s.ssm_slots = in.range(2, 24);
  s.chunk_size = std::max<std::size_t>(s.page_size, std::size_t{4} << in.range(0, 3));
  s.track_interval = s.chunk_size * in.range(1, 4);
  s.overlap = in.flag();
  s.request_rows = in.range(1, 6);
  s.max_context_len = in.flag() ? 0 : in.range(16, 512);
  return s;
}

/// Prompts from a few shared "system prompts" and a short tail, so that prefixes match,
/// nodes split and branches form.
std::vector<token_id> tokens_from(fuzz_input& in) {
  std::vector<token_id> t;
  const std::uint64_t sys = in.range(0, 3);
  const std::size_t sys_len = in.range(0, 48);
  for (std::size_t i = 0; i < sys_len; ++i)
    t.push_back(static_cast<token_id>(1000 * (sys + 1) + i));
  const std::size_t tail = in.range(0, 12);
  for (std::size_t i = 0; i < tail; ++i)
    t.push_back(static_cast<token_id>(in.range(1, 6)));
  return t;
}

command command_from(fuzz_input& in) {
  const auto kind = static_cast<cmd_kind>(in.range(0, cmd_kind_count - 1));
  const request_handle req = in.range(1, 6);
  switch (kind) {
    case cmd_kind::create:
      return cmd::create{req, 0, tokens_from(in), {}};
    case cmd_kind::append: {
      std::vector<token_id> t(in.range(0, 3));
      for (token_id& x : t)
        x = static_cast<token_id>(in.range(1, 6));
      return cmd::append{req, std::move(t), {}};
    }
    case cmd_kind::match:
      return cmd::match{req};
    case cmd_kind::lock:
      return cmd::lock{req};
    case cmd_kind::unlock:
      return cmd::unlock{req};
    case cmd_kind::alloc_req:
      return cmd::alloc_req{req};
    case cmd_kind::alloc_kv: {
      const std::uint64_t start = in.count(80), count = in.count(80);
      return cmd::alloc_kv{req, start, count, /*to_end=*/start == 80};  // no byte of its own
    }
    case cmd_kind::track:
      return cmd::track{req, in.count(200), in.flag()};
    case cmd_kind::prepare_extend:
      return cmd::prepare_extend{req, in.count(80), in.count(80)};
    case cmd_kind::prepare_decode:
      return cmd::prepare_decode{req};
    case cmd_kind::process_decode:
      return cmd::process_decode{req, in.flag(), in.count(3)};
    case cmd_kind::cache_unfinished:
      return cmd::cache_unfinished{req, in.count(120)};
    case cmd_kind::finish:
      return cmd::finish{req, in.flag() ? 0 : in.count(120)};
    case cmd_kind::abort:
      return cmd::abort{req};
    case cmd_kind::not_admitted:
      return cmd::not_admitted{req};
    case cmd_kind::evict:
      return cmd::evict{in.count(64), in.count(8)};
    case cmd_kind::check:
      return cmd::check{in.flag()};
    case cmd_kind::take_ops: {
      std::vector<request_handle> reqs(in.range(0, 3));
      for (request_handle& h : reqs)
        h = in.range(1, 6);
      return cmd::take_ops{std::move(reqs), in.count(8)};
    }
    case cmd_kind::lookup:
      return cmd::lookup{0, tokens_from(in), in.flag(), {}};
    case cmd_kind::prefetch:
      return cmd::prefetch{req, in.flag()};
    case cmd_kind::pin:  // a TTL of 0-2 ms: some expire at a later step
      return cmd::pin{0, tokens_from(in), {}, in.count(2)};
    case cmd_kind::unpin:
      return cmd::unpin{in.range(0, 8)};
    case cmd_kind::demote:
      return cmd::demote{0, tokens_from(in), {}};
  }
  return cmd::check{};
}

void run_one_step(world& w, session_state& s, fuzz_input& in) {
  std::vector<command> cmds(in.range(1, 6));
  for (command& c : cmds)
    c = command_from(in);
  for (const command& c : cmds)  // the node refuses the whole step (check_step)
    if (!validate_command(c, max_command_tokens)) return;
  // As radix_cache_actor's step: every session's pins whose TTL ended go first.
  w.time.advance(std::chrono::milliseconds(in.range(0, 2)));
  for (session_state& o : w.sessions)
    if (o.requests) o.requests->expire_pins(w.time.now());
  std::vector<command_result> results;
  step_outcome out = run_step(*s.requests, *w.cache, cmds, results, {}, w.time);
  if (results.size() != cmds.size()) fail("a step must answer every command");
  // The radix_cache actor's sends, in step.hpp's order.
  for (step_outcome::batch_ops& b : out.ops) {
    w.check_ops(b.ops);
    (void)w.stream.enqueue(s.id, b.batch, std::move(b.ops));  // refused ones are counted
  }
  if (!out.read_after.empty()) w.stream.read_after(s.id, out.read_after);
  if (!out.donations.empty()) {
    w.check_ops(out.donations);
    stream_actions acts;
    w.stream.donate(s.id, std::move(out.donations), acts);
    w.perform(acts);
  }
}

}  // namespace
}  // namespace hc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hc;
  fuzz::fuzz_input in(data, size);
  fuzz::world w;
  w.spec = fuzz::spec_from(in);
  if (!validate(w.spec)) return 0;  // the node refuses the spec; nothing to run
  w.cache = std::make_unique<radix_cache>(cache_config_of(w.spec));
  w.slot_capacity = w.cache->slots().capacity();
  for (fuzz::session_state& s : w.sessions)
    w.open(s);
  stream_ticket ticket = 1;
  for (int steps = 0; !in.empty() && steps < 400; ++steps) {
    fuzz::session_state& s = w.sessions[in.range(0, 1)];
    const std::uint8_t what = static_cast<std::uint8_t>(in.range(0, 15));
    stream_actions acts;
    if (what < 10) {
      fuzz::run_one_step(w, s, in);
    } else if (what < 12) {  // begin_forward of the next batch (or a stale one)
      const std::uint64_t batch = in.flag() ? s.next_batch++ : in.count(8);
      w.stream.begin(s.id, batch, ticket++, acts);
    } else if (what < 14) {  // end_forward
      const std::uint64_t batch = in.flag() && s.next_batch > 1 ? s.next_batch - 1 : in.count(8);
      w.stream.end(s.id, batch, ticket++, acts);
    } else if (what == 14) {  // the worker disconnects; a new one opens a session
      w.close(s);
      w.open(s);
    } else {  // a tier copy arrives (a load-back, demotion or backup job)
      w.stream.tier(static_cast<tier_kind>(in.range(0, 2)), s.id, ticket++, acts);
    }
    w.perform(acts);
    w.check("after a step");
  }
  for (fuzz::session_state& s : w.sessions)
    w.close(s);
  w.check("after closing");
  if (status st = w.cache->tree().sanity_check(); !st)
    fuzz::fail("idle sanity check: " + st.err().message);
  w.cache->tree().evict(SIZE_MAX, SIZE_MAX);
  if (w.cache->kv().available() != w.cache->kv().capacity())
    fuzz::fail("KV tokens missing after evicting everything idle");
  if (w.cache->slots().available() != w.cache->slots().capacity())
    fuzz::fail("SSM slots missing after evicting everything idle");
  return 0;
}
