// The node over RPC: sessions, bad input (every case gets a typed error and the node
// keeps serving everyone else), client disconnect releasing a session's holdings, byte
// access, and forward fences seen through the shared slot bytes.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <capnp/any.h>
#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gpu/device_probe.hpp"
#include "gpu/shm_region.hpp"
#include "schema/convert.hpp"
#include "schema/node_connection.hpp"
#include "tests/support/commands.hpp"
#include "tests/support/inspect_until.hpp"
#include "tests/support/node_fixture.hpp"
#include "tests/support/raw_tcp.hpp"
#include "tests/support/tree_fixture.hpp"

namespace hc::test {
namespace {

/// The node's inspect document, read once.
nlohmann::json inspect_now(client& c) {
  auto d = c.inspect();
  EXPECT_TRUE(d.ok()) << d.err().message;
  return d.ok() ? nlohmann::json::parse(*d) : nlohmann::json();
}

nlohmann::json tree_of(client& c) {
  auto doc = c.inspect();
  EXPECT_TRUE(doc.ok());
  auto j = nlohmann::json::parse(*doc);
  return j["instances"].empty() ? nlohmann::json() : j["instances"][0]["tree"];
}

/// A plain socket to the node (no Cap'n Proto); -1 on failure.
int raw_connect(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

using NodeRpc = node_fixture;

/// A raw Cap'n Proto connection to the node, such as a worker with its own client code
/// holds: on the client library's channel (one kj loop per thread, which the test's hc::client
/// connections share — a thread cannot have an EzRpcClient beside them).
struct raw_rpc {
  explicit raw_rpc(const std::string& address) : channel(open(address)), node(channel->node()) {}
  kj::WaitScope& ws() { return channel->wait_scope(); }
  std::shared_ptr<wire_convert::rpc_channel> channel;
  wire::CacheNode::Client node;

 private:
  static std::shared_ptr<wire_convert::rpc_channel> open(const std::string& address) {
    auto c = wire_convert::open_channel(address);
    if (!c) throw std::runtime_error("raw_rpc: " + c.err().message);
    return std::move(*c);
  }
};

/// A client logged in over TCP, retried (the node learns of a closed waiting connection
/// on its own loop) until it connects; nullptr after 10 s (a hang guard).
std::unique_ptr<client> inspect_until_connected(const std::string& address,
                                                const std::string& token) {
  for (int i = 0; i < 1000; ++i) {
    auto c = client::connect(address, token);
    if (c.ok()) return std::move(*c);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return nullptr;
}

TEST_F(NodeRpc, PingReportsTheProtocolVersion) {
  auto c = connect();
  ASSERT_TRUE(c);
  auto p = c->ping();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->protocol_version, wire::PROTOCOL_VERSION);
}

TEST_F(NodeRpc, OpenGivesPoolsInSharedMemory) {
  auto c = connect();
  auto s = c->open(small_spec());
  ASSERT_TRUE(s.ok()) << s.err().message;
  const pool_info& p = (*s)->pools();
  EXPECT_EQ(p.kv_bytes, (256u + 1u) * 8u);
  EXPECT_EQ(p.ssm_bytes, 17u * 64u);
  EXPECT_FALSE(p.ssm_shm.empty());
  EXPECT_TRUE(std::filesystem::exists("/dev/shm" + p.ssm_shm));
}

// InstanceSpec.sharedRows: the session's rows in shared memory the worker maps; a step's
// results carry no index lists, and the rows hold the ids the lists would have carried
// (checked against another session's match of the same prefix, which carries them).
TEST_F(NodeRpc, SharedRowsHoldTheKvIdsAndResultsCarryNoLists) {
  auto c = connect();
  instance_spec spec = small_spec();
  spec.max_context_len = 64;
  spec.shared_rows = true;
  auto s = c->open(spec);
  ASSERT_TRUE(s.ok()) << s.err().message;
  const pool_info p = (*s)->pools();
  ASSERT_FALSE(p.rows_shm.empty());
  EXPECT_EQ(p.row_width, 64u);
  EXPECT_EQ(p.rows_bytes, (8u + 1u) * 64u * sizeof(kv_index));
  auto rows = shm_region::map(p.rows_shm, p.rows_bytes);
  ASSERT_TRUE(rows.ok()) << rows.err().message;
  const auto* ids = reinterpret_cast<const kv_index*>(rows->bytes().data());

  const std::vector<token_id> prompt = iota_tokens(1, 40);
  auto r = (*s)->step(std::vector<command>{create(1, prompt), cmd::match{1}, cmd::alloc_req{1},
                                           cmd::alloc_kv{1, 0, 0, true}});
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const command_result& x : *r)
    ASSERT_TRUE(x.ok()) << x.error;
  EXPECT_TRUE((*r)[1].as<res::match>().indices.empty());
  EXPECT_TRUE((*r)[3].as<res::alloc_kv>().indices.empty()) << "allocated 40 ids, listed none";
  const row_id row = (*r)[2].as<res::alloc_req>().row;
  const std::vector<kv_index> row1(ids + row * 64, ids + row * 64 + 40);
  EXPECT_EQ(std::set<kv_index>(row1.begin(), row1.end()).size(), 40u) << "40 distinct ids";
  EXPECT_EQ(std::count(row1.begin(), row1.end(), 0), 0) << "id 0 is reserved";
  ASSERT_TRUE((*s)->step(std::vector<command>{cmd::finish{1, 0}}).ok());

  // Another session of the instance, rows private: its match lists the tree's ids, which
  // are request 1's as its shared row held them.
  auto other = c->open(small_spec());
  ASSERT_TRUE(other.ok()) << other.err().message;
  EXPECT_TRUE((*other)->pools().rows_shm.empty());
  std::vector<token_id> longer = prompt;
  longer.push_back(999);
  auto m = (*other)->step(std::vector<command>{create(7, longer), cmd::match{7}});
  ASSERT_TRUE(m.ok() && (*m)[1].ok());
  const res::match& got = (*m)[1].as<res::match>();
  ASSERT_EQ(got.prefix_len, 40u);
  EXPECT_EQ(got.indices, row1);
  ASSERT_TRUE((*other)->step(std::vector<command>{cmd::not_admitted{7}}).ok());

  // Closed: the name is unlinked (the mapping stays valid).
  ASSERT_TRUE((*s)->close().ok());
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + p.rows_shm));
  EXPECT_EQ(ids[row * 64], row1[0]);

  spec.max_context_len = 0;
  auto refused = c->open(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, errc::invalid_config);
  EXPECT_NE(refused.err().message.find("sharedRows"), std::string::npos) << refused.err().message;
}

