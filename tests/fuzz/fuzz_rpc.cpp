// Fuzz target 1: every RPC method through the real server on an in-process node (actors,
// RPC server on a Unix socket, host tier, an in-memory L3 store), driven two ways:
//  - raw frames (a quarter of the inputs): the bytes are written to a fresh connection as
//    they are, then the connection is shut; the server must drop it and go on;
//  - structure-aware scripts: the bytes pick a sequence of calls of every method of
//    CacheNode, Session and Store on one connection, each built as a valid Cap'n Proto
//    message whose fields come from the input (unknown union tags and enum values, huge
//    counts, negative slots and arbitrary data sections included), then the connection is
//    dropped with whatever it had open or in flight.
// After each input, through a second connection: every session the input opened is
// closed, and once the node drained, every instance is idle and whole — no live request,
// nothing protected, every KV token and SSM slot free or evictable — and no internal
// invariant was violated.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <capnp/any.h>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "actors/common/invariant.hpp"
#include "actors/common/metrics_sink.hpp"
#include "actors/node/node.hpp"
#include "gpu/shm_owner.hpp"
#include "schema/client.hpp"
#include "schema/node_connection.hpp"
#include "schema/server/rpc_server.hpp"
#include "storage/memory_store.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace hc::fuzz {
namespace {

using namespace std::chrono_literals;

struct environment {
  null_metrics metrics;
  std::unique_ptr<node> n;
  std::unique_ptr<rpc_server> server;
  std::string socket = "/tmp/hc-fuzz-rpc-" + std::to_string(::getpid()) + ".sock";
  std::unique_ptr<client> observer;

  environment() {
    node_config cfg;
    cfg.scheduler_threads = 2;
    cfg.metrics = &metrics;
    cfg.max_step_commands = 64;
    cfg.max_command_tokens = 4096;
    cfg.limits.max_pool_bytes = 1 << 20;
    cfg.max_idle_instances = 2;
    cfg.l3 = std::make_shared<memory_store>(8u << 20);
    cfg.host_memory_limit = 64u << 20;
    n = std::make_unique<node>(cfg);
    server = std::make_unique<rpc_server>(*n, metrics);
    rpc_server_config rc;
    rc.unix_path = socket;
    rc.store_arena_bytes = 64 << 10;
    rc.max_store_keys = 64;
    if (status s = server->start(rc); !s) fail("server: " + s.err().message);
    // The environment is never destroyed (its threads run until exit): the socket file
    // and the instances' pools in /dev/shm go at exit, or every fuzzing run would leave
    // them behind (the pools until the next node's start found them orphaned).
    static const std::string* bound = &socket;
    static const std::string* pools = &n->config().shm_prefix;
    std::atexit([] {
      ::unlink(bound->c_str());
      (void)unlink_segments_of(*pools);  // this process's own
    });
    auto c = client::connect("unix:" + socket);
    if (!c) fail("observer: " + c.err().message);
    observer = std::move(*c);
  }
};

environment& env() {
  static environment* e = new environment();  // lives until exit (the node's threads too)
  return *e;
}

// ---- raw frames --------------------------------------------------------------------------

void raw_frames(std::span<const std::uint8_t> bytes) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, env().socket.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    fail("cannot connect to the node");
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t k = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (k <= 0) break;  // the server dropped the connection: fine
    sent += static_cast<std::size_t>(k);
  }
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  for (int i = 0; i < 20; ++i) {  // read what it answers until it closes (at most ~200 ms)
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10) <= 0) continue;
    if (::read(fd, buf, sizeof buf) <= 0) break;
  }
  ::close(fd);
}

// ---- structure-aware scripts ---------------------------------------------------------------

/// HC_FUZZ_TRACE=1: print each call of a script (to read what an input does).
bool trace_calls() {
  static const bool on = std::getenv("HC_FUZZ_TRACE") != nullptr;
  return on;
}

/// "k3": a name from a small set, so that calls meet the same keys and models again.
/// (Not `"k" + std::to_string(n)`: GCC 12 warns falsely on it, bug 105329.)
std::string numbered(const char* prefix, std::uint64_t n) {
  std::string s = std::to_string(n);
  s.insert(0, prefix);
  return s;
}

