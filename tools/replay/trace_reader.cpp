#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/common/strategy.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "tools/replay/replay_backend.hpp"
#include "tools/replay/trace.hpp"

namespace hc::replay {
namespace {

using nlohmann::json;

struct gz_closer {
  void operator()(gzFile f) const { gzclose(f); }
};

result<op_kind> kind_of(std::string_view s) {
  if (s == "match") return op_kind::match;
  if (s == "lock") return op_kind::lock;
  if (s == "unlock") return op_kind::unlock;
  if (s == "alloc_req") return op_kind::alloc_req;
  if (s == "alloc_kv") return op_kind::alloc_kv;
  if (s == "track") return op_kind::track;
  if (s == "cache_unfinished") return op_kind::cache_unfinished;
  if (s == "finish") return op_kind::finish;
  if (s == "evict") return op_kind::evict;
  if (s == "check") return op_kind::check;
  return error{errc::parse_error, "unknown op '" + std::string(s) + "'"};
}

// A JSON number read as the integer type T, refused when it is not an integer or out of T's range:
// nlohmann's get<T>() casts a float or a negative number without a check (a float out of range is
// undefined behaviour, found by fuzz_trace_reader).
template <class T>
T integer(const json& v, const char* key) {
  const auto bad = [&](const char* why) {
    return std::invalid_argument(std::string("field '") + key + "' " + why + ", got " + v.dump());
  };
  if (!v.is_number_integer()) throw bad("must be an integer");
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (!std::in_range<T>(u)) throw bad("is too large");
    return static_cast<T>(u);
  }
  const auto i = v.get<std::int64_t>();
  if (!std::in_range<T>(i)) throw bad(i < 0 ? "must not be negative" : "is out of range");
  return static_cast<T>(i);
}

template <class T>
std::vector<T> integers(const json& v, const char* key) {
  if (!v.is_array())
    throw std::invalid_argument(std::string("field '") + key + "' must be an array");
  std::vector<T> out;
  out.reserve(v.size());
  for (const json& e : v)
    out.push_back(integer<T>(e, key));
  return out;
}

template <class T>
T get_or(const json& j, const char* key, T def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return integer<T>(*it, key);
  else
    return it->get<T>();
}

template <class T>
T required(const json& j, const char* key) {
  return integer<T>(j.at(key), key);
}

status parse_header(const json& j, trace_config& c) {
  if (get_or<std::string>(j, "op", "") != "config")
    return {errc::parse_error, "line 1 is not a config header"};
  if (get_or<std::string>(j, "format", "") != "sglang-mamba-trace")
    return {errc::parse_error, "format is not sglang-mamba-trace"};
  if (get_or<int>(j, "version", 0) != 1) return {errc::parse_error, "unsupported trace version"};
  c.page_size = required<std::size_t>(j, "page_size");
  c.strategy = j.at("strategy").get<std::string>();
  if (!parse_strategy(c.strategy))
    return {errc::parse_error,
            "strategy '" + c.strategy + "' is not no_buffer, extra_buffer or extra_buffer_lazy"};
  c.ping_pong_size = get_or<int>(j, "ping_pong_size", 2);
  if (c.ping_pong_size != 1 && c.ping_pong_size != 2)
    return {errc::parse_error, "ping_pong_size must be 1 (overlap scheduling off) or 2 (on), not " +
                                   std::to_string(c.ping_pong_size)};
  c.chunk_size = get_or<std::size_t>(j, "mamba_cache_chunk_size", 64);
  c.track_interval = get_or<std::size_t>(j, "mamba_track_interval", 256);
  c.state_per_req = get_or<std::size_t>(j, "mamba_state_per_req", 3);
  c.kv_pool_tokens = required<std::size_t>(j, "kv_pool_tokens");
  c.mamba_pool_slots = required<std::size_t>(j, "mamba_pool_slots");
  c.req_pool_rows = required<std::size_t>(j, "req_pool_rows");
  c.max_context_len = get_or<std::size_t>(j, "max_context_len", 0);
  const json& t = j.at("tokens");
  if (get_or<std::string>(t, "generator", "") != "splitmix64-v1")
    return {errc::parse_error, "unsupported token generator"};
  c.seed = required<std::uint64_t>(t, "seed");
  c.vocab = required<std::uint64_t>(t, "vocab");
  c.sys_len = required<std::size_t>(t, "sys_len");
  c.sys_groups = required<std::size_t>(t, "sys_groups");
  c.conv_lengths = integers<std::size_t>(t.at("conv_lengths"), "conv_lengths");
  c.self_test = get_or<json>(j, "self_test", json());
  if (c.page_size == 0 || c.vocab == 0 || c.sys_groups == 0 || c.kv_pool_tokens % c.page_size != 0)
    return {errc::parse_error,
            "config: page_size, vocab and sys_groups must be > 0 and "
            "kv_pool_tokens a multiple of page_size"};
  // Token ids are 32-bit, and a conversation is made whole when an op first names it: a
  // vocabulary past 2^31 - 1 would wrap to negative ids, and a conversation longer than
  // the KV pool (which holds every token of a running request) cannot be run — one of 10^12
  // tokens aborted the replay with std::bad_alloc.
  if (c.vocab > static_cast<std::uint64_t>(std::numeric_limits<token_id>::max()))
    return {errc::parse_error, "config: vocab " + std::to_string(c.vocab) +
                                   " is more than 32-bit token ids can hold (at most " +
                                   std::to_string(std::numeric_limits<token_id>::max()) + ")"};
  for (std::size_t i = 0; i < c.conv_lengths.size(); ++i)
    if (c.conv_lengths[i] > c.kv_pool_tokens)
      return {errc::parse_error, "config: conv_lengths[" + std::to_string(i) +
                                     "] = " + std::to_string(c.conv_lengths[i]) +
                                     " is longer than the KV pool (" +
                                     std::to_string(c.kv_pool_tokens) +
                                     " tokens), which holds every token of a running request"};
  // The cache the header describes, checked as a node checks an instance it is asked to
  // open (the names in the message are the RPC spec's: chunkSize = mamba_cache_chunk_size,
  // ssmSlots = mamba_pool_slots, requestRows = req_pool_rows).
  if (status v = validate(spec_of(c)); !v)
    return {errc::parse_error, "config: not a cache this trace can run on: " + v.err().message};
  return {};
}

status parse_op(const json& j, trace_op& op) {
  op.name = j.at("op").get<std::string>();
  auto k = kind_of(op.name);
  if (!k) return k.err();
  op.kind = *k;
  op.index = get_or<std::int64_t>(j, "i", -1);
  op.phase = get_or<std::string>(j, "phase", "");
  op.req = get_or<std::uint64_t>(j, "req", 0);
  op.conv = get_or<std::size_t>(j, "conv", 0);
  op.input_len = get_or<std::size_t>(j, "input_len", 0);
  op.start = get_or<std::size_t>(j, "start", 0);
  op.n = get_or<std::size_t>(j, "n", 0);
  op.seqlen = get_or<std::size_t>(j, "seqlen", 0);
  op.output_len = get_or<std::size_t>(j, "output_len", 0);
  op.num_tokens = get_or<std::size_t>(j, "num_tokens", 0);
  op.mamba_num = get_or<std::size_t>(j, "mamba_num", 0);
  op.flip = get_or<bool>(j, "flip", false);
  op.sanity = get_or<bool>(j, "sanity", false);
  op.expect = get_or<json>(j, "expect", json());
  const bool needs_req = op.kind != op_kind::evict && op.kind != op_kind::check;
  if (needs_req && !j.contains("req"))
    return {errc::parse_error, "op '" + op.name + "' has no req"};
  if (op.kind == op_kind::match && op.input_len == 0)
    return {errc::parse_error, "match needs input_len >= 1"};
  return {};
}

}  // namespace