// Prompts passed by reference (InstanceSpec.sharedTokens): the worker writes them into the
// session's token arena and sends ranges; what the node caches is what the lists would
// have made (another session, lists only, matches it), a bad range refuses the whole step
// before any of it ran, and the arena is unlinked at close.
TEST_F(NodeRpc, PromptsThroughTheTokenArenaAreCachedAsListsWouldBe) {
  auto c = connect();
  instance_spec spec = small_spec();
  spec.shared_tokens = 256;
  auto s = c->open(spec);
  ASSERT_TRUE(s.ok()) << s.err().message;
  const pool_info p = (*s)->pools();
  ASSERT_FALSE(p.tokens_shm.empty());
  EXPECT_EQ(p.tokens_bytes, 256u * sizeof(token_id));
  auto arena = shm_region::map(p.tokens_shm, p.tokens_bytes);
  ASSERT_TRUE(arena.ok()) << arena.err().message;
  auto* tokens = reinterpret_cast<token_id*>(arena->bytes().data());

  const std::vector<token_id> prompt = iota_tokens(1, 40);
  std::copy(prompt.begin(), prompt.end(), tokens + 100);
  auto r = (*s)->step(std::vector<command>{cmd::create{1, 0, {}, cmd::token_range{100, 40}},
                                           cmd::match{1}, cmd::alloc_req{1},
                                           cmd::alloc_kv{1, 0, 0, true}});
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const command_result& x : *r)
    ASSERT_TRUE(x.ok()) << x.error;
  EXPECT_EQ((*r)[3].as<res::alloc_kv>().indices.size(), 40u) << "the prompt has 40 tokens";
  std::fill(tokens, tokens + 256, -1);  // the range may be reused once the step returned
  ASSERT_TRUE((*s)->step(std::vector<command>{cmd::finish{1, 0}}).ok());

  auto other = c->open(small_spec());
  ASSERT_TRUE(other.ok()) << other.err().message;
  EXPECT_TRUE((*other)->pools().tokens_shm.empty());
  std::vector<token_id> longer = prompt;
  longer.push_back(999);
  auto m = (*other)->step(std::vector<command>{create(7, longer), cmd::match{7}});
  ASSERT_TRUE(m.ok() && (*m)[1].ok());
  EXPECT_EQ((*m)[1].as<res::match>().prefix_len, 40u) << "the arena's tokens were cached";
  ASSERT_TRUE((*other)->step(std::vector<command>{cmd::not_admitted{7}}).ok());
  // A lookup names its prompt in the arena too (a scheduling policy's, step after step).
  std::copy(prompt.begin(), prompt.end(), tokens + 200);
  auto look =
      (*s)->step(std::vector<command>{cmd::lookup{0, {}, true, cmd::token_range{200, 40}},
                                      cmd::lookup{0, {}, false, cmd::token_range{200, 40}},
                                      cmd::lookup{0, {}, false, cmd::token_range{200, 20}}});
  ASSERT_TRUE(look.ok()) << look.err().message;
  EXPECT_EQ((*look)[0].as<res::lookup>().prefix_len, 40u);
  EXPECT_TRUE((*look)[0].as<res::lookup>().indices.empty());
  EXPECT_EQ((*look)[1].as<res::lookup>().prefix_len, 40u);
  EXPECT_EQ((*look)[1].as<res::lookup>().indices, (*r)[3].as<res::alloc_kv>().indices);
  EXPECT_EQ((*look)[2].as<res::lookup>().kv_matched, 20u) << "the range's 20 tokens, no more";
  EXPECT_EQ((*look)[2].as<res::lookup>().prefix_len, 0u) << "no state at 20 tokens";

  // A range past the arena: nothing of the step runs (request 2 is not created).
  auto bad = (*s)->step(std::vector<command>{cmd::create{2, 0, {}, cmd::token_range{0, 8}},
                                             cmd::append{2, {}, cmd::token_range{250, 7}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.err().code, errc::invalid_argument);
  EXPECT_NE(bad.err().message.find("past the end"), std::string::npos) << bad.err().message;
  auto after = (*s)->step(std::vector<command>{cmd::match{2}});
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE((*after)[0].ok()) << "request 2 was never created";
  // The session without an arena refuses ranges the same way.
  auto none = (*other)->step(std::vector<command>{cmd::create{8, 0, {}, cmd::token_range{0, 1}}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.err().message.find("no token arena"), std::string::npos) << none.err().message;

  ASSERT_TRUE((*s)->close().ok());
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + p.tokens_shm));

  spec.shared_tokens = std::size_t{1} << 40;
  auto refused = c->open(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, errc::invalid_config);
  EXPECT_NE(refused.err().message.find("sharedTokens"), std::string::npos) << refused.err().message;
}

// Someone removes an instance's shared-memory names (rm /dev/shm/..., a cleanup script):
// the session on it goes on with its mapping, a new session of the same spec gets a fresh
// instance it can map, the fault is counted, and the old instance ends with its last
// session.
TEST_F(NodeRpc, RemovedSharedMemoryGivesNewSessionsAFreshInstance) {
  auto c = connect();
  auto a = c->open(small_spec());
  ASSERT_TRUE(a.ok()) << a.err().message;
  const pool_info old = (*a)->pools();
  ASSERT_TRUE(std::filesystem::remove("/dev/shm" + old.kv_shm));
  ASSERT_TRUE(std::filesystem::remove("/dev/shm" + old.ssm_shm));

  std::vector<command> cmds{create(1, iota_tokens(1, 8)), cmd::match{1}, cmd::alloc_req{1},
                            cmd::alloc_kv{1, 0, 8}, cmd::finish{1}};
  auto r = (*a)->step(cmds);
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const auto& one : *r)
    EXPECT_TRUE(one.ok()) << one.error;
  EXPECT_TRUE((*a)->read_slot(1).ok()) << "the session on the old instance goes on";

  auto b = c->open(small_spec());
  ASSERT_TRUE(b.ok()) << b.err().message;
  const pool_info fresh = (*b)->pools();
  EXPECT_NE(fresh.instance_id, old.instance_id);
  EXPECT_TRUE(std::filesystem::exists("/dev/shm" + fresh.kv_shm));
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="shm_removed"})"), 1);
  r = (*b)->step(cmds);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ((*r)[1].as<res::match>().prefix_len, 0u) << "a fresh instance: an empty tree";

  ASSERT_TRUE((*a)->close().ok());
  ASSERT_TRUE(c->drain().ok());
  auto doc = nlohmann::json::parse(*c->inspect());
  ASSERT_EQ(doc["instances"].size(), 1u) << "the old instance ended with its last session";
  EXPECT_EQ(doc["instances"][0]["tree"]["instance"], fresh.instance_id) << doc.dump();
}