/// Overwrites a struct's data section with input bytes: arbitrary union tags, enum values,
/// numbers and flags, in a message that is still well formed.
template <class Builder>
void scramble(Builder b, fuzz_input& in) {
  capnp::AnyStruct::Builder any = capnp::toAny(b);
  for (kj::byte& x : any.getDataSection())
    x = in.byte();
}

/// Writes each 64-bit word of a struct's data section: mostly small numbers (request
/// handles, counts), sometimes anything.
template <class Builder>
void small_words(Builder b, fuzz_input& in) {
  capnp::AnyStruct::Builder any = capnp::toAny(b);
  auto data = any.getDataSection();
  for (std::size_t w = 0; w + 8 <= data.size(); w += 8) {
    const std::uint64_t v = w == 0 ? in.range(0, 7) : in.count(100);
    std::memcpy(data.begin() + w, &v, 8);
  }
}

template <class ListInit>
void fill_tokens(ListInit init, fuzz_input& in) {
  const std::uint64_t sys = in.range(0, 3);
  const unsigned sys_len = static_cast<unsigned>(in.range(0, 40));
  const unsigned tail = static_cast<unsigned>(in.range(0, 8));
  auto t = init(sys_len + tail);
  for (unsigned i = 0; i < sys_len; ++i)
    t.set(i, static_cast<std::int32_t>(1000 * (sys + 1) + i));
  for (unsigned i = 0; i < tail; ++i)
    t.set(sys_len + i, in.range(0, 15) == 0 ? static_cast<std::int32_t>(in.bits(4))
                                            : static_cast<std::int32_t>(in.range(1, 6)));
}

void fill_command(wire::Command::Builder c, fuzz_input& in) {
  const auto kind = in.range(0, 21);
  switch (kind) {
    case 0: {
      auto x = c.initCreate();
      x.setReq(in.range(0, 7));
      fill_tokens([&](unsigned n) { return x.initTokens(n); }, in);
      break;
    }
    case 1: {
      auto x = c.initAppend();
      x.setReq(in.range(0, 7));
      auto t = x.initTokens(static_cast<unsigned>(in.range(0, 3)));
      for (unsigned i = 0; i < t.size(); ++i)
        t.set(i, static_cast<std::int32_t>(in.range(1, 6)));
      if (t.size() == 0) {  // a range of the token arena instead (past its end for req 7)
        auto r = x.initShared();
        r.setAt(x.getReq() * 5);
        r.setCount(3);
      }
      break;
    }
    case 2:
      small_words(c.initMatch(), in);
      break;
    case 3:
      small_words(c.initLock(), in);
      break;
    case 4:
      small_words(c.initUnlock(), in);
      break;
    case 5:
      small_words(c.initAllocReq(), in);
      break;
    case 6:
      small_words(c.initAllocKv(), in);
      break;
    case 7:
      small_words(c.initTrack(), in);
      break;
    case 8:
      small_words(c.initPrepareExtend(), in);
      break;
    case 9:
      small_words(c.initPrepareDecode(), in);
      break;
    case 10:
      small_words(c.initProcessDecode(), in);
      break;
    case 11:
      small_words(c.initCacheUnfinished(), in);
      break;
    case 12:
      small_words(c.initFinish(), in);
      break;
    case 13:
      small_words(c.initAbort(), in);
      break;
    case 14:
      small_words(c.initNotAdmitted(), in);
      break;
    case 15:
      small_words(c.initEvict(), in);
      break;
    case 16:
      small_words(c.initCheck(), in);
      break;
    case 17: {
      auto x = c.initTakeOps();
      auto r = x.initReqs(static_cast<unsigned>(in.range(0, 3)));
      for (unsigned i = 0; i < r.size(); ++i)
        r.set(i, in.range(0, 7));
      x.setBatch(in.count(8));
      break;
    }
    case 18: {
      auto l = c.initLookup();
      fill_tokens([&](unsigned n) { return l.initTokens(n); }, in);
      l.setWithoutIndices(in.flag());
      break;
    }
    case 19:
      small_words(c.initPrefetch(), in);
      break;
    case 20:  // a pin of a prompt (a TTL of 0-2 ms, or past the limit), an unpin or a demote
      if (in.flag()) {
        auto p = c.initPin();
        fill_tokens([&](unsigned n) { return p.initTokens(n); }, in);
        p.setTtlMs(in.count(2));
      } else if (in.flag()) {
        c.initUnpin().setPin(in.range(0, 7));
      } else {
        auto d = c.initDemote();
        fill_tokens([&](unsigned n) { return d.initTokens(n); }, in);
      }
      break;
    default:
      scramble(c, in);
      break;  // any tag, the body missing or of another kind
  }
}

