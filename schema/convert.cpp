#include "schema/convert.hpp"

#include <capnp/any.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace hc::wire_convert {
namespace {

/// capnp 0.9 list iterators are not standard iterators: copy element by element.
template <class T, class List>
void copy_list(std::vector<T>& out, List l) {
  out.clear();
  out.reserve(l.size());
  for (auto v : l)
    out.push_back(static_cast<T>(v));
}

/// The elements of a List(Int32) as they lie in the message: little-endian 4-byte words
/// when the list is encoded as one (always, from our writers); empty otherwise (a list a
/// writer upgraded to structs), and then the caller goes element by element.
std::span<const std::byte> int32_words(capnp::List<std::int32_t>::Reader l) {
  if constexpr (std::endian::native != std::endian::little) return {};
  const capnp::AnyList::Reader any(l);
  if (any.getElementSize() != capnp::ElementSize::FOUR_BYTES) return {};
  const kj::ArrayPtr<const kj::byte> raw = any.getRawBytes();
  if (raw.size() != std::size_t{l.size()} * 4) return {};
  return {reinterpret_cast<const std::byte*>(raw.begin()), raw.size()};
}

/// Token and KV-id lists: one copy of the words (16 K tokens a step at 32 requests).
template <class T>
requires(sizeof(T) == 4 &&
         std::is_integral_v<T>) void copy_list(std::vector<T>& out,
                                               capnp::List<std::int32_t>::Reader l) {
  const std::span<const std::byte> w = int32_words(l);
  if (w.empty() && l.size() != 0) {
    out.clear();
    out.reserve(l.size());
    for (auto v : l)
      out.push_back(static_cast<T>(v));
    return;
  }
  out.resize(l.size());
  if (!w.empty()) std::memcpy(out.data(), w.data(), w.size());
}

}  // namespace

wire::ErrorCode code_to_wire(errc c) noexcept {
  switch (c) {
    case errc::ok:
      return wire::ErrorCode::OK;
    case errc::invalid_argument:
      return wire::ErrorCode::INVALID_ARGUMENT;
    case errc::invalid_config:
      return wire::ErrorCode::INVALID_CONFIG;
    case errc::out_of_memory:
      return wire::ErrorCode::OUT_OF_MEMORY;
    case errc::not_found:
      return wire::ErrorCode::NOT_FOUND;
    case errc::double_free:
      return wire::ErrorCode::DOUBLE_FREE;
    case errc::invariant_violated:
      return wire::ErrorCode::INVARIANT_VIOLATED;
    case errc::parse_error:
      return wire::ErrorCode::PARSE_ERROR;
    case errc::io_error:
      return wire::ErrorCode::IO_ERROR;
    case errc::timeout:
      return wire::ErrorCode::TIMEOUT;
    case errc::interrupted:
      return wire::ErrorCode::INTERRUPTED;
  }
  return wire::ErrorCode::INVARIANT_VIOLATED;
}

errc code_from_wire(wire::ErrorCode c) noexcept {
  switch (c) {
    case wire::ErrorCode::OK:
      return errc::ok;
    case wire::ErrorCode::INVALID_ARGUMENT:
      return errc::invalid_argument;
    case wire::ErrorCode::INVALID_CONFIG:
      return errc::invalid_config;
    case wire::ErrorCode::OUT_OF_MEMORY:
      return errc::out_of_memory;
    case wire::ErrorCode::NOT_FOUND:
      return errc::not_found;
    case wire::ErrorCode::DOUBLE_FREE:
      return errc::double_free;
    case wire::ErrorCode::INVARIANT_VIOLATED:
      return errc::invariant_violated;
    case wire::ErrorCode::PARSE_ERROR:
      return errc::parse_error;
    case wire::ErrorCode::IO_ERROR:
      return errc::io_error;
    case wire::ErrorCode::TIMEOUT:
      return errc::timeout;
    case wire::ErrorCode::INTERRUPTED:
      return errc::interrupted;
    case wire::ErrorCode::UNAUTHENTICATED:
    case wire::ErrorCode::VERSION_MISMATCH:
    case wire::ErrorCode::CLOSED:
      return errc::invalid_argument;
  }
  return errc::parse_error;
}

void put_error(wire::Error::Builder b, const error& e) {
  b.setCode(code_to_wire(e.code));
  if (!e.message.empty()) b.setMessage(e.message);
}

error get_error(wire::Error::Reader r) {
  return {code_from_wire(r.getCode()), std::string(r.getMessage().cStr())};
}