// inspect names the process that runs the node: its pid, when it started and how long ago,
// and — from what the embedder says — its release, protocol and settings.
TEST_F(NodeRpc, InspectSaysWhichProcessRunsTheNodeAndSinceWhen) {
  auto c = connect();
  // In UTC whatever the node's time zone (it said local time with a Z, in fmt 9).
  const char* tz = std::getenv("TZ");
  const std::string saved_tz = tz != nullptr ? tz : "";
  ::setenv("TZ", "Asia/Tokyo", 1);
  ::tzset();
  const nlohmann::json first = inspect_now(*c)["node"];
  if (tz != nullptr) {
    ::setenv("TZ", saved_tz.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
  ASSERT_TRUE(first.is_object()) << first.dump();
  EXPECT_EQ(first["pid"], static_cast<long>(::getpid()));
  EXPECT_FALSE(first.contains("program")) << "the fixture says nothing of its process";
  EXPECT_FALSE(first.contains("protocol"));
  EXPECT_EQ(first["settings"], nlohmann::json::object());
  EXPECT_EQ(first["given"], nlohmann::json::array());

  std::tm tm{};
  const std::string started = first["started"];
  ASSERT_NE(::strptime(started.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr) << started;
  const auto at = std::chrono::system_clock::from_time_t(::timegm(&tm));
  const auto now = std::chrono::system_clock::now();
  EXPECT_LE(at, now) << started;
  EXPECT_GT(at, now - std::chrono::minutes(10)) << started << ": the fixture started it";

  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const nlohmann::json later = inspect_now(*c)["node"];
  EXPECT_GE(later["uptime_seconds"].get<double>() - first["uptime_seconds"].get<double>(), 0.05);
  EXPECT_EQ(later["started"], first["started"]);
}

struct DescribedNode : node_fixture {
  DescribedNode() {
    about.program = "hybridcached";
    about.version = "9.8.7";
    about.protocol = 42;
    about.settings = {{"socket", "/run/x.sock", true, true},
                      {"tcp", "", false, false},
                      {"threads", "2", true, false},
                      {"max-sessions", "12", true, true}};
  }
};

TEST_F(DescribedNode, InspectReportsTheReleaseAndEverySettingSayingWhichWereGiven) {
  auto c = connect();
  const nlohmann::json node = inspect_now(*c)["node"];
  EXPECT_EQ(node["program"], "hybridcached");
  EXPECT_EQ(node["version"], "9.8.7");
  EXPECT_EQ(node["protocol"], 42);
  EXPECT_EQ(node["settings"], nlohmann::json::parse(R"({"socket": "/run/x.sock", "tcp": null,
                                                        "threads": "2", "max-sessions": "12"})"));
  EXPECT_EQ(node["given"], nlohmann::json::parse(R"(["socket", "max-sessions"])"))
      << "in the embedder's order";
}

// device cuda: where no CUDA device is usable (a build without CUDA, no driver, no GPU)
// the open is refused with invalid_config saying why and the node goes on; with one, the
// pools are device memory with IPC handles and no shared-memory names.
TEST_F(NodeRpc, ACudaInstanceGetsIpcHandlesOrIsRefusedSayingWhy) {
  auto c = connect();
  instance_spec spec = small_spec();
  spec.device = device_kind::cuda;
  auto s = c->open(spec);
  if (gpu::probe_devices().device_count == 0) {
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.err().code, errc::invalid_config);
    EXPECT_NE(s.err().message.find("cuda"), std::string::npos) << s.err().message;
    auto cpu = c->open(small_spec());
    EXPECT_TRUE(cpu.ok()) << "the node keeps serving: " << cpu.err().message;
    return;
  }
  ASSERT_TRUE(s.ok()) << s.err().message;
  const pool_info& p = (*s)->pools();
  EXPECT_EQ(p.device, device_kind::cuda);
  EXPECT_EQ(p.kv_ipc_handle.size(), 64u);
  EXPECT_EQ(p.ssm_ipc_handle.size(), 64u);
  EXPECT_TRUE(p.kv_shm.empty() && p.ssm_shm.empty());
  EXPECT_EQ(p.ssm_bytes, 17u * 64u);
  auto cpu = c->open(small_spec());
  ASSERT_TRUE(cpu.ok()) << cpu.err().message;
  EXPECT_NE((*cpu)->pools().instance_id, p.instance_id) << "the device is part of the identity";
}

TEST_F(NodeRpc, InvalidSpecIsRejectedNamingTheOption) {
  auto c = connect();
  instance_spec bad = small_spec();
  bad.kv_tokens = 250;
  bad.page_size = 4;
  bad.chunk_size = 64;
  auto s = c->open(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("kvTokens"), std::string::npos) << s.err().message;
  bad = small_spec();
  bad.ssm_slot_bytes = std::size_t{1} << 40;  // oversize pool
  s = c->open(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.err().message.find("ssmSlots * ssmSlotBytes"), std::string::npos);
  bad = small_spec();
  bad.device_ordinal = 2;  // on device cpu
  s = c->open(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("deviceOrdinal"), std::string::npos) << s.err().message;
  EXPECT_TRUE(c->ping().ok()) << "the node keeps serving";
}

// Model ids and namespaces cross the wire whole (Cap'n Proto's conversion from std::string
// stops at the first NUL): two models, or two tenants' namespaces, that differ only after
// a NUL once shared one instance — one read the other's cache.
// Names with a NUL once reached the node cut at it (two models, one instance); they are now
// refused whole, like every control character (instance_config.cpp), and names that
// differ in a printable byte stay apart.
TEST_F(NodeRpc, NamesWithANulAreRefusedAndNamespacesKeepTheirTreesApart) {
  auto c = connect();
  for (const instance_spec& bad : {small_spec(std::string("m\0a", 3)), [] {
                                     instance_spec s = small_spec("ns-test");
                                     s.ns = std::string("tenant\0x", 8);
                                     return s;
                                   }()}) {
    auto refused = c->open(bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.err().code, errc::invalid_config) << refused.err().message;
    EXPECT_NE(refused.err().message.find("printable"), std::string::npos) << refused.err().message;
  }
  auto a = c->open(small_spec("m/a"));
  auto b = c->open(small_spec("m/b"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->pools().kv_shm, (*b)->pools().kv_shm);
  // A namespace partitions one instance's tree: what "tenant/x" caches, "tenant" must not
  // find.
  instance_spec x = small_spec("ns-test"), y = small_spec("ns-test");
  x.ns = "tenant/x";
  y.ns = "tenant";
  auto sx = c->open(x);
  auto sy = c->open(y);
  ASSERT_TRUE(sx.ok() && sy.ok());
  const std::vector<token_id> prompt = iota_tokens(1, 40);
  auto r = (*sx)->step(std::vector<command>{create(1, prompt), cmd::match{1}, cmd::alloc_req{1},
                                            cmd::alloc_kv{1, 0, 0, true}, cmd::finish{1, 0}});
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const command_result& e : *r)
    ASSERT_TRUE(e.ok()) << e.error;
  auto own = (*sx)->step(std::vector<command>{lookup(prompt)});
  auto theirs = (*sy)->step(std::vector<command>{lookup(prompt)});
  ASSERT_TRUE(own.ok() && theirs.ok());
  EXPECT_EQ((*own)[0].as<res::lookup>().prefix_len, 40u);
  EXPECT_EQ((*theirs)[0].as<res::lookup>().prefix_len, 0u) << "another namespace's cache";
}

TEST_F(NodeRpc, ProtocolVersionMismatchIsATypedError) {
  raw_rpc ez(address());
  auto node = ez.node;
  auto req = node.openRequest();
  EXPECT_TRUE(wire_convert::put_spec(req.initSpec(), small_spec()).ok());
  req.getSpec().setProtocolVersion(wire::PROTOCOL_VERSION + 7);
  auto r = req.send().wait(ez.ws());
  EXPECT_EQ(r.getError().getCode(), wire::ErrorCode::VERSION_MISMATCH);
  // A version-1 client (commands as one bag of fields) is refused before any step.
  static_assert(wire::PROTOCOL_VERSION == 2);
  auto v1 = node.openRequest();
  EXPECT_TRUE(wire_convert::put_spec(v1.initSpec(), small_spec()).ok());
  v1.getSpec().setProtocolVersion(1);
  auto r1 = v1.send().wait(ez.ws());
  EXPECT_EQ(r1.getError().getCode(), wire::ErrorCode::VERSION_MISMATCH);
  EXPECT_NE(std::string(r1.getError().getMessage().cStr()).find("protocol 1"), std::string::npos)
      << r1.getError().getMessage().cStr();
  EXPECT_FALSE(r1.hasSession());
}

TEST_F(NodeRpc, BadCommandsGetTypedErrorsAndOtherSessionsKeepWorking) {
  auto c = connect();
  auto a = std::move(*c->open(small_spec()));
  auto other_client = connect();
  auto b = std::move(*other_client->open(small_spec()));

  // Unknown request.
  std::vector<command> cmds{cmd::lock{42}};
  auto r = a->step(cmds);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].code, errc::not_found);
  EXPECT_NE((*r)[0].error.find("42"), std::string::npos) << (*r)[0].error;

  // Double free: finishing a request twice.
  cmds = {create(1, iota_tokens(1, 8)), cmd::match{1}, cmd::abort{1}, cmd::abort{1}};
  r = a->step(cmds);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[2].ok()) << (*r)[2].error;
  EXPECT_EQ((*r)[3].code, errc::not_found) << "the second release names a dead request";

  // KV extend that does not start at the row's end.
  cmds = {create(2, iota_tokens(1, 8)), cmd::match{2}, cmd::alloc_req{2}, cmd::alloc_kv{2, 3, 5}};
  r = a->step(cmds);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[3].code, errc::invalid_argument);
  EXPECT_NE((*r)[3].error.find("starts at 3"), std::string::npos) << (*r)[3].error;
  ASSERT_TRUE(a->step(std::vector<command>{cmd::abort{2}}).ok());

  // Oversize step and oversize command.
  std::vector<command> many(5000, cmd::check{});
  r = a->step(many);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("limit 4096"), std::string::npos) << r.err().message;
  cmds = {create(3, iota_tokens(1, (1 << 16) + 1))};
  r = a->step(cmds);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("tokens"), std::string::npos);

  // Slot out of range, payload of the wrong size.
  auto bytes = a->read_slot(9999);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.err().message.find("out of range"), std::string::npos);
  std::vector<std::byte> small(3);
  auto w = a->write_slot(1, small);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.err().message.find("expected 64"), std::string::npos);

  // A call too large for one message is refused before it is sent, as bad input (kj's own
  // refusal reads as a lost connection), and the connection stays usable.
  std::vector<std::byte> huge(65u << 20);
  w = a->write_slot(1, huge);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.err().code, errc::invalid_argument) << w.err().message;
  EXPECT_NE(w.err().message.find("64 MiB"), std::string::npos) << w.err().message;
  EXPECT_TRUE(c->ping().ok());

  // The other session is unaffected and the first still works.
  EXPECT_TRUE(b->step(std::vector<command>{cmd::check{}}).ok());
  cmds = {cmd::check{/*full=*/true}};
  r = a->step(cmds);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].as<res::check>().sanity) << (*r)[0].as<res::check>().sanity_detail;
}