result<trace> read_trace(const std::string& path) {
  const bool from_stdin = path == "-";        // `zcat trace.gz | hcctl replay -`
  const std::string name = trace_name(path);  // what errors name
  errno = 0;
  // gzopen / gzdopen also read plain text; the dup'd descriptor is gzclose's to close.
  std::unique_ptr<gzFile_s, gz_closer> f(from_stdin ? gzdopen(::dup(STDIN_FILENO), "rb")
                                                    : gzopen(path.c_str(), "rb"));
  if (!f)
    return error{errc::io_error, "cannot open trace '" + name +
                                     "': " + (errno != 0 ? std::strerror(errno) : "out of memory")};
  gzbuffer(f.get(), 1 << 20);
  trace t;
  std::size_t lineno = 0;     // the file's line number (what an error names)
  std::size_t taken = 0;      // lines that are not blank: the first is the header
  bool unterminated = false;  // the line being taken is the last, without its newline
  // One line (its newline excluded): blank ones are skipped.
  auto take_line = [&](std::string_view line) -> status {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return {};
    ++taken;
    auto at = [&] { return name + ":" + std::to_string(lineno) + ": "; };
    if (line.find('\0') != std::string_view::npos)
      return error{errc::parse_error, at() + "a NUL byte: not a text trace"};
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      return error{errc::parse_error,
                   at() + "not a JSON object" +
                       (unterminated ? " (the file ends inside this line: cut short?)" : "")};
    try {
      if (taken == 1) {
        if (status s = parse_header(j, t.config); !s)
          return error{s.err().code, at() + s.err().message};
        return {};
      }
      trace_op op;
      op.line = lineno;
      if (status s = parse_op(j, op); !s) return error{s.err().code, at() + s.err().message};
      // A conversation the header does not list (conv 10^12 aborted the replay: its
      // tokens' cache was sized to the index).
      if (j.contains("conv") && op.conv >= t.config.conv_lengths.size())
        return error{errc::parse_error, at() + "conv " + std::to_string(op.conv) +
                                            ": the header lists " +
                                            std::to_string(t.config.conv_lengths.size()) +
                                            " conversations (tokens.conv_lengths)"};
      t.ops.push_back(std::move(op));
    } catch (const std::exception& e) {  // json::exception, or integer()'s invalid_argument
      return error{errc::parse_error, at() + e.what()};
    }
    return {};
  };
  // Read in blocks and split on newlines ourselves: a line read as a C string (gzgets)
  // would end at a NUL byte.
  auto read_failed = [&] {
    int err = 0;
    (void)gzerror(f.get(), &err);
    return err != Z_OK && err != Z_STREAM_END;
  };
  auto read_error = [&] {
    int err = 0;
    return error{errc::io_error, name + ": read error: " + gzerror(f.get(), &err)};
  };
  std::string pending;  // read past the last newline
  std::vector<char> buf(1 << 16);
  for (;;) {
    const int n = gzread(f.get(), buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0 || (n == 0 && !gzeof(f.get()))) return read_error();
    if (n == 0) break;
    pending.append(buf.data(), static_cast<std::size_t>(n));
    std::size_t from = 0;
    for (std::size_t nl; (nl = pending.find('\n', from)) != std::string::npos; from = nl + 1)
      if (status s = take_line(std::string_view(pending).substr(from, nl - from)); !s)
        return s.err();
    pending.erase(0, from);
  }
  if (read_failed()) return read_error();  // a gzip stream cut short
  // A last line without its newline (none: an empty line, skipped as blank).
  unterminated = true;
  if (!pending.empty())
    if (status s = take_line(pending); !s) return s.err();
  if (taken == 0) return error{errc::parse_error, name + ": empty trace"};
  return t;
}