namespace {

wire::Strategy strategy_to_wire(strategy s) {
  switch (s) {
    case strategy::no_buffer:
      return wire::Strategy::NO_BUFFER;
    case strategy::extra_buffer:
      return wire::Strategy::EXTRA_BUFFER;
    case strategy::extra_buffer_lazy:
      return wire::Strategy::EXTRA_BUFFER_LAZY;
  }
  return wire::Strategy::NO_BUFFER;
}

}  // namespace

status put_spec(wire::InstanceSpec::Builder b, const instance_spec& s) {
  // The spec's sizes are size_t; these wire fields are UInt32.
  const std::pair<const char*, std::size_t> narrow[] = {
      {"pageSize", s.page_size},
      {"ssmSlots", s.ssm_slots},
      {"chunkSize", s.chunk_size},
      {"trackInterval", s.track_interval},
      {"requestRows", s.request_rows},
      {"maxContextLen", s.max_context_len},
      {"slotsPerRequest", s.slots_per_request},
      {"prefetchThreshold", s.prefetch_threshold}};
  for (const auto& [field, v] : narrow)
    if (v > std::numeric_limits<std::uint32_t>::max())
      return error{errc::invalid_config, std::string(field) + " (" + std::to_string(v) +
                                             ") does not fit the protocol's 32-bit field"};
  b.setProtocolVersion(wire::PROTOCOL_VERSION);
  b.setModelId(text(s.model_id));
  b.setTpRank(s.tp_rank);
  b.setTpSize(s.tp_size);
  b.setPageSize(static_cast<std::uint32_t>(s.page_size));
  b.setKvTokens(s.kv_tokens);
  b.setKvBytesPerToken(s.kv_bytes_per_token);
  b.setSsmSlots(static_cast<std::uint32_t>(s.ssm_slots));
  b.setSsmSlotBytes(s.ssm_slot_bytes);
  b.setChunkSize(static_cast<std::uint32_t>(s.chunk_size));
  b.setStrategy(strategy_to_wire(s.strat));
  b.setTrackInterval(static_cast<std::uint32_t>(s.track_interval));
  b.setOverlap(s.overlap);
  b.setRequestRows(static_cast<std::uint32_t>(s.request_rows));
  b.setMaxContextLen(static_cast<std::uint32_t>(s.max_context_len));
  b.setSharedRows(s.shared_rows);
  b.setSharedTokens(s.shared_tokens);
  b.setSlotsPerRequest(static_cast<std::uint32_t>(s.slots_per_request));
  b.setNamespace(text(s.ns));
  b.setHicacheRatio(s.hicache_ratio);
  b.setHicacheBytes(s.hicache_bytes);
  b.setHicacheSsmBytes(s.hicache_ssm_bytes);
  b.setHicacheWritePolicy(static_cast<wire::WritePolicy>(s.hicache_write_policy));
  b.setPrefetchPolicy(static_cast<wire::PrefetchPolicy>(s.prefetch_policy));
  b.setPrefetchThreshold(static_cast<std::uint32_t>(s.prefetch_threshold));
  b.setHicacheStorage(s.hicache_storage);
  b.setDevice(s.device == device_kind::cuda ? wire::Device::CUDA : wire::Device::CPU);
  b.setDeviceOrdinal(s.device_ordinal);
  return {};
}