TEST_F(NodeRpc, MalformedCommandKindIsRejected) {
  auto c = connect();
  auto s = std::move(*c->open(small_spec()));
  (void)s;
  raw_rpc ez(address());
  auto node = ez.node;
  auto open = node.openRequest();
  EXPECT_TRUE(wire_convert::put_spec(open.initSpec(), small_spec()).ok());
  auto session = open.send().wait(ez.ws()).getSession();
  auto step = session.stepRequest();
  auto l = step.initCommands(1);
  l[0].initLookup();
  // A kind from a newer protocol: the union's tag (the data section's only field) 200.
  auto data = capnp::toAny(l[0]).getDataSection();
  ASSERT_EQ(data.size(), 8u);
  const auto tag = static_cast<std::uint16_t>(wire::Command::LOOKUP);
  ASSERT_EQ(data[0] | (data[1] << 8), tag);
  data[0] = 200;
  data[1] = 0;
  ASSERT_EQ(static_cast<unsigned>(l[0].asReader().which()), 200u);
  auto r = step.send().wait(ez.ws());
  EXPECT_EQ(r.getError().getCode(), wire::ErrorCode::INVALID_ARGUMENT);
  EXPECT_NE(std::string(r.getError().getMessage().cStr()).find("unknown"), std::string::npos);
  EXPECT_TRUE(c->ping().ok());
}

TEST_F(NodeRpc, UnalignedTrackedLengthIsRejected) {
  auto c = connect();
  instance_spec spec = small_spec();
  spec.page_size = 4;
  spec.kv_tokens = 256;
  spec.strat = strategy::extra_buffer;
  auto s = std::move(*c->open(spec));
  std::vector<command> cmds{
      create(1, iota_tokens(1, 16)), cmd::match{1}, cmd::alloc_req{1}, cmd::alloc_kv{1, 0, 16},
      cmd::track{1, /*seqlen=*/5},  // not a page multiple
      cmd::cache_unfinished{1, 16}};
  auto r = s->step(cmds);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)[4].ok()) << (*r)[4].error;
  EXPECT_EQ((*r)[5].code, errc::invalid_argument);
  EXPECT_NE((*r)[5].error.find("unaligned"), std::string::npos) << (*r)[5].error;
}

TEST_F(NodeRpc, DisconnectReleasesEveryRequestLockAndSlot) {
  auto watcher = connect();
  ::testing::internal::CaptureStderr();
  {
    // A worker that dies: raw connection, no close() ever sent.
    raw_rpc ez(address());
    auto open = ez.node.openRequest();
    EXPECT_TRUE(wire_convert::put_spec(open.initSpec(), small_spec()).ok());
    auto session = open.send().wait(ez.ws()).getSession();
    std::vector<command> cmds{create(1, iota_tokens(1, 32)), cmd::match{1}, cmd::alloc_req{1},
                              cmd::alloc_kv{1, 0, 32}, cmd::cache_unfinished{1, 32}};
    auto step = session.stepRequest();
    auto l = step.initCommands(static_cast<unsigned>(cmds.size()));
    for (unsigned i = 0; i < l.size(); ++i)
      wire_convert::put_command(l[i], cmds[i]);
    auto r = step.send().wait(ez.ws());
    for (auto x : r.getResults())
      ASSERT_EQ(x.getError().getCode(), wire::ErrorCode::OK) << x.getError().getMessage().cStr();
    auto t = tree_of(*watcher);
    EXPECT_EQ(t["live_requests"], 1);
    EXPECT_GT(t["full_protected"].get<int>(), 0) << "the request locks its prefix";
  }  // connection dropped here
  // The node notices the disconnect and releases; poll its replies (no sleeps).
  nlohmann::json t = inspect_until(*watcher, [](const auto& d) {
    return d["instances"][0]["tree"]["live_requests"] == 0;
  })["instances"][0]["tree"];
  EXPECT_EQ(t["live_requests"], 0);
  EXPECT_EQ(t["full_protected"], 0);
  EXPECT_EQ(t["mamba_protected"], 0);
  EXPECT_EQ(t["slot_available"].get<int>() + t["mamba_evictable"].get<int>(), 16)
      << "every slot is free or held by the tree";
  EXPECT_EQ(metric(R"(hybridcache_faults_total{kind="client_gone"})"), 1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(std::regex_search(log, std::regex("warn  fault client_gone: session [0-9]+ ended "
                                                "with its connection, without close\\(\\)")))
      << log;
}

TEST_F(NodeRpc, ForwardFenceRunsQueuedClearOnlyAtBegin) {
  auto c = connect();
  auto s = std::move(*c->open(small_spec()));
  ASSERT_TRUE(s->begin_forward(1).ok());  // forward 1 in flight
  // Admit request 1; its fresh working slot needs a clear, queued for batch 2.
  std::vector<command> cmds{create(1, iota_tokens(1, 8)), cmd::match{1}, cmd::alloc_req{1},
                            take_ops({1}, 2)};
  auto r = s->step(cmds);
  ASSERT_TRUE(r.ok());
  const slot_id w = (*r)[2].as<res::alloc_req>().working;
  ASSERT_GT(w, 0);
  EXPECT_EQ((*r)[3].as<res::take_ops>().clears, 1u);
  // Garbage in the recycled slot, written while forward 1 is still running.
  std::vector<std::byte> junk(64, std::byte{0xAB});
  ASSERT_TRUE(s->write_slot(w, junk).ok());
  auto before = s->read_slot(w);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ((*before)[0], std::byte{0xAB}) << "the clear must not run before its fence";
  ASSERT_TRUE(s->end_forward(1).ok());
  ASSERT_TRUE(s->begin_forward(2).ok());
  auto after = s->read_slot(w);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, std::vector<std::byte>(64, std::byte{0})) << "cleared by begin_forward(2)";
  // Fences out of order are typed errors.
  auto again = s->begin_forward(2);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.err().message.find("increase"), std::string::npos);
  EXPECT_FALSE(s->end_forward(7).ok());
}