std::uint64_t token_generator::splitmix64(std::uint64_t x) noexcept {
  std::uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

token_id token_generator::token(std::uint64_t stream, std::uint64_t i) const noexcept {
  return static_cast<token_id>(1 + splitmix64((stream << 32) | i) % cfg_.vocab);
}

std::vector<token_id> token_generator::conversation(std::size_t c, std::size_t n) const {
  std::vector<token_id> out(n);
  const std::uint64_t sys_stream = (cfg_.seed << 21) + 1 + c % cfg_.sys_groups;
  const std::uint64_t conv_stream = (cfg_.seed << 21) + (1ull << 20) + c;
  for (std::size_t i = 0; i < n; ++i)
    out[i] = i < cfg_.sys_len ? token(sys_stream, i) : token(conv_stream, i - cfg_.sys_len);
  return out;
}

status token_generator::self_test() const {
  if (!cfg_.self_test.is_object()) return {};
  auto check = [&](const char* key, std::uint64_t stream) -> status {
    auto it = cfg_.self_test.find(key);
    if (it == cfg_.self_test.end()) return {};
    std::vector<std::int64_t> want;
    try {
      want = integers<std::int64_t>(*it, key);
    } catch (const std::invalid_argument& e) {
      return {errc::parse_error, std::string("token generator self test: ") + e.what()};
    }
    for (std::size_t i = 0; i < want.size(); ++i)
      if (token(stream, i) != want[i])
        return {errc::parse_error, std::string("token generator self test '") + key +
                                       "' differs at " + std::to_string(i)};
    return {};
  };
  if (status s = check("conv_stream_0_first8", (cfg_.seed << 21) + (1ull << 20)); !s) return s;
  return check("sys_stream_0_first4", (cfg_.seed << 21) + 1);
}

}  // namespace hc::replay
