#include "tools/replay/op_floor.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace hc::replay {
namespace {

/// Tokens [from, to) of a conversation's key, and ids of the same length.
void fill(const std::vector<token_id>& tokens, std::size_t from, std::size_t to,
          std::vector<token_id>& key, std::vector<kv_index>& ids) {
  key.assign(tokens.begin() + static_cast<std::ptrdiff_t>(from),
             tokens.begin() + static_cast<std::ptrdiff_t>(to));
  ids.resize(to - from);
  for (std::size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<kv_index>(from + i);
}

/// Splits [from, to) of a conversation into its system-prompt part (below `sys`) and its
/// own part, calling f(in_sys, begin, end) with positions local to that part's buffer and
/// the conversation position of `begin` as a fourth argument.
template <class F>
void split(std::size_t from, std::size_t to, std::size_t sys, F&& f) {
  if (from < sys) f(true, from, std::min(to, sys), from);
  if (to > sys) {
    const std::size_t b = std::max(from, sys);
    f(false, b - sys, to - sys, b);
  }
}

std::uint64_t since(std::chrono::steady_clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
}

}  // namespace

op_floor::op_floor(const trace_config& cfg) : cfg_(cfg), gen_(cfg_) {
  const std::size_t groups = std::max<std::size_t>(1, cfg_.sys_groups);
  std::size_t longest = 0;
  for (std::size_t n : cfg_.conv_lengths)
    longest = std::max(longest, n);
  const std::size_t sys_len = std::min(cfg_.sys_len, longest);
  sys_.resize(groups);
  for (std::size_t g = 0; g < groups && g < cfg_.conv_lengths.size(); ++g)
    // Conversation g is the first of group g (conversation c belongs to group c % groups).
    fill(gen_.conversation(g, sys_len), 0, sys_len, sys_[g].key, sys_[g].ids);
  conv_.resize(cfg_.conv_lengths.size());
  out_.assign(longest, 0);  // written once: no first touch inside a timed copy
  row_.assign(longest, 1);
}

op_floor::shadow& op_floor::conv_shadow(std::size_t conv) {
  shadow& s = conv_[conv];
  const std::size_t len = cfg_.conv_lengths[conv];
  const std::size_t sys_len = sys_.front().key.size();
  if (s.key.empty() && len > sys_len)
    fill(gen_.conversation(conv, len), sys_len, len, s.key, s.ids);
  return s;
}

void op_floor::pass(const shadow& sys, shadow& own, std::span<const token_id> query,
                    const floor_work& w) {
  const std::size_t sys_len = sys.key.size();
  int diff = 0;
  // Read the query against the cached key where it was cached...
  split(0, w.compared - w.written, sys_len,
        [&](bool in_sys, std::size_t b, std::size_t e, std::size_t at) {
          const token_id* key = (in_sys ? sys.key.data() : own.key.data()) + b;
          diff |= std::memcmp(query.data() + at, key, (e - b) * sizeof(token_id));
        });
  // ...and write the new tail's key (from the query) and ids (from the request's row).
  split(w.compared - w.written, w.compared, sys_len,
        [&](bool in_sys, std::size_t b, std::size_t e, std::size_t at) {
          if (in_sys) return;  // the system prompt is cached by its first conversation
          std::memcpy(own.key.data() + b, query.data() + at, (e - b) * sizeof(token_id));
          std::memcpy(own.ids.data() + b, row_.data() + at, (e - b) * sizeof(kv_index));
        });
  // The ids handed back.
  split(0, w.copied, sys_len, [&](bool in_sys, std::size_t b, std::size_t e, std::size_t at) {
    const kv_index* ids = (in_sys ? sys.ids.data() : own.ids.data()) + b;
    std::memcpy(out_.data() + at, ids, (e - b) * sizeof(kv_index));
  });
  asm volatile("" ::: "memory");  // the copies are done before the clock is read
  sink_ += diff;
}

floor_sample op_floor::time(std::size_t conv, std::span<const token_id> query, floor_work w) {
  if (conv >= conv_.size()) return {};
  const std::size_t len = cfg_.conv_lengths[conv];
  w.compared = std::min({w.compared, query.size(), len});
  w.written = std::min(w.written, w.compared);
  w.copied = std::min(w.copied, len);
  const shadow& sys = sys_[conv % sys_.size()];
  shadow& own = conv_shadow(conv);
  floor_sample t;
  t.work = w;
  auto t0 = std::chrono::steady_clock::now();
  pass(sys, own, query, w);
  t.first_ns = since(t0);
  t0 = std::chrono::steady_clock::now();
  pass(sys, own, query, w);
  t.warm_ns = since(t0);
  return t;
}

void op_floor::touch(std::size_t conv, std::size_t len) {
  if (conv >= conv_.size()) return;
  shadow& sys = sys_[conv % sys_.size()];
  shadow& own = conv_shadow(conv);
  std::int64_t sum = 0;
  split(0, std::min(len, cfg_.conv_lengths[conv]), sys.key.size(),
        [&](bool in_sys, std::size_t b, std::size_t e, std::size_t) {
          shadow& s = in_sys ? sys : own;
          for (std::size_t i = b; i < e; ++i) {
            sum += s.key[i];
            s.ids[i] = static_cast<kv_index>(i);
          }
        });
  sink_ += sum & 1;
}

}  // namespace hc::replay