// The node makes a later begin wait for the end of the forward in flight; this client
// waits for each answer, so that end could never be sent: the begin is refused at once
// (before: it waited for the call's deadline, then timed out), and the session goes on.
TEST_F(NodeRpc, ALaterBeginWhileThisClientsForwardIsInFlightIsRefusedAtOnce) {
  auto c = connect();
  auto s = std::move(*c->open(small_spec()));
  ASSERT_TRUE(s->begin_forward(1).ok());
  auto early = s->begin_forward(2);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.err().code, errc::invalid_argument);
  EXPECT_NE(early.err().message.find("call end_forward(1) first"), std::string::npos)
      << early.err().message;
  EXPECT_FALSE(s->end_forward(2).ok()) << "batch 2 never began";
  ASSERT_TRUE(s->end_forward(1).ok());
  ASSERT_TRUE(s->begin_forward(2).ok()) << "refused by the client, not begun on the node";
  ASSERT_TRUE(s->end_forward(2).ok());
  ASSERT_TRUE(s->begin_forward(3).ok());
  ASSERT_TRUE(s->end_forward(3).ok());
}

// Bytes that are not a Cap'n Proto message: the node drops that connection (the client
// sees end-of-stream) and keeps serving everyone else. poll()'s 30 s bound is a deadlock
// guard only.
// A node that goes away under a connected client: the calls after it say so (kj's own
// "rpc: Peer disconnected." was all hcctl top printed when the node stopped).
TEST_F(NodeRpc, CallsAfterTheNodeStoppedSayItClosedTheConnection) {
  rpc_server other(*n, metrics);
  rpc_server_config rc;
  rc.unix_path = unique_socket_path();
  ASSERT_TRUE(other.start(rc).ok());
  auto c = client::connect("unix:" + rc.unix_path);
  ASSERT_TRUE(c.ok()) << c.err().message;
  ASSERT_TRUE((*c)->ping().ok());
  other.stop();
  auto ping = (*c)->ping();
  ASSERT_FALSE(ping.ok());
  EXPECT_EQ(ping.err().code, errc::io_error);
  EXPECT_NE(ping.err().message.find("the node closed the connection"), std::string::npos)
      << ping.err().message;
}

/// A Unix socket bound at `path` and closed without listening: what a killed node leaves.
void leave_stale_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  ::close(fd);
}

/// A second server on the socket a live one serves is refused (it used to unlink the
/// first one's socket and serve in its place); a stale socket is replaced; a path that is
/// no longer this server's socket at stop is left alone; a file that is not a socket is
/// refused.
TEST_F(NodeRpc, ALiveSocketIsNotTakenOverAndOnlyItsOwnIsRemoved) {
  rpc_server second(*n, metrics);
  rpc_server_config rc;
  rc.unix_path = socket;
  auto refused = second.start(rc);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, errc::io_error);
  EXPECT_NE(refused.err().message.find("another process is serving"), std::string::npos)
      << refused.err().message;
  EXPECT_TRUE(connect()->ping().ok()) << "the first server keeps its socket";

  const std::string stale = unique_socket_path();
  leave_stale_socket(stale);
  rpc_server third(*n, metrics);
  rc.unix_path = stale;
  auto started = third.start(rc);
  ASSERT_TRUE(started.ok()) << started.err().message;
  auto c = client::connect("unix:" + stale);
  ASSERT_TRUE(c.ok()) << c.err().message;
  EXPECT_TRUE((*c)->ping().ok());
  c = result<std::unique_ptr<client>>(error{errc::io_error, "closed"});
  // Someone else's socket at the path by the time the server stops: it stays.
  ASSERT_EQ(::unlink(stale.c_str()), 0);
  leave_stale_socket(stale);
  third.stop();
  EXPECT_TRUE(std::filesystem::exists(stale)) << "stop removed a socket that was not its own";
  ::unlink(stale.c_str());

  const std::string file = unique_socket_path();
  { std::ofstream(file) << "not a socket"; }
  rpc_server fourth(*n, metrics);
  rc.unix_path = file;
  auto not_socket = fourth.start(rc);
  ASSERT_FALSE(not_socket.ok());
  EXPECT_NE(not_socket.err().message.find("not a socket"), std::string::npos)
      << not_socket.err().message;
  EXPECT_TRUE(std::filesystem::exists(file)) << "a file that is not a socket was removed";
  ::unlink(file.c_str());

  // A path too long for a Unix socket is refused saying so, before anything is probed.
  rpc_server fifth(*n, metrics);
  rc.unix_path = "/tmp/" + std::string(120, 'a') + ".sock";
  auto too_long = fifth.start(rc);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.err().code, errc::invalid_config);
  EXPECT_NE(too_long.err().message.find("must have 1 to 107 bytes, this one has 130"),
            std::string::npos)
      << too_long.err().message;
}

TEST_F(NodeRpc, GarbageOnTheWireDropsOnlyThatConnection) {
  auto c = connect();
  auto s = std::move(*c->open(small_spec()));
  const int raw = raw_connect(socket);
  ASSERT_GE(raw, 0);
  std::vector<unsigned char> junk(4096, 0xFF);  // segment count 2^32: not a message
  ASSERT_EQ(::write(raw, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  pollfd pfd{raw, POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 30000), 1) << "the node neither answered nor closed";
  char buf[4096];
  ssize_t got = 0;
  while ((got = ::read(raw, buf, sizeof buf)) > 0) {
  }  // an abort message may come first; then end-of-stream, or a reset when the node
     // closed with part of the junk still unread
  EXPECT_TRUE(got == 0 || (got < 0 && errno == ECONNRESET))
      << "the connection is closed by the node: " << got << " " << std::strerror(errno);
  ::close(raw);
  EXPECT_TRUE(c->ping().ok());
  std::vector<command> cmds{cmd::check{}};
  auto r = s->step(cmds);
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_TRUE((*r)[0].ok());
}

// Pointed at something that is not a node — here a server answering as HTTP does, as the
// node's own --metrics port would — the client says so instead of kj's framing error.
TEST(NodeConnect, APeerThatIsNotANodeIsNamedAsSuch) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("hc-http-" + std::to_string(::getpid()) + ".sock"))
          .string();
  ::unlink(path.c_str());
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  std::thread http([listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    char buf[4096];
    (void)::read(fd, buf, sizeof buf);
    const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    (void)::write(fd, reply, sizeof reply - 1);
    // As a keep-alive server does: the connection stays until the client closes it (a
    // close here could fail the client's next write first, with a broken pipe).
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    ::close(fd);
  });
  auto c = client::connect("unix:" + path, "", std::chrono::milliseconds(10000));
  http.join();
  ::close(listener);
  ::unlink(path.c_str());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.err().code, errc::io_error);
  EXPECT_NE(c.err().message.find("did not answer as a hybridcache node"), std::string::npos)
      << c.err().message;
}

// TCP is served only behind the shared secret: the right token opens the node, a wrong
// one is refused, and a connection that never logged in can do nothing.
struct TcpNode : node_fixture {
  TcpNode() { tcp_token = "tcp-test-secret-0123456789abcdef"; }
};