result<instance_spec> get_spec(wire::InstanceSpec::Reader r) {
  instance_spec s;
  s.model_id = text(r.getModelId());
  s.tp_rank = r.getTpRank();
  s.tp_size = r.getTpSize();
  s.page_size = r.getPageSize();
  s.kv_tokens = r.getKvTokens();
  s.kv_bytes_per_token = r.getKvBytesPerToken();
  s.ssm_slots = r.getSsmSlots();
  s.ssm_slot_bytes = r.getSsmSlotBytes();
  s.chunk_size = r.getChunkSize();
  switch (r.getStrategy()) {
    case wire::Strategy::NO_BUFFER:
      s.strat = strategy::no_buffer;
      break;
    case wire::Strategy::EXTRA_BUFFER:
      s.strat = strategy::extra_buffer;
      break;
    case wire::Strategy::EXTRA_BUFFER_LAZY:
      s.strat = strategy::extra_buffer_lazy;
      break;
    default:
      return error{
          errc::invalid_config,
          "strategy " + std::to_string(static_cast<unsigned>(r.getStrategy())) + " is unknown"};
  }
  s.track_interval = r.getTrackInterval();
  s.overlap = r.getOverlap();
  s.request_rows = r.getRequestRows();
  s.max_context_len = r.getMaxContextLen();
  s.shared_rows = r.getSharedRows();
  s.shared_tokens = r.getSharedTokens();
  s.slots_per_request = r.getSlotsPerRequest();
  s.ns = text(r.getNamespace());
  s.hicache_ratio = r.getHicacheRatio();
  s.hicache_bytes = r.getHicacheBytes();
  s.hicache_ssm_bytes = r.getHicacheSsmBytes();
  const auto wp = static_cast<unsigned>(r.getHicacheWritePolicy());
  const auto pp = static_cast<unsigned>(r.getPrefetchPolicy());
  if (wp > static_cast<unsigned>(write_policy::write_back))
    return error{errc::invalid_config, "hicacheWritePolicy " + std::to_string(wp) + " is unknown"};
  if (pp > static_cast<unsigned>(prefetch_termination::timeout))
    return error{errc::invalid_config, "prefetchPolicy " + std::to_string(pp) + " is unknown"};
  s.hicache_write_policy = static_cast<write_policy>(wp);
  s.prefetch_policy = static_cast<prefetch_termination>(pp);
  s.prefetch_threshold = r.getPrefetchThreshold();
  s.hicache_storage = r.getHicacheStorage();
  switch (r.getDevice()) {
    case wire::Device::CPU:
      s.device = device_kind::cpu;
      break;
    case wire::Device::CUDA:
      s.device = device_kind::cuda;
      break;
    default:
      return error{
          errc::invalid_config,
          "device " + std::to_string(static_cast<unsigned>(r.getDevice())) + " is unknown"};
  }
  s.device_ordinal = r.getDeviceOrdinal();
  return s;
}

