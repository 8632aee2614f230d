#include "tools/replay/replayer.hpp"

#include <zlib.h>

#include <chrono>

namespace hc::replay {
namespace {

using nlohmann::json;
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

replayer::replayer(const trace_config& cfg, std::unique_ptr<replay_backend> backend)
    : cfg_(cfg), gen_(cfg_), backend_(std::move(backend)) {
  if (!backend_) backend_ = std::make_unique<local_backend>(cfg_);
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

bool replayer::build(const trace_op& op, outcome& out, std::vector<command>& cmds) {
  cmds.clear();
  auto add = [&](cmd_kind k) -> command& {
    command& c = cmds.emplace_back();
    c.kind = k;
    c.req = op.req;
    return c;
  };
  auto known = [&]() -> request_view* {
    auto it = reqs_.find(op.req);
    if (it == reqs_.end()) {
      out.error = "unknown request " + std::to_string(op.req);
      return nullptr;
    }
    return &it->second;
  };
  switch (op.kind) {
    case op_kind::match: {
      const auto& toks = conv_tokens(op.conv);
      if (op.input_len > toks.size()) {
        out.error = "input_len beyond the conversation's length";
        return false;
      }
      add(cmd_kind::create)
          .tokens.assign(toks.begin(), toks.begin() + static_cast<std::ptrdiff_t>(op.input_len));
      add(cmd_kind::match);
      reqs_[op.req] = {op.conv, op.input_len, op.input_len};
      return true;
    }
    case op_kind::lock:
      add(cmd_kind::lock);
      return true;
    case op_kind::unlock:
      add(cmd_kind::unlock);
      return true;
    case op_kind::alloc_req:
      add(cmd_kind::alloc_req);
      return true;
    case op_kind::alloc_kv: {
      command& c = add(cmd_kind::alloc_kv);
      c.start = op.start;
      c.n = op.n;
      return true;
    }
    case op_kind::track: {
      command& c = add(cmd_kind::track);
      c.seqlen = op.seqlen;
      c.flag = op.flip;
      return true;
    }
    case op_kind::cache_unfinished: {
      request_view* r = known();
      if (!r) return false;
      const auto& toks = conv_tokens(r->conv);
      if (r->tokens_sent == r->input_len && r->input_len < toks.size()) {
        add(cmd_kind::append).tokens.assign(1, toks[r->input_len]);
        r->tokens_sent += 1;
      }
      add(cmd_kind::cache_unfinished).n = r->input_len;
      return true;
    }
    case op_kind::finish: {
      request_view* r = known();
      if (!r) return false;
      const auto& toks = conv_tokens(r->conv);
      const std::size_t total = r->input_len + op.output_len;
      if (total > toks.size()) {
        out.error = "output_len beyond the conversation's length";
        return false;
      }
      if (r->tokens_sent < total)
        add(cmd_kind::append)
            .tokens.assign(toks.begin() + static_cast<std::ptrdiff_t>(r->tokens_sent),
                           toks.begin() + static_cast<std::ptrdiff_t>(total));
      add(cmd_kind::finish).n = total;
      reqs_.erase(op.req);
      return true;
    }
    case op_kind::evict: {
      command& c = add(cmd_kind::evict);
      c.n = op.num_tokens;
      c.m = op.mamba_num;
      return true;
    }
    case op_kind::check:
      add(cmd_kind::check).flag = op.sanity;
      return true;
  }
  return false;
}

void replayer::convert(const trace_op& op, const std::vector<command_result>& results,
                       outcome& out) {
  if (results.empty()) return;
  for (const command_result& r : results)
    if (!r.ok()) {
      out.error = r.error;
      break;
    }
  const command_result& r = results.back();
  const pool_state& p = r.pools;
  out.kv_avail = p.kv_avail;
  out.mamba_avail = p.slots_avail;
  out.req_avail = p.rows_avail;
  out.full_evictable = p.full_evictable;
  out.full_protected = p.full_protected;
  out.mamba_evictable = p.mamba_evictable;
  out.mamba_protected = p.mamba_protected;
  if (!out.error.empty()) return;
  auto i64 = [](auto v) { return static_cast<std::int64_t>(v); };
  switch (op.kind) {
    case op_kind::match:
      out.prefix_len = i64(r.prefix_len);
      out.indices = r.indices;
      out.has_crc = true;
      out.node_mamba = r.node_slot;
      out.has_branching = true;
      if (r.branching) out.branching = static_cast<std::size_t>(*r.branching);
      out.req_mamba = r.working;
      break;
    case op_kind::alloc_req:
      out.row = r.row;
      out.req_mamba = r.working;
      out.has_pingpong = true;
      if (r.pingpong) {
        std::vector<std::int64_t> pp;
        const std::size_t n = cfg_.ping_pong_size == 1 ? 1 : 2;
        for (std::size_t i = 0; i < n; ++i)
          pp.push_back((*r.pingpong)[i]);
        out.pingpong = pp;
      }
      break;
    case op_kind::alloc_kv:
      out.indices = r.indices;
      out.has_crc = true;
      break;
    case op_kind::track:
      out.keep_slot = r.slot;
      break;
    case op_kind::cache_unfinished:
      out.protected_len = i64(r.prefix_len);
      out.indices = r.indices;
      out.has_crc = true;
      out.node_mamba = r.node_slot;
      break;
    case op_kind::evict:
      out.tokens_evicted = i64(r.tokens_evicted);
      out.mamba_evicted = i64(r.mamba_evicted);
      break;
    case op_kind::check:
      out.tree_tokens = i64(r.tree_tokens);
      out.tree_mamba = i64(r.tree_slots);
      if (op.sanity) out.sanity = r.sanity;
      out.sanity_detail = r.sanity_detail;
      break;
    case op_kind::lock:
    case op_kind::unlock:
    case op_kind::finish:
      break;
  }
}

std::uint64_t replayer::execute(const trace_op& op, outcome& out) {
  if (!build(op, out, cmds_)) return 0;
  const std::uint64_t ns = backend_->run(cmds_, results_);
  convert(op, results_, out);
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