TEST_F(TcpNode, OnlyTheTokenOpensTheNode) {
  const std::string addr = server->tcp_address();
  ASSERT_FALSE(addr.empty());
  auto good = client::connect(addr, tcp_token);
  ASSERT_TRUE(good.ok()) << good.err().message;
  EXPECT_TRUE((*good)->ping().ok());
  auto s = (*good)->open(small_spec());
  ASSERT_TRUE(s.ok()) << s.err().message;
  std::vector<command> cmds{cmd::check{}};
  EXPECT_TRUE((*s)->step(cmds).ok());

  auto wrong = client::connect(addr, "not-the-secret-0123456789abcdef");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.err().message.find("login refused"), std::string::npos) << wrong.err().message;
  auto none = client::connect(addr, "");
  ASSERT_FALSE(none.ok()) << "ping without login is refused";

  raw_rpc ez(addr);
  auto open = ez.node.openRequest();
  EXPECT_TRUE(wire_convert::put_spec(open.initSpec(), small_spec()).ok());
  auto r = open.send().wait(ez.ws());
  EXPECT_EQ(r.getError().getCode(), wire::ErrorCode::UNAUTHENTICATED);
  // Every other call answers with the same error value, not an exception.
  auto locked = ez.node;
  auto& ws = ez.ws();
  EXPECT_EQ(locked.pingRequest().send().wait(ws).getError().getCode(),
            wire::ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(locked.statsRequest().send().wait(ws).getError().getCode(),
            wire::ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(locked.inspectRequest().send().wait(ws).getError().getCode(),
            wire::ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(locked.drainRequest().send().wait(ws).getError().getCode(),
            wire::ErrorCode::UNAUTHENTICATED);
  auto store = locked.storeRequest();
  store.setIdentity("x");
  EXPECT_EQ(store.send().wait(ws).getError().getCode(), wire::ErrorCode::UNAUTHENTICATED);
  EXPECT_TRUE(connect()->ping().ok()) << "the Unix socket needs no token";
}

// An address that cannot be listened on is named with the system's reason, without kj's
// call text ("rpc server: ::bind(sockfd, &addr.generic, addrlen): Address already in use;
// toString() = ..."), and a TCP failure leaves no Unix socket behind.
TEST_F(TcpNode, AnAddressThatCannotBeListenedOnIsNamedWithTheReason) {
  const std::string taken = server->tcp_address();
  const std::string path = unique_socket_path();
  rpc_server second(*n, metrics);
  rpc_server_config rc;
  rc.unix_path = path;
  rc.tcp_address = taken;
  rc.token = tcp_token;
  auto refused = second.start(rc);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, errc::io_error);
  EXPECT_EQ(refused.err().message, "cannot listen on tcp " + taken + ": Address already in use");
  EXPECT_FALSE(std::filesystem::exists(path)) << "the Unix socket of a failed start stayed";

  rpc_server third(*n, metrics);
  rc.tcp_address.clear();
  rc.unix_path = "/nonexistent-hc-dir/" + std::to_string(::getpid()) + ".sock";
  auto no_dir = third.start(rc);
  ASSERT_FALSE(no_dir.ok());
  EXPECT_EQ(no_dir.err().message, "cannot listen on " + rc.unix_path +
                                      ": No such file or directory (does its directory exist?)");
}

// TCP connections that do not log in cannot hold the node's file descriptors (which its
// Unix-socket clients and L3 store need too): closed after the login timeout, and at once
// while too many wait. Before, a connection without the token stayed open for ever.
struct TcpLogin : TcpNode {
  TcpLogin() {
    server_limits.login_timeout = std::chrono::milliseconds(300);
    server_limits.max_waiting_logins = 2;
  }
};

TEST_F(TcpLogin, AConnectionThatDoesNotLogInIsClosedAndOneThatDoesStays) {
  ::testing::internal::CaptureStderr();
  const int idle = raw_tcp_connect(server->tcp_address());
  ASSERT_GE(idle, 0);
  auto c = client::connect(server->tcp_address(), tcp_token);
  ASSERT_TRUE(c.ok()) << c.err().message;
  EXPECT_TRUE(closed_by_peer(idle, std::chrono::seconds(10))) << "no login within 300 ms: closed";
  ::close(idle);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // twice the login timeout
  EXPECT_TRUE((*c)->ping().ok()) << "a connection that logged in is served on";
  EXPECT_GE(metric("hybridcache_faults_total{kind=\"rpc_login_refused\"}"), 1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("warn  fault rpc_login_refused: a TCP connection was closed without a "
                     "login: none within 300 ms"),
            std::string::npos)
      << log;
}

struct TcpLoginQueue : TcpNode {
  TcpLoginQueue() {
    server_limits.login_timeout = std::chrono::milliseconds(60'000);
    server_limits.max_waiting_logins = 2;
  }
};

TEST_F(TcpLoginQueue, ConnectionsPastTheWaitingLimitAreClosedAtOnce) {
  ::testing::internal::CaptureStderr();
  const int first = raw_tcp_connect(server->tcp_address());
  const int second = raw_tcp_connect(server->tcp_address());
  const int third = raw_tcp_connect(server->tcp_address());
  ASSERT_TRUE(first >= 0 && second >= 0 && third >= 0);
  EXPECT_TRUE(closed_by_peer(third, std::chrono::seconds(10)))
      << "two wait to log in: the third is closed at once";
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("fault rpc_login_refused: a TCP connection was closed without a login: 2 "
                     "other connections were already waiting to log in"),
            std::string::npos)
      << log;
  ::close(third);
  ::close(first);  // one fewer waiting: a client with the token gets in
  auto c = inspect_until_connected(server->tcp_address(), tcp_token);
  EXPECT_TRUE(c != nullptr && c->ping().ok());
  ::close(second);
  EXPECT_TRUE(connect()->ping().ok()) << "Unix-socket clients were never affected";
}

// The node's limits hit on purpose: typed errors naming the limit, and the node (and the
// session that hit them) keeps serving.
struct NodeLimits : node_fixture {
  NodeLimits() {
    max_sessions = 3;
    max_request_tokens = 1000;
    max_inspect_blocks = 100;
  }
};

/// Caches `n` tokens (1..n, page 1) in the session's instance as one finished request.
void cache_prompt(client_session& s, request_handle req, int first, std::size_t n) {
  auto r = s.step(std::vector<command>{create(req, iota_tokens(first, n)), cmd::match{req},
                                       cmd::alloc_req{req}, cmd::alloc_kv{req, 0, 0, true},
                                       cmd::finish{req, 0}});
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const command_result& e : *r)
    ASSERT_TRUE(e.ok()) << e.error;
}

// `inspect --blocks` lists every device page up to the node's limit (100 here; 500,000 in
// hybridcached, what one RPC message carries), over all instances. Past it the answer is a
// typed error naming the counts and the way out (the KV events) — an instance past it
// alone is refused before its pages are hashed — and the node serves on. Before the
// limit, a page-1 instance of 1 M cached tokens took 13 s of the instance's actor and 1 GB
// to build a document that the RPC layer then could not send.
TEST_F(NodeLimits, InspectBlocksPastTheLimitIsATypedErrorAndServingGoesOn) {
  auto c = connect();
  auto a = c->open(small_spec("blocks-a"));
  auto b = c->open(small_spec("blocks-b"));
  ASSERT_TRUE(a.ok() && b.ok());
  cache_prompt(**a, 1, 1, 40);
  cache_prompt(**b, 1, 1000, 50);
  auto listed = c->inspect(true);
  ASSERT_TRUE(listed.ok()) << listed.err().message;
  const auto doc = nlohmann::json::parse(*listed);
  std::size_t pages = 0;
  for (const auto& in : doc["instances"]) {
    const auto& blocks = in["tree"]["blocks"];
    ASSERT_TRUE(blocks.is_array()) << in.dump();
    pages += blocks.size();
    for (const auto& blk : blocks) {
      ASSERT_TRUE(blk["hash"].is_number_integer() && blk["checkpoint"].is_boolean() &&
                  blk["namespace"] == "" &&
                  (blk["parent"].is_null() || blk["parent"].is_number_integer()))
          << blk.dump();
    }
  }
  EXPECT_EQ(pages, 90u) << "40 + 50 cached tokens at page 1";

  cache_prompt(**b, 2, 5000, 30);  // 120 pages together: more than the 100 one answer lists
  auto together = c->inspect(true);
  ASSERT_FALSE(together.ok());
  EXPECT_EQ(together.err().code, errc::out_of_memory);
  EXPECT_NE(together.err().message.find("120 device KV pages"), std::string::npos)
      << together.err().message;
  EXPECT_NE(together.err().message.find("KV events"), std::string::npos) << together.err().message;

  cache_prompt(**b, 3, 9000, 30);  // 110 in instance b alone
  auto alone = c->inspect(true);
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.err().code, errc::out_of_memory);
  EXPECT_NE(alone.err().message.find("holds 110 device KV pages"), std::string::npos)
      << alone.err().message;

  EXPECT_TRUE(c->inspect(false).ok()) << "the summary has no pages to list";
  auto r = (*a)->step(std::vector<command>{lookup(iota_tokens(1, 40))});
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ((*r)[0].as<res::lookup>().prefix_len, 40u) << "the instances serve on";
}

