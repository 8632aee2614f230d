#include "tools/replay/replayer.hpp"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <variant>

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
  const request_handle h = op.req;
  auto known = [&]() -> request_view* {
    auto it = reqs_.find(op.req);
    if (it == reqs_.end()) {
      out.error = "unknown request " + std::to_string(op.req);
      return nullptr;
    }
    return &it->second;
  };
  auto slice = [](const std::vector<token_id>& t, std::size_t from, std::size_t to) {
    return std::vector<token_id>(t.begin() + static_cast<std::ptrdiff_t>(from),
                                 t.begin() + static_cast<std::ptrdiff_t>(to));
  };
  switch (op.kind) {
    case op_kind::match: {
      const auto& toks = conv_tokens(op.conv);
      if (op.input_len > toks.size()) {
        out.error = "input_len beyond the conversation's length";
        return false;
      }
      cmds.emplace_back(cmd::create{h, 0, slice(toks, 0, op.input_len), {}});
      cmds.emplace_back(cmd::match{h});
      reqs_[op.req] = {op.conv, op.input_len, op.input_len};
      return true;
    }
    case op_kind::lock:
      cmds.emplace_back(cmd::lock{h});
      return true;
    case op_kind::unlock:
      cmds.emplace_back(cmd::unlock{h});
      return true;
    case op_kind::alloc_req:
      cmds.emplace_back(cmd::alloc_req{h});
      return true;
    case op_kind::alloc_kv:
      cmds.emplace_back(cmd::alloc_kv{h, op.start, op.n});
      return true;
    case op_kind::track:
      cmds.emplace_back(cmd::track{h, op.seqlen, op.flip});
      return true;
    case op_kind::cache_unfinished: {
      request_view* r = known();
      if (!r) return false;
      const auto& toks = conv_tokens(r->conv);
      if (r->tokens_sent == r->input_len && r->input_len < toks.size()) {
        cmds.emplace_back(cmd::append{h, {toks[r->input_len]}, {}});
        r->tokens_sent += 1;
      }
      cmds.emplace_back(cmd::cache_unfinished{h, r->input_len});
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
        cmds.emplace_back(cmd::append{h, slice(toks, r->tokens_sent, total), {}});
      cmds.emplace_back(cmd::finish{h, total});
      reqs_.erase(op.req);
      return true;
    }
    case op_kind::evict:
      cmds.emplace_back(cmd::evict{op.num_tokens, op.mamba_num});
      return true;
    case op_kind::check:
      cmds.emplace_back(cmd::check{op.sanity});
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
  try {
    read_body(op, r, out);
  } catch (const std::bad_variant_access&) {  // a node's bug, reported as the op's error
    out.error = "the answer carries no result of the kind '" + op.name + "' needs";
  }
}

void replayer::read_body(const trace_op& op, const command_result& r, outcome& out) const {
  auto i64 = [](auto v) { return static_cast<std::int64_t>(v); };
  switch (op.kind) {
    case op_kind::match: {
      const auto& m = r.as<res::match>();
      out.prefix_len = i64(m.prefix_len);
      out.kv_matched = m.kv_matched;
      out.indices = m.indices;
      out.has_crc = true;
      out.node_mamba = m.node_slot;
      out.has_branching = true;
      if (m.branching) out.branching = static_cast<std::size_t>(*m.branching);
      out.req_mamba = m.working;
      break;
    }
    case op_kind::alloc_req: {
      const auto& a = r.as<res::alloc_req>();
      out.row = a.row;
      out.req_mamba = a.working;
      out.has_pingpong = true;
      if (a.pingpong) {
        std::vector<std::int64_t> pp;
        const std::size_t n = cfg_.ping_pong_size == 1 ? 1 : 2;
        for (std::size_t i = 0; i < n; ++i)
          pp.push_back((*a.pingpong)[i]);
        out.pingpong = pp;
      }
      break;
    }
    case op_kind::alloc_kv:
      out.indices = r.as<res::alloc_kv>().indices;
      out.has_crc = true;
      break;
    case op_kind::track:
      out.keep_slot = r.as<res::track>().keep_slot;
      break;
    case op_kind::cache_unfinished: {
      const auto& c = r.as<res::cache_unfinished>();
      out.protected_len = i64(c.protected_len);
      out.indices = c.prefix;
      out.has_crc = true;
      out.node_mamba = c.node_slot;
      break;
    }
    case op_kind::evict: {
      const auto& e = r.as<res::evict>();
      out.tokens_evicted = i64(e.tokens_evicted);
      out.mamba_evicted = i64(e.mamba_evicted);
      break;
    }
    case op_kind::check: {
      const auto& c = r.as<res::check>();
      out.tree_tokens = i64(c.tree_tokens);
      out.tree_mamba = i64(c.tree_slots);
      if (op.sanity) out.sanity = c.sanity;
      out.sanity_detail = c.sanity_detail;
      break;
    }
    case op_kind::lock:
    case op_kind::unlock:
    case op_kind::finish:
      break;
  }
}

std::uint64_t replayer::execute(const trace_op& op, outcome& out) {
  std::optional<request_view> before;  // build() forgets a finished request
  if (floor_)
    if (auto it = reqs_.find(op.req); it != reqs_.end()) before = it->second;
  if (!build(op, out, cmds_)) return 0;
  const std::uint64_t ns = backend_->run(cmds_, results_);
  convert(op, results_, out);
  if (floor_ && out.error.empty()) time_floor(op, before, out);
  return ns;
}

void replayer::enable_floors() {
  if (!floor_) floor_ = std::make_unique<op_floor>(cfg_);
}

void replayer::time_floor(const trace_op& op, const std::optional<request_view>& before,
                          outcome& out) {
  switch (op.kind) {
    case op_kind::match: {
      auto it = reqs_.find(op.req);
      if (it == reqs_.end() || op.input_len == 0) return;
      it->second.cached = out.kv_matched;
      const auto& toks = conv_tokens(op.conv);
      const std::span<const token_id> key(toks.data(), op.input_len - 1);
      out.floor = floor_->time(
          op.conv, key, {out.kv_matched, 0, static_cast<std::size_t>(out.prefix_len.value_or(0))});
      return;
    }
    case op_kind::cache_unfinished: {
      auto it = reqs_.find(op.req);
      if (!before || it == reqs_.end()) return;
      const std::size_t len = before->input_len;
      out.floor = floor_->time(before->conv, conv_tokens(before->conv),
                               {len, len - std::min(before->cached, len), out.indices.size()});
      it->second.cached = len;
      return;
    }
    case op_kind::finish: {
      if (!before) return;
      const std::size_t total = before->input_len + op.output_len;
      out.floor = floor_->time(before->conv, conv_tokens(before->conv),
                               {total, total - std::min(before->cached, total), 0});
      floor_->touch(before->conv, total);  // after its floor: the tree re-read the key
      return;
    }
    default:
      return;
  }
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