namespace {

/// Sets a list through `init(size)` (the builder's initX); an empty vector leaves it unset.
template <class T, class Init>
void put_list(Init&& init, const std::vector<T>& v) {
  if (v.empty()) return;
  auto l = init(static_cast<unsigned>(v.size()));
  if constexpr (std::is_same_v<decltype(l), capnp::List<std::int32_t>::Builder> && sizeof(T) == 4 &&
                std::is_integral_v<T>) {
    // The builder's own words (a fresh List(Int32) is always 4-byte elements): one copy.
    const std::span<const std::byte> w = int32_words(l.asReader());
    if (w.size() == v.size() * 4) {
      std::memcpy(const_cast<std::byte*>(w.data()), v.data(), w.size());
      return;
    }
  }
  for (unsigned i = 0; i < l.size(); ++i)
    l.set(i, v[i]);
}

/// The wire's branching: a flag and a value.
template <class B>
void put_branching(B b, const std::optional<std::uint64_t>& v) {
  b.setHasBranching(v.has_value());
  b.setBranching(v.value_or(0));
}
template <class R>
std::optional<std::uint64_t> get_branching(R r) {
  if (!r.getHasBranching()) return std::nullopt;
  return r.getBranching();
}

/// Writes one command kind into its union member.
struct command_writer {
  wire::Command::Builder b;
  /// Create and Append: the request, its tokens, or the range of the session's arena.
  template <class Builder, class C>
  static void put_tokens(Builder x, const C& c) {
    x.setReq(c.req);
    put_list([&](unsigned n) { return x.initTokens(n); }, c.tokens);
    put_range(x, c.shared);
  }
  /// The range of the session's arena a create, append or lookup names, if any.
  template <class Builder>
  static void put_range(Builder x, const std::optional<cmd::token_range>& shared) {
    if (!shared) return;
    auto r = x.initShared();
    r.setAt(shared->at);
    r.setCount(shared->count);
  }
  void operator()(const cmd::create& c) { put_tokens(b.initCreate(), c); }
  void operator()(const cmd::append& c) { put_tokens(b.initAppend(), c); }
  void operator()(const cmd::match& c) { b.initMatch().setReq(c.req); }
  void operator()(const cmd::lock& c) { b.initLock().setReq(c.req); }
  void operator()(const cmd::unlock& c) { b.initUnlock().setReq(c.req); }
  void operator()(const cmd::alloc_req& c) { b.initAllocReq().setReq(c.req); }
  void operator()(const cmd::alloc_kv& c) {
    auto x = b.initAllocKv();
    x.setReq(c.req);
    x.setStart(c.start);
    x.setCount(c.count);
    x.setToEnd(c.to_end);
  }
  void operator()(const cmd::track& c) {
    auto x = b.initTrack();
    x.setReq(c.req);
    x.setSeqlen(c.seqlen);
    x.setFlip(c.flip);
  }
  void operator()(const cmd::prepare_extend& c) {
    auto x = b.initPrepareExtend();
    x.setReq(c.req);
    x.setStart(c.start);
    x.setCount(c.count);
  }
  void operator()(const cmd::prepare_decode& c) { b.initPrepareDecode().setReq(c.req); }
  void operator()(const cmd::process_decode& c) {
    auto x = b.initProcessDecode();
    x.setReq(c.req);
    x.setFinished(c.finished);
    x.setAcceptedDrafts(c.accepted_drafts);
  }
  void operator()(const cmd::cache_unfinished& c) {
    auto x = b.initCacheUnfinished();
    x.setReq(c.req);
    x.setFillLen(c.fill_len);
  }
  void operator()(const cmd::finish& c) {
    auto x = b.initFinish();
    x.setReq(c.req);
    x.setExpectedLen(c.expected_len);
  }
  void operator()(const cmd::abort& c) { b.initAbort().setReq(c.req); }
  void operator()(const cmd::not_admitted& c) { b.initNotAdmitted().setReq(c.req); }
  void operator()(const cmd::evict& c) {
    auto x = b.initEvict();
    x.setTokens(c.tokens);
    x.setSlots(c.slots);
  }
  void operator()(const cmd::check& c) { b.initCheck().setFull(c.full); }
  void operator()(const cmd::take_ops& c) {
    auto x = b.initTakeOps();
    put_list([&](unsigned n) { return x.initReqs(n); }, c.reqs);
    x.setBatch(c.batch);
  }
  void operator()(const cmd::lookup& c) {
    auto x = b.initLookup();
    put_list([&](unsigned n) { return x.initTokens(n); }, c.tokens);
    x.setWithoutIndices(c.without_indices);
    put_range(x, c.shared);
  }
  void operator()(const cmd::prefetch& c) {
    auto x = b.initPrefetch();
    x.setReq(c.req);
    x.setAdmitNow(c.admit_now);
  }
  void operator()(const cmd::pin& c) {
    auto x = b.initPin();
    put_list([&](unsigned n) { return x.initTokens(n); }, c.tokens);
    put_range(x, c.shared);
    x.setTtlMs(c.ttl_ms);
  }
  void operator()(const cmd::unpin& c) { b.initUnpin().setPin(c.pin); }
  void operator()(const cmd::demote& c) {
    auto x = b.initDemote();
    put_list([&](unsigned n) { return x.initTokens(n); }, c.tokens);
    put_range(x, c.shared);
  }
};

/// Writes one result body into its union member.
struct body_writer {
  wire::CommandResult::Builder b;
  void operator()(std::monostate) { b.setNone(); }
  void operator()(const res::match& r) {
    auto x = b.initMatch();
    x.setPrefixLen(r.prefix_len);
    x.setKvMatched(r.kv_matched);
    put_list([&](unsigned n) { return x.initIndices(n); }, r.indices);
    x.setNodeSlot(r.node_slot);
    put_branching(x, r.branching);
    x.setWorking(r.working);
    x.setLoadedTokens(r.loaded_tokens);
  }
  void operator()(const res::lookup& r) {
    auto x = b.initLookup();
    x.setPrefixLen(r.prefix_len);
    x.setKvMatched(r.kv_matched);
    put_list([&](unsigned n) { return x.initIndices(n); }, r.indices);
    x.setNodeSlot(r.node_slot);
    put_branching(x, r.branching);
  }
  void operator()(const res::alloc_req& r) {
    auto x = b.initAllocReq();
    x.setRow(r.row);
    x.setWorking(r.working);
    if (r.pingpong) {
      auto l = x.initPingpong(2);
      l.set(0, (*r.pingpong)[0]);
      l.set(1, (*r.pingpong)[1]);
    }
  }
  void operator()(const res::alloc_kv& r) {
    auto x = b.initAllocKv();
    put_list([&](unsigned n) { return x.initIndices(n); }, r.indices);
  }
  void operator()(const res::track& r) { b.initTrack().setKeepSlot(r.keep_slot); }
  void operator()(const res::prepare_extend& r) {
    auto x = b.initPrepareExtend();
    x.setMask(r.mask);
    x.setKernelSeqlen(r.kernel_seqlen);
    x.setTrackSlot(r.track_slot);
  }
  void operator()(const res::prepare_decode& r) {
    auto x = b.initPrepareDecode();
    x.setMask(r.mask);
    x.setTrackSlot(r.track_slot);
  }
  void operator()(const res::cache_unfinished& r) {
    auto x = b.initCacheUnfinished();
    x.setInserted(r.inserted);
    x.setProtectedLen(r.protected_len);
    put_list([&](unsigned n) { return x.initPrefix(n); }, r.prefix);
    x.setNodeSlot(r.node_slot);
  }
  void operator()(const res::finish& r) {
    auto x = b.initFinish();
    x.setInserted(r.inserted);
    x.setCachedLen(r.cached_len);
    x.setMambaExist(r.mamba_exist);
  }
  void operator()(const res::evict& r) {
    auto x = b.initEvict();
    x.setTokensEvicted(r.tokens_evicted);
    x.setMambaEvicted(r.mamba_evicted);
    x.setTokensFreedTotal(r.tokens_freed_total);
    x.setSlotsFreedTotal(r.slots_freed_total);
  }
  void operator()(const res::check& r) {
    auto x = b.initCheck();
    x.setTreeTokens(r.tree_tokens);
    x.setTreeSlots(r.tree_slots);
    x.setSanity(r.sanity);
    if (!r.sanity_detail.empty()) x.setSanityDetail(r.sanity_detail);
  }
  void operator()(const res::take_ops& r) {
    auto x = b.initTakeOps();
    x.setSnapshots(r.snapshots);
    x.setClears(r.clears);
    x.setCows(r.cows);
  }
  void operator()(const res::prefetch& r) {
    auto x = b.initPrefetch();
    x.setReady(r.ready);
    if (!r.outcome.empty()) x.setOutcome(r.outcome);
    x.setStorageHitTokens(r.storage_hit_tokens);
  }
  void operator()(const res::pin& r) {
    auto x = b.initPin();
    x.setPin(r.id);
    x.setPinnedLen(r.pinned_len);
    x.setKvMatched(r.kv_matched);
    x.setLoadedTokens(r.loaded_tokens);
  }
  void operator()(const res::demote& r) {
    auto x = b.initDemote();
    x.setMatchedTokens(r.matched_tokens);
    x.setDemotedTokens(r.demoted_tokens);
    x.setEvictedTokens(r.evicted_tokens);
    x.setSlotsFreed(r.slots_freed);
    x.setDeferredTokens(r.deferred_tokens);
    x.setKeptTokens(r.kept_tokens);
  }
};

/// Create, Append, Lookup, Pin and Demote: the tokens, or the range of the session's arena.
template <class C, class Reader>
void get_tokens(C& c, Reader r) {
  copy_list(c.tokens, r.getTokens());
  if (r.hasShared()) c.shared = cmd::token_range{r.getShared().getAt(), r.getShared().getCount()};
}

}  // namespace