// Live requests' tokens are held over every session of the node: one session's requests
// can fill the budget, the next create anywhere is refused naming the flag, and a session
// that closes (or drops) with requests alive gives theirs back. Before the budget, a
// worker that never finished its requests grew the node by 4 MB per 1M-token create until
// the kernel killed it (896 creates: 4 GB).
TEST_F(NodeLimits, LiveRequestTokensAreBoundedOverAllSessionsAndGivenBackAtClose) {
  auto c = connect();
  auto a = c->open(small_spec("budget-a"));
  auto b = c->open(small_spec("budget-b"));
  ASSERT_TRUE(a.ok() && b.ok());
  auto r = (*a)->step(
      std::vector<command>{create(1, iota_tokens(1, 400)), create(2, iota_tokens(1, 400))});
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const auto& one : *r)
    ASSERT_TRUE(one.ok()) << one.error;
  r = (*b)->step(
      std::vector<command>{create(1, iota_tokens(1, 300)), create(2, iota_tokens(1, 8))});
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_EQ((*r)[0].code, errc::out_of_memory);
  EXPECT_NE((*r)[0].error.find("--max-request-tokens"), std::string::npos) << (*r)[0].error;
  EXPECT_TRUE((*r)[1].ok()) << "a create that fits still runs: " << (*r)[1].error;
  ASSERT_TRUE((*a)->close().ok());
  r = (*b)->step(std::vector<command>{create(3, iota_tokens(1, 900))});
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_TRUE((*r)[0].ok()) << "the closed session gave its two requests back: " << (*r)[0].error;
}

struct NodeMemory : node_fixture {
  NodeMemory() { host_memory_limit = 256 << 10; }
};

// An instance's pools are committed at open: its L1 pools in /dev/shm (memory, on the CPU
// device) and its L2 pools together must fit in what the host has to give, or the open is
// a typed error and the node serves on. Before, only the L2 pools were checked: instances
// opened until /dev/shm held the machine's memory, and the OOM killer took the node.
TEST_F(NodeMemory, PoolsPastTheHostsMemoryAreRefusedAtOpenAndServingGoesOn) {
  auto c = connect();
  instance_spec big = small_spec("memory-big");
  big.kv_tokens = 64 << 10;  // 64 K tokens x 8 bytes: 512 KiB of KV pool
  auto over = c->open(big);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.err().code, errc::out_of_memory);
  EXPECT_NE(over.err().message.find("shared memory"), std::string::npos) << over.err().message;

  instance_spec both = small_spec("memory-both");  // L1 ~33 KiB + L2 240 KiB: each fits
  both.kv_tokens = 4 << 10;
  both.hicache_bytes = 240 << 10;
  auto together = c->open(both);
  ASSERT_FALSE(together.ok());
  EXPECT_NE(together.err().message.find("host memory"), std::string::npos)
      << together.err().message;
  both.hicache_bytes = 160 << 10;
  auto fits = c->open(both);
  EXPECT_TRUE(fits.ok()) << fits.err().message;

  auto small = c->open(small_spec("memory-small"));
  ASSERT_TRUE(small.ok()) << small.err().message;
  auto r = (*small)->step(std::vector<command>{cmd::check{}});
  ASSERT_TRUE(r.ok()) << r.err().message;
  EXPECT_TRUE((*r)[0].ok()) << (*r)[0].error;
}

TEST_F(NodeLimits, TooManySessionsAndOversizeStepsAreTypedErrorsAndServingGoesOn) {
  auto c = connect();
  std::vector<std::unique_ptr<client_session>> open;
  for (const char* model : {"limit-a", "limit-a", "limit-b"}) {
    auto s = c->open(small_spec(model));
    ASSERT_TRUE(s.ok()) << s.err().message;
    open.push_back(std::move(*s));
  }
  auto over = c->open(small_spec("limit-c"));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.err().code, errc::out_of_memory);
  EXPECT_NE(over.err().message.find("--max-sessions"), std::string::npos) << over.err().message;
  ASSERT_TRUE(open.back()->close().ok());
  open.pop_back();
  auto again = c->open(small_spec("limit-c"));  // a closed session frees its place
  ASSERT_TRUE(again.ok()) << again.err().message;

  client_session& s = *open.front();
  const std::vector<command> too_many(4097, cmd::check{});  // the fixture's limit is 4096
  auto r = s.step(too_many);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_argument);
  EXPECT_NE(r.err().message.find("4096"), std::string::npos) << r.err().message;
  const std::vector<command> too_long{create(1, iota_tokens(1, (1 << 16) + 1))};
  r = s.step(too_long);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_argument) << r.err().message;
  const std::vector<command> fine{create(1, iota_tokens(1, 8)), cmd::check{true}};
  r = s.step(fine);
  ASSERT_TRUE(r.ok()) << r.err().message;
  for (const auto& one : *r)
    EXPECT_TRUE(one.ok()) << one.error;
}

// Idle instances: a closed session's instance keeps its tree for the next session with the
// same spec; beyond max_idle_instances the longest-idle instance is destroyed and its
// shared memory unlinked.
struct IdleInstances : node_fixture {
  IdleInstances() { max_idle_instances = 1; }
};

TEST_F(IdleInstances, AReopenedInstanceResumesItsCacheAndTheLongestIdleIsDropped) {
  auto c = connect();
  const std::vector<command> steps{create(1, iota_tokens(100, 16)), cmd::alloc_req{1},
                                   cmd::alloc_kv{1, 0, 16}, cmd::finish{1}};
  const command look = lookup(iota_tokens(100, 16));
  std::string shm_a;
  {
    auto a = std::move(*c->open(small_spec("model-a")));
    shm_a = a->pools().ssm_shm;
    auto r = a->step(steps);
    ASSERT_TRUE(r.ok());
    for (const auto& one : *r)
      ASSERT_TRUE(one.ok()) << one.error;
    ASSERT_TRUE(a->close().ok());  // returns once the instance is idle
  }
  auto doc = inspect_now(*c);
  EXPECT_EQ(doc["sessions"], 0);
  ASSERT_EQ(doc["instances"].size(), 1u) << "one idle instance is kept";
  {
    auto a = std::move(*c->open(small_spec("model-a")));
    EXPECT_EQ(a->pools().ssm_shm, shm_a) << "the same instance";
    auto r = a->step(std::vector<command>{look});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)[0].as<res::lookup>().prefix_len, 16u) << "the reopened instance kept its tree";
  }  // closed by destruction: the node learns it from the connection, in order
  // Once the registry shows the session gone its close is on its way to the instance;
  // drain returns after the instance (and so the scheduler) has handled it.
  ASSERT_EQ(inspect_until(*c, [](const auto& d) { return d["sessions"] == 0; })["sessions"], 0);
  ASSERT_TRUE(c->drain().ok());
  {
    auto b = std::move(*c->open(small_spec("model-b")));
    ASSERT_TRUE(b->close().ok());
  }
  // Two idle instances, one allowed: model-a's (idle the longest) went before b's close
  // returned, its shared memory unlinked.
  doc = inspect_now(*c);
  ASSERT_EQ(doc["instances"].size(), 1u);
  EXPECT_NE(doc["instances"][0]["fingerprint"].template get<std::string>().find("model-b"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + shm_a))
      << "the dropped instance's shared memory is unlinked";
  auto a = std::move(*c->open(small_spec("model-a")));
  auto r = a->step(std::vector<command>{look});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].as<res::lookup>().prefix_len, 0u) << "a fresh instance";
}