void fill_spec(wire::InstanceSpec::Builder s, fuzz_input& in) {
  s.setProtocolVersion(in.range(0, 15) == 0 ? static_cast<std::uint32_t>(in.bits(4))
                                            : wire::PROTOCOL_VERSION);
  s.setModelId(in.range(0, 7) == 0 ? in.text(24) : numbered("m", in.range(0, 1)));
  const std::uint32_t page = 1u << in.range(0, 3);
  s.setPageSize(page);
  s.setKvTokens(page * in.range(1, 64));
  s.setKvBytesPerToken(8 * in.range(0, 2));
  s.setSsmSlots(static_cast<std::uint32_t>(in.range(1, 16)));
  s.setSsmSlotBytes(32 * in.range(0, 2));
  s.setChunkSize(std::max<std::uint32_t>(page, 4u << in.range(0, 3)));
  s.setStrategy(static_cast<wire::Strategy>(in.range(0, 3)));
  s.setTrackInterval(static_cast<std::uint32_t>(s.getChunkSize() * in.range(1, 4)));
  s.setOverlap(in.flag());
  s.setRequestRows(static_cast<std::uint32_t>(in.range(0, 6)));
  if (s.getRequestRows() == 5) {  // shared rows, without a byte of their own (old inputs keep
    s.setMaxContextLen(64);       // their meaning) and a token arena of 32 tokens
    s.setSharedRows(true);
    s.setSharedTokens(32);
  }
  if (in.flag()) {
    s.setHicacheRatio(2.0);
    s.setPrefetchThreshold(static_cast<std::uint32_t>(in.range(0, 64)));
    s.setPrefetchPolicy(static_cast<wire::PrefetchPolicy>(in.range(0, 3)));
    s.setHicacheWritePolicy(static_cast<wire::WritePolicy>(in.range(0, 3)));
  }
  if (in.range(0, 7) == 0) s.setNamespace(in.text(8));
  if (in.range(0, 15) == 0) scramble(s, in);
}

void fill_entries(capnp::List<wire::StoreEntry>::Builder entries, fuzz_input& in) {
  for (unsigned i = 0; i < entries.size(); ++i) {
    entries[i].setKey(in.range(0, 7) == 0 ? in.text(16) : numbered("k", in.range(0, 9)));
    auto segs = entries[i].initSegments(static_cast<unsigned>(in.range(0, 3)));
    for (unsigned j = 0; j < segs.size(); ++j) {
      segs[j].setOffset(in.range(0, 3) == 0 ? in.bits(8) : in.count(200) * 64);
      segs[j].setLength(in.range(0, 3) == 0 ? in.bits(8) : in.count(200));
    }
  }
}

struct script {
  std::shared_ptr<wire_convert::rpc_channel> channel;
  wire::CacheNode::Client node;
  std::vector<wire::Session::Client> sessions;
  std::vector<wire::Store::Client> stores;
  std::vector<std::uint64_t> batches;
  kj::Vector<kj::Promise<void>> in_flight;  ///< calls that may wait (begin, drain): not awaited