void put_command(wire::Command::Builder b, const command& c) {
  std::visit(command_writer{b}, c);
}

result<command> get_command(wire::Command::Reader r) {
  using W = wire::Command;
  switch (r.which()) {
    case W::CREATE: {
      cmd::create c{r.getCreate().getReq(), 0, {}, {}};
      get_tokens(c, r.getCreate());
      return command(std::move(c));
    }
    case W::APPEND: {
      cmd::append c{r.getAppend().getReq(), {}, {}};
      get_tokens(c, r.getAppend());
      return command(std::move(c));
    }
    case W::MATCH:
      return command(cmd::match{r.getMatch().getReq()});
    case W::LOCK:
      return command(cmd::lock{r.getLock().getReq()});
    case W::UNLOCK:
      return command(cmd::unlock{r.getUnlock().getReq()});
    case W::ALLOC_REQ:
      return command(cmd::alloc_req{r.getAllocReq().getReq()});
    case W::ALLOC_KV: {
      auto x = r.getAllocKv();
      return command(cmd::alloc_kv{x.getReq(), x.getStart(), x.getCount(), x.getToEnd()});
    }
    case W::TRACK: {
      auto x = r.getTrack();
      return command(cmd::track{x.getReq(), x.getSeqlen(), x.getFlip()});
    }
    case W::PREPARE_EXTEND: {
      auto x = r.getPrepareExtend();
      return command(cmd::prepare_extend{x.getReq(), x.getStart(), x.getCount()});
    }
    case W::PREPARE_DECODE:
      return command(cmd::prepare_decode{r.getPrepareDecode().getReq()});
    case W::PROCESS_DECODE: {
      auto x = r.getProcessDecode();
      return command(cmd::process_decode{x.getReq(), x.getFinished(), x.getAcceptedDrafts()});
    }
    case W::CACHE_UNFINISHED: {
      auto x = r.getCacheUnfinished();
      return command(cmd::cache_unfinished{x.getReq(), x.getFillLen()});
    }
    case W::FINISH: {
      auto x = r.getFinish();
      return command(cmd::finish{x.getReq(), x.getExpectedLen()});
    }
    case W::ABORT:
      return command(cmd::abort{r.getAbort().getReq()});
    case W::NOT_ADMITTED:
      return command(cmd::not_admitted{r.getNotAdmitted().getReq()});
    case W::EVICT: {
      auto x = r.getEvict();
      return command(cmd::evict{x.getTokens(), x.getSlots()});
    }
    case W::CHECK:
      return command(cmd::check{r.getCheck().getFull()});
    case W::TAKE_OPS: {
      cmd::take_ops c;
      copy_list(c.reqs, r.getTakeOps().getReqs());
      c.batch = r.getTakeOps().getBatch();
      return command(std::move(c));
    }
    case W::LOOKUP: {
      cmd::lookup c;
      get_tokens(c, r.getLookup());
      c.without_indices = r.getLookup().getWithoutIndices();
      return command(std::move(c));
    }
    case W::PREFETCH: {
      auto x = r.getPrefetch();
      return command(cmd::prefetch{x.getReq(), x.getAdmitNow()});
    }
    case W::PIN: {
      cmd::pin c;
      get_tokens(c, r.getPin());
      c.ttl_ms = r.getPin().getTtlMs();
      return command(std::move(c));
    }
    case W::UNPIN:
      return command(cmd::unpin{r.getUnpin().getPin()});
    case W::DEMOTE: {
      cmd::demote c;
      get_tokens(c, r.getDemote());
      return command(std::move(c));
    }
  }
  return error{errc::invalid_argument,
               "command kind " + std::to_string(static_cast<unsigned>(r.which())) +
                   " is unknown (protocol " + std::to_string(wire::PROTOCOL_VERSION) + ")"};
}