// A client that stops reading (thousands of replies pile up), holds a begin_forward that
// can never be answered, and leaves half a message on another connection must not delay
// anyone else: a second worker on the same cache instance runs its whole step / fence /
// byte-access cycle while the first one is stuck. (The future's 60 s bound is a deadlock
// guard, not a timing assertion: a stall would otherwise hang the test.)
TEST_F(NodeRpc, SlowOrDeadClientsDoNotStallOthers) {
  std::promise<void> stuck, release;
  std::thread slow([&] {
    raw_rpc ez(address());
    auto& ws = ez.ws();
    auto open = ez.node.openRequest();
    EXPECT_TRUE(wire_convert::put_spec(open.initSpec(), small_spec()).ok());
    auto session = open.send().wait(ws).getSession();
    auto b1 = session.beginForwardRequest();
    b1.setBatch(1);
    b1.send().wait(ws);
    auto b2 = session.beginForwardRequest();  // waits for end_forward(1), which never comes
    b2.setBatch(2);
    auto pending_fence = b2.send();
    kj::Vector<kj::Promise<void>> flood;
    auto node = ez.node;
    for (int i = 0; i < 5000; ++i)
      flood.add(node.pingRequest().send().ignoreResult());
    ws.poll();  // write the requests out, then stop reading
    stuck.set_value();
    release.get_future().wait();
  });
  stuck.get_future().wait();
  // Half a message on a raw connection, never completed.
  const int raw = raw_connect(socket);
  ASSERT_GE(raw, 0);
  const std::uint32_t header[2] = {0, 1000};  // one segment of 1000 words, none sent
  ASSERT_EQ(::write(raw, header, sizeof header), static_cast<ssize_t>(sizeof header));

  auto other = std::async(std::launch::async, [&] {
    auto c = connect();
    if (!c) return std::string("connect failed");
    auto s = c->open(small_spec());  // same spec: the same cache instance as the slow one
    if (!s.ok()) return s.err().message;
    std::vector<command> cmds{create(1, iota_tokens(1, 8)), cmd::match{1}, cmd::alloc_req{1},
                              cmd::alloc_kv{1, 0, 8}, cmd::finish{1}};
    for (std::uint64_t batch = 1; batch <= 20; ++batch) {
      auto r = (*s)->step(cmds);
      if (!r.ok()) return r.err().message;
      for (const auto& one : *r)
        if (!one.ok()) return one.error;
      if (!(*s)->begin_forward(batch).ok() || !(*s)->end_forward(batch).ok())
        return std::string("fence failed");
      if (!(*s)->read_slot(1).ok() || !c->ping().ok()) return std::string("read/ping failed");
    }
    return std::string();
  });
  const bool finished = other.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  release.set_value();
  slow.join();
  ::close(raw);
  ASSERT_TRUE(finished) << "the second worker stalled behind the slow one";
  EXPECT_EQ(other.get(), "");
}

// A client that sends calls and never reads its replies (stuck, buggy or hostile) used to
// make the node queue every reply: 200,000 `stats` calls held 4.4 GB. Now the server stops
// reading such a connection at its bounds (here 64 calls unanswered, 256 KiB of replies
// queued): the client's writes stall in its socket, other clients are served, and once
// the client reads, every call it sent is answered — none dropped.
struct Backpressure : node_fixture {
  Backpressure() {
    server_limits.max_calls_in_flight = 64;
    server_limits.max_reply_backlog_bytes = 256 << 10;
  }
};

/// The bytes of `m` as one framed Cap'n Proto message.
void append_message(std::vector<unsigned char>& out, capnp::MessageBuilder& m) {
  const auto words = capnp::messageToFlatArray(m);
  const auto bytes = words.asBytes();
  out.insert(out.end(), bytes.begin(), bytes.end());
}

TEST_F(Backpressure, AClientThatDoesNotReadIsPausedAndEveryCallIsAnsweredWhenItReads) {
  constexpr std::uint32_t pings = 100'000;
  std::vector<unsigned char> out;
  {
    capnp::MallocMessageBuilder m;
    m.initRoot<capnp::rpc::Message>().initBootstrap().setQuestionId(0);
    append_message(out, m);
  }
  for (std::uint32_t q = 1; q <= pings; ++q) {
    capnp::MallocMessageBuilder m;
    auto call = m.initRoot<capnp::rpc::Message>().initCall();
    call.setQuestionId(q);
    call.initTarget().initPromisedAnswer().setQuestionId(0);  // the bootstrap's answer
    call.setInterfaceId(capnp::typeId<wire::CacheNode>());
    call.setMethodId(0);  // ping
    call.initParams().initContent().initAs<wire::CacheNode::PingParams>();
    append_message(out, m);
  }
  const int raw = raw_connect(socket);
  ASSERT_GE(raw, 0);
  ASSERT_EQ(::fcntl(raw, F_SETFL, O_NONBLOCK), 0);
  ::testing::internal::CaptureStderr();
  // Write without reading until the node has not taken a byte for a second.
  std::size_t written = 0;
  bool stalled = false;
  while (written < out.size()) {
    const ssize_t wrote = ::write(raw, out.data() + written, out.size() - written);
    if (wrote > 0) {
      written += static_cast<std::size_t>(wrote);
      continue;
    }
    ASSERT_EQ(errno, EAGAIN) << std::strerror(errno);
    pollfd p{raw, POLLOUT, 0};
    if (::poll(&p, 1, 1000) == 0) {
      stalled = true;
      break;
    }
  }
  ASSERT_TRUE(stalled) << "the node read all " << out.size() << " bytes of calls while "
                       << "their replies went unread";
  EXPECT_LT(written, out.size() / 4);
  EXPECT_GE(metric("hybridcache_faults_total{kind=\"rpc_backpressure\"}"), 1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(std::regex_search(
      log, std::regex("warn  fault rpc_backpressure: stopped reading a connection with "
                      "([0-9]+ calls unanswered|[0-9]+ bytes of replies its client has not "
                      "read) \\(a client that floods calls")))
      << log;
  auto other = connect();
  EXPECT_TRUE(other->ping().ok()) << "another client is served meanwhile";

  // Now read: the rest of the calls go out on a thread while this one counts the Returns.
  ASSERT_EQ(::fcntl(raw, F_SETFL, 0), 0);
  const timeval hang_guard{60, 0};
  ASSERT_EQ(::setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &hang_guard, sizeof hang_guard), 0);
  std::thread rest([&] {
    while (written < out.size()) {
      const ssize_t wrote = ::write(raw, out.data() + written, out.size() - written);
      if (wrote <= 0) return;
      written += static_cast<std::size_t>(wrote);
    }
  });
  std::uint32_t returns = 0, errors = 0;
  try {
    while (returns < pings + 1) {
      capnp::StreamFdMessageReader r(raw);
      auto msg = r.getRoot<capnp::rpc::Message>();
      if (!msg.isReturn()) continue;
      ++returns;
      if (!msg.getReturn().isResults()) ++errors;
    }
  } catch (const kj::Exception& e) {
    ADD_FAILURE() << "reading the replies: " << e.getDescription().cStr();
  }
  rest.join();
  ::close(raw);
  EXPECT_EQ(written, out.size());
  EXPECT_EQ(returns, pings + 1) << "the bootstrap and every ping answered";
  EXPECT_EQ(errors, 0u);
  EXPECT_TRUE(other->ping().ok());
}

}  // namespace
}  // namespace hc::test
