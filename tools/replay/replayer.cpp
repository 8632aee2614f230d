#include "tools/replay/replayer.hpp"

#include <zlib.h>

#include <chrono>

namespace hc::replay {
namespace {

using nlohmann::json;
using clk = std::chrono::steady_clock;

std::uint64_t since(clk::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now() - t0).count());
}

request_config manager_config(const trace_config& c) {
  request_config rc;
  rc.strat = parse_strategy(c.strategy).value_or(strategy::no_buffer);
  rc.pp_size = c.ping_pong_size;
  rc.chunk_size = c.chunk_size;
  rc.track_interval = c.track_interval;
  rc.rows = c.req_pool_rows;
  rc.max_context_len = c.max_context_len;
  rc.alloc_factor = c.state_per_req;
  return rc;
}

}  // namespace

std::uint32_t kv_crc32(std::span<const kv_index> indices) {
  if (indices.empty()) return 0;
  std::vector<unsigned char> buf(indices.size() * 8);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    auto v = static_cast<std::uint64_t>(static_cast<std::int64_t>(indices[i]));
    for (int b = 0; b < 8; ++b)
      buf[i * 8 + static_cast<std::size_t>(b)] = static_cast<unsigned char>(v >> (8 * b));
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, buf.data(), static_cast<uInt>(buf.size()));
  return static_cast<std::uint32_t>(crc);
}

std::string divergence::describe() const {
  return "line " + std::to_string(line) + " (op #" + std::to_string(index) + " " + op +
         "): field '" + field + "': expected " + expected.dump() + ", got " + actual.dump();
}

replayer::replayer(const trace_config& cfg) : cfg_(cfg), gen_(cfg_) {
  cache_config cc;
  cc.kv_tokens = cfg_.kv_pool_tokens;
  cc.page_size = cfg_.page_size;
  cc.slots = cfg_.mamba_pool_slots;
  cc.chunk_size = cfg_.chunk_size;
  cache_ = std::make_unique<radix_cache>(cc);
  mgr_ = std::make_unique<request_manager>(manager_config(cfg_), *cache_);
  conv_cache_.resize(cfg_.conv_lengths.size());
}

const std::vector<token_id>& replayer::conv_tokens(std::size_t c) {
  if (c >= conv_cache_.size()) conv_cache_.resize(c + 1);
  auto& v = conv_cache_[c];
  if (v.empty()) {
    const std::size_t n = c < cfg_.conv_lengths.size() ? cfg_.conv_lengths[c] : 0;
    v = gen_.conversation(c, n);
  }
  return v;
}

bool replayer::lookup(const trace_op& op, outcome& out, const request_record*& rec,
                      const std::vector<token_id>*& conv) {
  rec = mgr_->find(op.req);
  auto it = req_conv_.find(op.req);
  if (!rec || it == req_conv_.end()) {
    out.error = "unknown request " + std::to_string(op.req);
    return false;
  }
  conv = &conv_tokens(it->second);
  return true;
}

void replayer::fill_state(outcome& out) const {
  const auto& s = cache_->tree().sizes();
  out.kv_avail = cache_->kv().available();
  out.mamba_avail = cache_->slots().available();
  out.req_avail = mgr_->rows().available();
  out.full_evictable = s.full_evictable;
  out.full_protected = s.full_protected;
  out.mamba_evictable = s.mamba_evictable;
  out.mamba_protected = s.mamba_protected;
}