void put_result(wire::CommandResult::Builder b, const command_result& r) {
  put_error(b.initError(), {r.code, r.error});
  auto p = b.initPools();
  p.setKvAvail(r.pools.kv_avail);
  p.setSlotsAvail(r.pools.slots_avail);
  p.setRowsAvail(r.pools.rows_avail);
  p.setFullEvictable(r.pools.full_evictable);
  p.setFullProtected(r.pools.full_protected);
  p.setMambaEvictable(r.pools.mamba_evictable);
  p.setMambaProtected(r.pools.mamba_protected);
  b.setElapsedNs(r.elapsed_ns);
  std::visit(body_writer{b}, r.body);
}

command_result get_result(wire::CommandResult::Reader b) {
  command_result r;
  error e = get_error(b.getError());
  r.code = e.code;
  r.error = std::move(e.message);
  auto p = b.getPools();
  r.pools = {p.getKvAvail(),       p.getSlotsAvail(),    p.getRowsAvail(),
             p.getFullEvictable(), p.getFullProtected(), p.getMambaEvictable(),
             p.getMambaProtected()};
  r.elapsed_ns = b.getElapsedNs();
  using W = wire::CommandResult;
  switch (b.which()) {
    case W::NONE:
      break;
    case W::MATCH: {
      auto x = b.getMatch();
      res::match m;
      m.prefix_len = x.getPrefixLen();
      m.kv_matched = x.getKvMatched();
      copy_list(m.indices, x.getIndices());
      m.node_slot = x.getNodeSlot();
      m.branching = get_branching(x);
      m.working = x.getWorking();
      m.loaded_tokens = x.getLoadedTokens();
      r.body = std::move(m);
      break;
    }
    case W::LOOKUP: {
      auto x = b.getLookup();
      res::lookup l;
      l.prefix_len = x.getPrefixLen();
      l.kv_matched = x.getKvMatched();
      copy_list(l.indices, x.getIndices());
      l.node_slot = x.getNodeSlot();
      l.branching = get_branching(x);
      r.body = std::move(l);
      break;
    }
    case W::ALLOC_REQ: {
      auto x = b.getAllocReq();
      res::alloc_req a{x.getRow(), x.getWorking(), std::nullopt};
      if (x.getPingpong().size() == 2)
        a.pingpong = std::array<slot_id, 2>{x.getPingpong()[0], x.getPingpong()[1]};
      r.body = a;
      break;
    }
    case W::ALLOC_KV: {
      res::alloc_kv a;
      copy_list(a.indices, b.getAllocKv().getIndices());
      r.body = std::move(a);
      break;
    }
    case W::TRACK:
      r.body = res::track{b.getTrack().getKeepSlot()};
      break;
    case W::PREPARE_EXTEND: {
      auto x = b.getPrepareExtend();
      r.body = res::prepare_extend{x.getMask(), x.getKernelSeqlen(), x.getTrackSlot()};
      break;
    }
    case W::PREPARE_DECODE: {
      auto x = b.getPrepareDecode();
      r.body = res::prepare_decode{x.getMask(), x.getTrackSlot()};
      break;
    }
    case W::CACHE_UNFINISHED: {
      auto x = b.getCacheUnfinished();
      res::cache_unfinished c{x.getInserted(), x.getProtectedLen(), {}, x.getNodeSlot()};
      copy_list(c.prefix, x.getPrefix());
      r.body = std::move(c);
      break;
    }
    case W::FINISH: {
      auto x = b.getFinish();
      r.body = res::finish{x.getInserted(), x.getCachedLen(), x.getMambaExist()};
      break;
    }
    case W::EVICT: {
      auto x = b.getEvict();
      r.body = res::evict{x.getTokensEvicted(), x.getMambaEvicted(), x.getTokensFreedTotal(),
                          x.getSlotsFreedTotal()};
      break;
    }
    case W::CHECK: {
      auto x = b.getCheck();
      r.body = res::check{x.getTreeTokens(), x.getTreeSlots(), x.getSanity(),
                          x.getSanityDetail().cStr()};
      break;
    }
    case W::TAKE_OPS: {
      auto x = b.getTakeOps();
      r.body = res::take_ops{x.getSnapshots(), x.getClears(), x.getCows()};
      break;
    }
    case W::PREFETCH: {
      auto x = b.getPrefetch();
      r.body = res::prefetch{x.getReady(), x.getOutcome().cStr(), x.getStorageHitTokens()};
      break;
    }
    case W::PIN: {
      auto x = b.getPin();
      r.body = res::pin{x.getPin(), x.getPinnedLen(), x.getKvMatched(), x.getLoadedTokens()};
      break;
    }
    case W::DEMOTE: {
      auto x = b.getDemote();
      r.body = res::demote{x.getMatchedTokens(), x.getDemotedTokens(),  x.getEvictedTokens(),
                           x.getSlotsFreed(),    x.getDeferredTokens(), x.getKeptTokens()};
      break;
    }
    default:
      if (r.ok()) {
        r.code = errc::parse_error;
        r.error = "result kind " + std::to_string(static_cast<unsigned>(b.which())) +
                  " is unknown (protocol " + std::to_string(wire::PROTOCOL_VERSION) + ")";
      }
      break;
  }
  return r;
}