  /// A raw connection on the client library's channel (the observer's loop: one per
  /// thread), answered once before the script's first call, as hc::client does (with
  /// capnp::EzRpcClient, in Cap'n Proto 0.9.2, one destroyed with a call queued on its not
  /// yet connected main capability left an event behind that crashed the thread's next
  /// event-loop turn — found by this target).
  explicit script(const std::string& address) : channel(open(address)), node(channel->node()) {
    wire_convert::wait_call(*channel, std::chrono::milliseconds(5000), node.pingRequest().send());
  }
  static std::shared_ptr<wire_convert::rpc_channel> open(const std::string& address) {
    auto c = wire_convert::open_channel(address);
    if (!c) fail("script: " + c.err().message);
    return std::move(*c);
  }

  template <class P>
  auto wait(P&& p) {
    return wire_convert::wait_call(*channel, std::chrono::milliseconds(5000), kj::mv(p));
  }
  template <class P>
  void park(P&& p) {
    in_flight.add(p.ignoreResult().catch_([](kj::Exception&&) {}));
  }

  /// One call; false when the connection is gone.
  bool call(fuzz_input& in) {
    const auto op = in.range(0, 23);
    if (trace_calls())
      std::fprintf(stderr, "call %llu (sessions %zu, stores %zu)\n",
                   static_cast<unsigned long long>(op), sessions.size(), stores.size());
    const std::size_t si = sessions.empty() ? 0 : in.range(0, sessions.size() - 1);
    const std::size_t ti = stores.empty() ? 0 : in.range(0, stores.size() - 1);
    switch (op) {
      case 0:
        wait(node.pingRequest().send());
        break;
      case 1:
        wait(node.statsRequest().send());
        break;
      case 2:
        wait(node.inspectRequest().send());
        break;
      case 3:
      case 4: {
        auto req = node.openRequest();
        fill_spec(req.initSpec(), in);
        auto resp = wait(req.send());
        if (resp.getError().getCode() == wire::ErrorCode::OK && sessions.size() < 3) {
          sessions.push_back(resp.getSession());
          batches.push_back(1);
        }
        break;
      }
      case 5: {
        auto req = node.loginRequest();
        req.setToken(in.text(24));
        wait(req.send());
        break;
      }
      case 6: {
        auto req = node.storeRequest();
        req.setIdentity(in.range(0, 3) == 0 ? in.text(32) : numbered("id", in.range(0, 1)));
        auto resp = wait(req.send());
        if (resp.getError().getCode() == wire::ErrorCode::OK && stores.size() < 2)
          stores.push_back(resp.getStore());
        break;
      }
      case 7:
        park(node.drainRequest().send());
        break;
      default:
        break;
    }
    if (op >= 8 && op < 19 && !sessions.empty()) {
      wire::Session::Client& s = sessions[si];
      switch (op) {
        case 8:
        case 9:
        case 10: {
          auto req = s.stepRequest();
          auto cmds = req.initCommands(static_cast<unsigned>(in.range(0, 8)));
          for (unsigned i = 0; i < cmds.size(); ++i)
            fill_command(cmds[i], in);
          wait(req.send());
          break;
        }
        case 11: {
          auto req = s.beginForwardRequest();
          req.setBatch(in.flag() ? batches[si] : in.count(8));
          park(req.send());
          break;
        }
        case 12: {
          auto req = s.endForwardRequest();
          req.setBatch(in.flag() ? batches[si]++ : in.count(8));
          wait(req.send());
          break;
        }
        case 13:
          wait(s.poolInfoRequest().send());
          break;
        case 14: {
          auto req = s.readKvPageRequest();
          req.setPage(in.count(40));
          wait(req.send());
          break;
        }
        case 15: {
          auto req = s.writeKvPageRequest();
          req.setPage(in.count(40));
          auto b = in.bytes(600);
          req.setData(kj::arrayPtr(b.data(), b.size()));
          wait(req.send());
          break;
        }
        case 16: {
          auto req = s.readSlotRequest();
          req.setSlot(
              static_cast<std::int32_t>(in.range(0, 3) == 0 ? in.bits(4) : in.range(0, 20)));
          wait(req.send());
          break;
        }
        case 17: {
          auto req = s.writeSlotRequest();
          req.setSlot(
              static_cast<std::int32_t>(in.range(0, 3) == 0 ? in.bits(4) : in.range(0, 20)));
          auto b = in.bytes(100);
          req.setData(kj::arrayPtr(b.data(), b.size()));
          wait(req.send());
          break;
        }
        case 18:
          park(s.closeRequest().send());
          break;
      }
    }
    if (op >= 19 && !stores.empty()) {
      wire::Store::Client& t = stores[ti];
      switch (op) {
        case 19:
          wait(t.arenaRequest().send());
          break;
        case 20: {
          auto req = t.existsRequest();
          auto keys = req.initKvKeys(static_cast<unsigned>(in.range(0, 6)));
          for (unsigned i = 0; i < keys.size(); ++i)
            keys.set(i, numbered("k", in.range(0, 9)));
          auto sc = req.initSidecars(static_cast<unsigned>(in.range(0, 2)));
          for (unsigned i = 0; i < sc.size(); ++i)
            scramble(sc[i], in);
          wait(req.send());
          break;
        }
        case 21:
        case 22: {
          auto fill = [&](auto req) {
            req.setPool(static_cast<wire::StorePool>(in.range(0, 2)));
            fill_entries(req.initEntries(static_cast<unsigned>(in.range(0, 4))), in);
            wait(req.send());
          };
          if (op == 21) {
            fill(t.getRequest());
          } else {
            fill(t.setRequest());
          }
          break;
        }
        case 23:
          wait(t.clearRequest().send());
          break;
      }
    }
    return true;
  }
};