std::uint64_t replayer::execute(const trace_op& op, outcome& out) {
  std::uint64_t ns = 0;
  request_manager& m = *mgr_;
  switch (op.kind) {
    case op_kind::match: {
      const auto& toks = conv_tokens(op.conv);
      if (op.input_len > toks.size()) {
        out.error = "input_len beyond the conversation's length";
        break;
      }
      if (status s = m.create(
              op.req, 0, {toks.begin(), toks.begin() + static_cast<std::ptrdiff_t>(op.input_len)});
          !s) {
        out.error = s.err().message;
        break;
      }
      req_conv_[op.req] = op.conv;
      auto t0 = clk::now();
      auto r = m.match(op.req);
      ns = since(t0);
      if (!r) {
        out.error = r.err().message;
        break;
      }
      out.prefix_len = static_cast<std::int64_t>(r->prefix_len);
      out.indices.assign(r->indices.begin(), r->indices.end());
      out.has_crc = true;
      out.node_mamba = r->node_slot;
      out.has_branching = true;
      out.branching = r->branching;
      out.req_mamba = r->working;
      break;
    }
    case op_kind::lock:
    case op_kind::unlock: {
      auto t0 = clk::now();
      status s = op.kind == op_kind::lock ? m.lock(op.req) : m.unlock(op.req);
      ns = since(t0);
      if (!s) out.error = s.err().message;
      break;
    }
    case op_kind::alloc_req: {
      auto t0 = clk::now();
      auto r = m.alloc_req(op.req);
      ns = since(t0);
      if (!r) {
        out.error = r.err().message;
        break;
      }
      out.row = r->row;
      out.req_mamba = r->working;
      out.has_pingpong = true;
      if (r->pingpong) {
        std::vector<std::int64_t> pp;
        const std::size_t n = cfg_.ping_pong_size == 1 ? 1 : 2;
        for (std::size_t i = 0; i < n; ++i)
          pp.push_back((*r->pingpong)[i]);
        out.pingpong = pp;
      }
      break;
    }
    case op_kind::alloc_kv: {
      auto t0 = clk::now();
      auto r = m.alloc_kv(op.req, op.start, op.n);
      ns = since(t0);
      if (!r) {
        out.error = r.err().message;
        break;
      }
      out.indices.assign(r->begin(), r->end());
      out.has_crc = true;
      break;
    }
    case op_kind::track: {
      auto t0 = clk::now();
      auto r = m.record_track(op.req, op.seqlen, op.flip);
      ns = since(t0);
      if (!r) {
        out.error = r.err().message;
        break;
      }
      out.keep_slot = *r;
      break;
    }
    case op_kind::cache_unfinished: {
      const request_record* rec = nullptr;
      const std::vector<token_id>* conv = nullptr;
      if (!lookup(op, out, rec, conv)) break;
      const auto& toks = *conv;
      const std::size_t in = rec->input_len;
      if (rec->tokens.size() == in && in < toks.size())
        (void)m.append_tokens(op.req, {&toks[in], 1});
      auto t0 = clk::now();
      auto r = m.cache_unfinished(op.req, in);
      ns = since(t0);
      if (!r) {
        out.error = r.err().message;
        break;
      }
      out.protected_len = static_cast<std::int64_t>(r->protected_len);
      out.indices.assign(r->prefix.begin(), r->prefix.end());
      out.has_crc = true;
      out.node_mamba = r->node_slot;
      break;
    }
    case op_kind::finish: {
      const request_record* rec = nullptr;
      const std::vector<token_id>* conv = nullptr;
      if (!lookup(op, out, rec, conv)) break;
      const auto& toks = *conv;
      const std::size_t total = rec->input_len + op.output_len;
      if (total > toks.size()) {
        out.error = "output_len beyond the conversation's length";
        break;
      }
      if (rec->kv_committed + 1 != total) {
        out.error = "committed length " + std::to_string(rec->kv_committed) +
                    " != input_len + output_len - 1";
        break;
      }
      const std::size_t have = rec->tokens.size();
      if (have < total) (void)m.append_tokens(op.req, {toks.data() + have, total - have});
      auto t0 = clk::now();
      auto r = m.finish(op.req);
      ns = since(t0);
      if (!r) out.error = r.err().message;
      req_conv_.erase(op.req);
      break;
    }
    case op_kind::evict: {
      auto t0 = clk::now();
      evict_result r = cache_->tree().evict(op.num_tokens, op.mamba_num);
      ns = since(t0);
      out.tokens_evicted = static_cast<std::int64_t>(r.tokens_evicted);
      out.mamba_evicted = static_cast<std::int64_t>(r.mamba_evicted);
      break;
    }
    case op_kind::check: {
      const auto& s = cache_->tree().sizes();
      out.tree_tokens = static_cast<std::int64_t>(s.total_tokens());
      out.tree_mamba = static_cast<std::int64_t>(s.total_slots());
      if (op.sanity) {
        status st = cache_->tree().sanity_check();
        if (st) st = m.check_pool_invariants();
        out.sanity = st.ok();
        if (!st) out.sanity_detail = st.err().message;
      } else {
        status st = cache_->tree().check_invariants();
        if (!st) out.sanity_detail = st.err().message;
      }
      break;
    }
  }
  fill_state(out);
  return ns;
}

json replayer::to_json(const trace_op& op, const outcome& o) {
  json j;
  j["i"] = op.index;
  j["op"] = op.name;
  if (!o.error.empty()) j["error"] = o.error;
  auto put = [&](const char* k, const std::optional<std::int64_t>& v) {
    if (v) j[k] = *v;
  };
  put("prefix_len", o.prefix_len);
  if (o.has_crc) j["kv_crc32"] = kv_crc32(o.indices);
  put("node_mamba", o.node_mamba);
  if (o.has_branching) j["branching"] = o.branching ? json(*o.branching) : json(nullptr);
  put("req_mamba", o.req_mamba);
  put("row", o.row);
  if (o.has_pingpong) j["pingpong"] = o.pingpong ? json(*o.pingpong) : json(nullptr);
  put("keep_slot", o.keep_slot);
  put("protected_len", o.protected_len);
  put("tokens_evicted", o.tokens_evicted);
  put("mamba_evicted", o.mamba_evicted);
  put("tree_tokens", o.tree_tokens);
  put("tree_mamba", o.tree_mamba);
  if (o.sanity) j["sanity"] = *o.sanity;
  if (!o.sanity_detail.empty()) j["sanity_detail"] = o.sanity_detail;
  j["kv_avail"] = o.kv_avail;
  j["mamba_avail"] = o.mamba_avail;
  j["req_avail"] = o.req_avail;
  j["full_evictable"] = o.full_evictable;
  j["full_protected"] = o.full_protected;
  j["mamba_evictable"] = o.mamba_evictable;
  j["mamba_protected"] = o.mamba_protected;
  return j;
}

std::optional<divergence> replayer::compare(const trace_op& op, const json& result) {
  auto diverge = [&](std::string field, json expected, json actual) {
    return divergence{op.line,          op.index, op.name, std::move(field), std::move(expected),
                      std::move(actual)};
  };
  if (result.contains("error")) return diverge("error", nullptr, result["error"]);
  if (result.contains("sanity_detail")) return diverge("sanity", true, result["sanity_detail"]);
  if (!op.expect.is_object()) return std::nullopt;
  for (const auto& [key, want] : op.expect.items()) {
    auto it = result.find(key);
    if (it == result.end()) return diverge(key, want, nullptr);
    if (*it != want) return diverge(key, want, *it);
  }
  return std::nullopt;
}

}  // namespace hc::replay