void put_pool_info(wire::PoolInfo::Builder b, const pool_info& p) {
  b.setKvShm(p.kv_shm);
  b.setKvBytes(p.kv_bytes);
  b.setSsmShm(p.ssm_shm);
  b.setSsmBytes(p.ssm_bytes);
  b.setKvBytesPerToken(p.kv_bytes_per_token);
  b.setSsmSlotBytes(p.ssm_slot_bytes);
  b.setInstanceId(p.instance_id);
  b.setDevice(p.device == device_kind::cuda ? wire::Device::CUDA : wire::Device::CPU);
  b.setDeviceOrdinal(p.device_ordinal);
  b.setKvIpcHandle(kj::arrayPtr(reinterpret_cast<const kj::byte*>(p.kv_ipc_handle.data()),
                                p.kv_ipc_handle.size()));
  b.setSsmIpcHandle(kj::arrayPtr(reinterpret_cast<const kj::byte*>(p.ssm_ipc_handle.data()),
                                 p.ssm_ipc_handle.size()));
  b.setReadyEventIpcHandle(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(p.ready_event_ipc_handle.data()),
                   p.ready_event_ipc_handle.size()));
  b.setDoneEventIpcHandle(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(p.done_event_ipc_handle.data()),
                   p.done_event_ipc_handle.size()));
  b.setRowsShm(p.rows_shm);
  b.setRowsBytes(p.rows_bytes);
  b.setRowWidth(p.row_width);
  b.setTokensShm(p.tokens_shm);
  b.setTokensBytes(p.tokens_bytes);
}