void run_script(fuzz_input& in) {
  try {
    script s("unix:" + env().socket);
    for (int i = 0; i < 48 && !in.empty(); ++i)
      if (!s.call(in)) break;
    // Drop the connection with whatever it holds: sessions, stores, waiting calls.
  } catch (const wire_convert::call_timed_out& t) {
    fail("a call that must answer at once got no answer in " + std::to_string(t.after.count()) +
         " ms");
  } catch (const kj::Exception&) {
    // The server refused the message or dropped the connection: what it should do.
  }
}

// ---- the check after each input -------------------------------------------------------------

std::uint64_t sum_sessions(const nlohmann::json& doc) {
  return doc.value("sessions", 0u);
}

void check_idle() {
  client& obs = *env().observer;
  nlohmann::json doc;
  for (int i = 0;; ++i) {  // the server closes a dropped connection's sessions on its own
    auto j = obs.inspect();
    if (!j) fail("inspect: " + j.err().message);
    doc = nlohmann::json::parse(*j);
    if (sum_sessions(doc) <= 0) break;  // the observer opens none
    if (i == 500) fail("a dropped connection's sessions were not closed: " + doc.dump());
    std::this_thread::sleep_for(10ms);
  }
  if (status s = obs.drain(); !s) fail("drain: " + s.err().message);
  auto j = obs.inspect();
  if (!j) fail("inspect: " + j.err().message);
  doc = nlohmann::json::parse(*j);
  if (invariant_violations() != 0)
    fail(std::string("invariant violated: ") + first_invariant_violation());
  for (const auto& inst : doc["instances"]) {
    const auto& t = inst["tree"];
    if (!t.is_object()) fail("instance without a tree: " + inst.dump());
    auto n = [&](const char* k) { return t.value(k, std::uint64_t{0}); };
    if (n("live_requests") != 0) fail("live requests on an idle instance: " + t.dump());
    if (n("pins") != 0) fail("pins on an idle instance: " + t.dump());
    if (n("full_protected") != 0 || n("mamba_protected") != 0)
      fail("protected nodes on an idle instance: " + t.dump());
    if (n("kv_available") + n("full_evictable") != n("kv_capacity"))
      fail("KV tokens lost on an idle instance: " + t.dump());
    if (n("slot_available") + n("mamba_evictable") != n("slot_capacity"))
      fail("SSM slots lost on an idle instance: " + t.dump());
  }
}

}  // namespace
}  // namespace hc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hc::fuzz;
  env();
  fuzz_input in(data, size);
  if (in.range(0, 3) == 0) {
    raw_frames(in.rest());
  } else {
    run_script(in);
  }
  check_idle();
  return 0;
}
