#include "schema/convert.hpp"

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

void put_spec(wire::InstanceSpec::Builder b, const instance_spec& s) {
  b.setProtocolVersion(wire::PROTOCOL_VERSION);
  b.setModelId(s.model_id);
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
  b.setSlotsPerRequest(static_cast<std::uint32_t>(s.slots_per_request));
  b.setNamespace(s.ns);
  b.setHicacheRatio(s.hicache_ratio);
  b.setHicacheBytes(s.hicache_bytes);
  b.setHicacheWritePolicy(static_cast<wire::WritePolicy>(s.hicache_write_policy));
  b.setPrefetchPolicy(static_cast<wire::PrefetchPolicy>(s.prefetch_policy));
  b.setPrefetchThreshold(static_cast<std::uint32_t>(s.prefetch_threshold));
  b.setHicacheStorage(s.hicache_storage);
}

result<instance_spec> get_spec(wire::InstanceSpec::Reader r) {
  instance_spec s;
  s.model_id = r.getModelId().cStr();
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
  s.slots_per_request = r.getSlotsPerRequest();
  s.ns = r.getNamespace().cStr();
  s.hicache_ratio = r.getHicacheRatio();
  s.hicache_bytes = r.getHicacheBytes();
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
  return s;
}

void put_command(wire::Command::Builder b, const command& c) {
  b.setKind(static_cast<wire::CommandKind>(c.kind));
  b.setReq(c.req);
  if (!c.tokens.empty()) {
    auto t = b.initTokens(static_cast<unsigned>(c.tokens.size()));
    for (unsigned i = 0; i < t.size(); ++i)
      t.set(i, c.tokens[i]);
  }
  if (!c.reqs.empty()) {
    auto t = b.initReqs(static_cast<unsigned>(c.reqs.size()));
    for (unsigned i = 0; i < t.size(); ++i)
      t.set(i, c.reqs[i]);
  }
  b.setStart(c.start);
  b.setN(c.n);
  b.setM(c.m);
  b.setSeqlen(c.seqlen);
  b.setFlag(c.flag);
  b.setBatch(c.batch);
}

command get_command(wire::Command::Reader r) {
  command c;
  // An unknown kind passes through as its number; validate_command rejects it.
  c.kind = static_cast<cmd_kind>(static_cast<std::uint16_t>(r.getKind()) > 255
                                     ? 255
                                     : static_cast<std::uint16_t>(r.getKind()));
  c.req = r.getReq();
  copy_list(c.tokens, r.getTokens());
  copy_list(c.reqs, r.getReqs());
  c.start = r.getStart();
  c.n = r.getN();
  c.m = r.getM();
  c.seqlen = r.getSeqlen();
  c.flag = r.getFlag();
  c.batch = r.getBatch();
  return c;
}

void put_result(wire::CommandResult::Builder b, const command_result& r) {
  put_error(b.initError(), {r.code, r.error});
  b.setPrefixLen(r.prefix_len);
  if (!r.indices.empty()) {
    auto l = b.initIndices(static_cast<unsigned>(r.indices.size()));
    for (unsigned i = 0; i < l.size(); ++i)
      l.set(i, r.indices[i]);
  }
  b.setNodeSlot(r.node_slot);
  b.setHasBranching(r.branching.has_value());
  b.setBranching(r.branching.value_or(0));
  b.setWorking(r.working);
  b.setRow(r.row);
  if (r.pingpong) {
    auto l = b.initPingpong(2);
    l.set(0, (*r.pingpong)[0]);
    l.set(1, (*r.pingpong)[1]);
  }
  b.setSlot(r.slot);
  b.setMask(r.mask);
  b.setKernelSeqlen(r.kernel_seqlen);
  b.setInserted(r.inserted);
  b.setMambaExist(r.mamba_exist);
  b.setTokensEvicted(r.tokens_evicted);
  b.setMambaEvicted(r.mamba_evicted);
  b.setTokensFreedTotal(r.tokens_freed_total);
  b.setSlotsFreedTotal(r.slots_freed_total);
  b.setTreeTokens(r.tree_tokens);
  b.setTreeSlots(r.tree_slots);
  b.setSanity(r.sanity);
  if (!r.sanity_detail.empty()) b.setSanityDetail(r.sanity_detail);
  b.setOpsSnapshots(r.ops_snapshots);
  b.setOpsClears(r.ops_clears);
  b.setOpsCows(r.ops_cows);
  auto p = b.initPools();
  p.setKvAvail(r.pools.kv_avail);
  p.setSlotsAvail(r.pools.slots_avail);
  p.setRowsAvail(r.pools.rows_avail);
  p.setFullEvictable(r.pools.full_evictable);
  p.setFullProtected(r.pools.full_protected);
  p.setMambaEvictable(r.pools.mamba_evictable);
  p.setMambaProtected(r.pools.mamba_protected);
  b.setElapsedNs(r.elapsed_ns);
  b.setKvMatched(r.kv_matched);
  b.setLoadedTokens(r.loaded_tokens);
  b.setPrefetchReady(r.prefetch_ready);
  if (!r.prefetch_outcome.empty()) b.setPrefetchOutcome(r.prefetch_outcome);
  b.setStorageHitTokens(r.storage_hit_tokens);
}

command_result get_result(wire::CommandResult::Reader b) {
  command_result r;
  error e = get_error(b.getError());
  r.code = e.code;
  r.error = std::move(e.message);
  r.prefix_len = b.getPrefixLen();
  copy_list(r.indices, b.getIndices());
  r.node_slot = b.getNodeSlot();
  if (b.getHasBranching()) r.branching = b.getBranching();
  r.working = b.getWorking();
  r.row = b.getRow();
  if (b.getPingpong().size() == 2)
    r.pingpong = std::array<slot_id, 2>{b.getPingpong()[0], b.getPingpong()[1]};
  r.slot = b.getSlot();
  r.mask = b.getMask();
  r.kernel_seqlen = b.getKernelSeqlen();
  r.inserted = b.getInserted();
  r.mamba_exist = b.getMambaExist();
  r.tokens_evicted = b.getTokensEvicted();
  r.mamba_evicted = b.getMambaEvicted();
  r.tokens_freed_total = b.getTokensFreedTotal();
  r.slots_freed_total = b.getSlotsFreedTotal();
  r.tree_tokens = b.getTreeTokens();
  r.tree_slots = b.getTreeSlots();
  r.sanity = b.getSanity();
  r.sanity_detail = b.getSanityDetail().cStr();
  r.ops_snapshots = b.getOpsSnapshots();
  r.ops_clears = b.getOpsClears();
  r.ops_cows = b.getOpsCows();
  auto p = b.getPools();
  r.pools = {p.getKvAvail(),       p.getSlotsAvail(),    p.getRowsAvail(),
             p.getFullEvictable(), p.getFullProtected(), p.getMambaEvictable(),
             p.getMambaProtected()};
  r.elapsed_ns = b.getElapsedNs();
  r.kv_matched = b.getKvMatched();
  r.loaded_tokens = b.getLoadedTokens();
  r.prefetch_ready = b.getPrefetchReady();
  r.prefetch_outcome = b.getPrefetchOutcome().cStr();
  r.storage_hit_tokens = b.getStorageHitTokens();
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
}

pool_info get_pool_info(wire::PoolInfo::Reader r) {
  return {r.getKvShm().cStr(),    r.getKvBytes(),      r.getSsmShm().cStr(), r.getSsmBytes(),
          r.getKvBytesPerToken(), r.getSsmSlotBytes(), r.getInstanceId()};
}

}  // namespace hc::wire_convert