pool_info get_pool_info(wire::PoolInfo::Reader r) {
  pool_info p;
  p.kv_shm = r.getKvShm().cStr();
  p.kv_bytes = r.getKvBytes();
  p.ssm_shm = r.getSsmShm().cStr();
  p.ssm_bytes = r.getSsmBytes();
  p.kv_bytes_per_token = r.getKvBytesPerToken();
  p.ssm_slot_bytes = r.getSsmSlotBytes();
  p.instance_id = r.getInstanceId();
  p.device = r.getDevice() == wire::Device::CUDA ? device_kind::cuda : device_kind::cpu;
  p.device_ordinal = r.getDeviceOrdinal();
  const auto kv = r.getKvIpcHandle();
  p.kv_ipc_handle.assign(reinterpret_cast<const char*>(kv.begin()), kv.size());
  const auto ssm = r.getSsmIpcHandle();
  p.ssm_ipc_handle.assign(reinterpret_cast<const char*>(ssm.begin()), ssm.size());
  const auto ready = r.getReadyEventIpcHandle();
  p.ready_event_ipc_handle.assign(reinterpret_cast<const char*>(ready.begin()), ready.size());
  const auto done = r.getDoneEventIpcHandle();
  p.done_event_ipc_handle.assign(reinterpret_cast<const char*>(done.begin()), done.size());
  p.rows_shm = r.getRowsShm().cStr();
  p.rows_bytes = r.getRowsBytes();
  p.row_width = r.getRowWidth();
  p.tokens_shm = r.getTokensShm().cStr();
  p.tokens_bytes = r.getTokensBytes();
  return p;
}

namespace {
/// Words of a struct of type T (data and pointer sections).
template <class T>
constexpr std::uint64_t struct_words() {
  constexpr capnp::_::StructSize size = capnp::_::structSize<T>();
  return size.data + size.pointers;
}
template <class... T>
constexpr std::uint64_t largest_struct_words() {
  return std::max({struct_words<T>()...});
}
/// Words of a list of n elements of `bytes` bytes each, or of a Text of n bytes.
constexpr std::uint64_t list_words(std::size_t n, std::size_t bytes) {
  return (n * bytes + 7) / 8;
}
constexpr std::uint64_t text_words(const std::string& s) {
  return s.empty() ? 0 : list_words(s.size() + 1, 1);
}
}  // namespace

capnp::MessageSize step_request_size(std::span<const command> cmds) {
  using C = wire::Command;
  constexpr std::uint64_t per_command =
      struct_words<C>() +
      largest_struct_words<C::ForRequest, C::Create, C::Append, C::TokenRange, C::AllocKv, C::Track,
                           C::PrepareExtend, C::ProcessDecode, C::CacheUnfinished, C::Finish,
                           C::Evict, C::Check, C::TakeOps, C::Lookup, C::Prefetch, C::Pin, C::Unpin,
                           C::Demote>() +
      struct_words<C::TokenRange>();
  std::uint64_t words = 8 + 1;  // the root, the list's tag; each command inline below
  for (const command& c : cmds) {
    words += per_command;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (requires { x.tokens.size(); }) words += list_words(x.tokens.size(), 4);
          if constexpr (std::is_same_v<T, cmd::take_ops>) words += list_words(x.reqs.size(), 8);
        },
        c);
  }
  return {words, 0};
}

capnp::MessageSize step_results_size(std::span<const command_result> results) {
  using R = wire::CommandResult;
  constexpr std::uint64_t per_result =
      struct_words<R>() + struct_words<wire::Error>() + struct_words<wire::PoolState>() +
      largest_struct_words<R::Match, R::Lookup, R::AllocReq, R::AllocKv, R::Track, R::PrepareExtend,
                           R::PrepareDecode, R::CacheUnfinished, R::Finish, R::Evict, R::Check,
                           R::TakeOps, R::Prefetch, R::Pin, R::Demote>();
  std::uint64_t words = 8 + struct_words<wire::Error>() + 1;  // root, its error, list tag
  for (const command_result& r : results) {
    words += per_result + text_words(r.error);
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (requires { x.indices.size(); }) words += list_words(x.indices.size(), 4);
          if constexpr (std::is_same_v<T, res::cache_unfinished>)
            words += list_words(x.prefix.size(), 4);
          if constexpr (std::is_same_v<T, res::alloc_req>) words += 1;  // pingpong
          if constexpr (std::is_same_v<T, res::check>) words += text_words(x.sanity_detail);
          if constexpr (std::is_same_v<T, res::prefetch>) words += text_words(x.outcome);
        },
        r.body);
  }
  return {words, 0};
}

}  // namespace hc::wire_convert
