// The wire conversion (schema/convert.hpp) as a module: every field of every command kind
// and result body, a spec and the pool info survives the round trip through a Cap'n Proto message;
// errors keep their code; a spec with an enum value the core does not know is refused
// with the field's name.
#include <capnp/any.h>
#include <capnp/message.h>
#include <gtest/gtest.h>

#include <utility>
#include <variant>
#include <vector>

#include "schema/convert.hpp"

namespace hc::test {
namespace {

namespace wc = wire_convert;

/// One command of every kind, every field set to a value other than its default.
std::vector<command> every_command() {
  return {cmd::create{1, 0, {1, 2, 3}, {}},
          cmd::append{2, {4, 5}, {}},
          cmd::match{3},
          cmd::lock{4},
          cmd::unlock{5},
          cmd::alloc_req{6},
          cmd::alloc_kv{7, 8, 9},
          cmd::track{10, 11, true},
          cmd::prepare_extend{12, 13, 14},
          cmd::prepare_decode{15},
          cmd::process_decode{16, true, 17},
          cmd::cache_unfinished{18, 19},
          cmd::finish{20, 21},
          cmd::abort{22},
          cmd::not_admitted{23},
          cmd::evict{24, 25},
          cmd::check{true},
          cmd::take_ops{{26, 27}, 28},
          cmd::lookup{0, {29, 30}, true, std::nullopt},
          cmd::prefetch{31, true},
          cmd::pin{0, {32, 33}, cmd::token_range{34, 35}, 36},
          cmd::unpin{37},
          cmd::demote{0, {38, 39}, cmd::token_range{40, 41}}};
}

/// One body of every kind, every field set to a value other than its default.
std::vector<result_body> every_body() {
  return {std::monostate{},
          res::match{1, 2, {3, 4}, 5, 6, 7, 8},
          res::lookup{9, 10, {11}, 12, 13},
          res::alloc_req{14, 15, std::array<slot_id, 2>{16, 17}},
          res::alloc_kv{{18, 19}},
          res::track{20},
          res::prepare_extend{true, 21, 22},
          res::prepare_decode{true, 23},
          res::cache_unfinished{true, 24, {25, 26}, 27},
          res::finish{true, 28, true},
          res::evict{29, 30, 31, 32},
          res::check{33, 34, false, "a detail"},
          res::take_ops{35, 36, 37},
          res::prefetch{true, "completed", 38},
          res::pin{39, 40, 41, 42},
          res::demote{43, 44, 45, 46, 47, 48}};
}

TEST(WireConvert, EveryCommandKindKeepsEveryField) {
  const std::vector<command> all = every_command();
  ASSERT_EQ(all.size(), cmd_kind_count) << "one of each kind";
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(kind_of(all[i])), i);
    capnp::MallocMessageBuilder msg;
    auto b = msg.initRoot<wire::Command>();
    wc::put_command(b, all[i]);
    auto back = wc::get_command(b.asReader());
    ASSERT_TRUE(back.ok()) << back.err().message;
    EXPECT_EQ(*back, all[i]) << to_string(kind_of(all[i]));
  }
}

TEST(WireConvert, TokenRangesOfTheArenaKeepTheirFields) {
  for (const command& c :
       std::vector<command>{cmd::create{32, 0, {}, cmd::token_range{33, 34}},
                            cmd::append{35, {}, cmd::token_range{36, 37}},
                            cmd::create{38, 0, {}, cmd::token_range{0, 0}},
                            cmd::lookup{0, {}, true, cmd::token_range{39, 40}}}) {
    capnp::MallocMessageBuilder msg;
    auto b = msg.initRoot<wire::Command>();
    wc::put_command(b, c);
    auto back = wc::get_command(b.asReader());
    ASSERT_TRUE(back.ok()) << back.err().message;
    EXPECT_EQ(*back, c) << to_string(kind_of(c));
  }
}

TEST(WireConvert, TheNamespaceIsNotOnTheWire) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::Command>();
  wc::put_command(b, cmd::create{1, 77, {1}, {}});
  auto back = wc::get_command(b.asReader());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::get<cmd::create>(*back).ns, 0u) << "the node sets it from the session";
}

TEST(WireConvert, AnUnknownCommandKindIsATypedErrorNamingIt) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::Command>();
  b.initLookup();
  auto data = capnp::toAny(b).getDataSection();  // the union's tag is its only field
  data[0] = 99;
  data[1] = 0;
  auto back = wc::get_command(b.asReader());
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.err().code, errc::invalid_argument);
  EXPECT_NE(back.err().message.find("kind 99 is unknown"), std::string::npos) << back.err().message;
}

TEST(WireConvert, EveryResultBodyKeepsEveryField) {
  for (const result_body& body : every_body()) {
    command_result r;
    r.code = errc::ok;
    r.pools = {22, 23, 24, 25, 26, 27, 28};
    r.elapsed_ns = 29;
    r.body = body;
    capnp::MallocMessageBuilder msg;
    auto b = msg.initRoot<wire::CommandResult>();
    wc::put_result(b, r);
    EXPECT_EQ(wc::get_result(b.asReader()), r) << "body " << body.index();
  }
  command_result failed;
  failed.code = errc::out_of_memory;
  failed.error = "pool full";
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::CommandResult>();
  wc::put_result(b, failed);
  EXPECT_EQ(wc::get_result(b.asReader()), failed) << "an error keeps its code and message";
}

/// Words `cmds` take in a step request built with their size hint, and its segments.
std::pair<std::size_t, std::size_t> request_words(const std::vector<command>& cmds) {
  capnp::MallocMessageBuilder msg(static_cast<unsigned>(wc::step_request_size(cmds).wordCount));
  auto l =
      msg.initRoot<wire::Session::StepParams>().initCommands(static_cast<unsigned>(cmds.size()));
  for (unsigned i = 0; i < l.size(); ++i)
    wc::put_command(l[i], cmds[i]);
  return {msg.sizeInWords(), msg.getSegmentsForOutput().size()};
}
std::pair<std::size_t, std::size_t> results_words(const std::vector<command_result>& results) {
  capnp::MallocMessageBuilder msg(static_cast<unsigned>(wc::step_results_size(results).wordCount));
  auto root = msg.initRoot<wire::Session::StepResults>();
  wc::put_error(root.initError(), {});
  auto l = root.initResults(static_cast<unsigned>(results.size()));
  for (unsigned i = 0; i < l.size(); ++i)
    wc::put_result(l[i], results[i]);
  return {msg.sizeInWords(), msg.getSegmentsForOutput().size()};
}

TEST(WireConvert, AStepsSizeHintHoldsItsMessageInOneSegment) {
  // Every kind, with lists of several lengths (odd ones: a list's last word is partial),
  // alone and together: the hint is an upper bound, so the message is one segment.
  std::vector<command> all;
  for (std::size_t n : {0u, 1u, 7u, 513u, 5000u}) {
    std::vector<command> cmds = every_command();
    std::vector<token_id> tokens(n, 9);
    std::get<cmd::create>(cmds[0]).tokens = tokens;
    std::get<cmd::append>(cmds[1]).tokens = tokens;
    std::get<cmd::take_ops>(cmds[17]).reqs.assign(n, 3);
    std::get<cmd::lookup>(cmds[18]).tokens = tokens;
    for (const command& c : cmds) {
      const auto [words, segments] = request_words({c});
      EXPECT_EQ(segments, 1u) << to_string(kind_of(c)) << ", lists of " << n;
      EXPECT_LE(words, wc::step_request_size(std::vector<command>{c}).wordCount);
    }
    all.insert(all.end(), cmds.begin(), cmds.end());
  }
  EXPECT_EQ(request_words(all).second, 1u);

  std::vector<command_result> results;
  for (std::size_t n : {0u, 1u, 7u, 513u, 5000u}) {
    for (result_body body : every_body()) {
      std::visit(
          [&](auto& x) {
            if constexpr (requires { x.indices.size(); }) x.indices.assign(n, 4);
            if constexpr (requires { x.prefix.size(); }) x.prefix.assign(n, 5);
            if constexpr (requires { x.sanity_detail.size(); }) x.sanity_detail.assign(n, 'd');
            if constexpr (requires { x.outcome.size(); }) x.outcome.assign(n, 'o');
          },
          body);
      command_result r;
      r.body = body;
      r.pools = {22, 23, 24, 25, 26, 27, 28};
      results.push_back(r);
      const auto [words, segments] = results_words({r});
      EXPECT_EQ(segments, 1u) << "body " << body.index() << ", lists of " << n;
      EXPECT_LE(words, wc::step_results_size(std::vector<command_result>{r}).wordCount);
    }
    command_result failed;
    failed.code = errc::out_of_memory;
    failed.error.assign(n, 'e');
    results.push_back(failed);
    EXPECT_EQ(results_words({failed}).second, 1u) << "an error of " << n << " bytes";
  }
  EXPECT_EQ(results_words(results).second, 1u);
}

TEST(WireConvert, AbsentOptionalsStayAbsent) {
  for (const result_body& body :
       {result_body(res::match{}), result_body(res::lookup{}), result_body(res::alloc_req{})}) {
    command_result r;
    r.body = body;
    capnp::MallocMessageBuilder msg;
    auto b = msg.initRoot<wire::CommandResult>();
    wc::put_result(b, r);
    EXPECT_EQ(wc::get_result(b.asReader()), r) << "body " << body.index();
  }
}

TEST(WireConvert, ASpecAndThePoolInfoKeepEveryField) {
  instance_spec s;
  s.model_id = "m";
  s.tp_rank = 1;
  s.tp_size = 2;
  s.page_size = 16;
  s.kv_tokens = 4096;
  s.kv_bytes_per_token = 8;
  s.ssm_slots = 32;
  s.ssm_slot_bytes = 64;
  s.chunk_size = 128;
  s.strat = strategy::extra_buffer_lazy;
  s.track_interval = 100;
  s.overlap = false;
  s.request_rows = 9;
  s.max_context_len = 2048;
  s.shared_rows = true;
  s.shared_tokens = 1u << 20;
  s.slots_per_request = 3;
  s.ns = "lora-a";
  s.hicache_ratio = 2.5;
  s.hicache_bytes = 1 << 20;
  s.hicache_ssm_bytes = 1 << 18;
  s.hicache_write_policy = write_policy::write_back;
  s.prefetch_policy = prefetch_termination::timeout;
  s.prefetch_threshold = 77;
  s.hicache_storage = false;
  s.device = device_kind::cuda;
  s.device_ordinal = 3;
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::InstanceSpec>();
  EXPECT_TRUE(wc::put_spec(b, s).ok());
  auto back = wc::get_spec(b.asReader());
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(*back, s);

  pool_info p;
  p.kv_shm = "/kv";
  p.kv_bytes = 1;
  p.ssm_shm = "/ssm";
  p.ssm_bytes = 2;
  p.kv_bytes_per_token = 3;
  p.ssm_slot_bytes = 4;
  p.instance_id = 5;
  p.device = device_kind::cuda;
  p.device_ordinal = 1;
  p.kv_ipc_handle = std::string(64, '\x01');
  p.ssm_ipc_handle = std::string("\0\xff\x7f", 3);  // raw bytes, NULs included
  p.ready_event_ipc_handle = std::string(64, '\x02');
  p.rows_shm = "/rows";
  p.rows_bytes = 6;
  p.row_width = 7;
  p.tokens_shm = "/tokens";
  p.tokens_bytes = 8;
  p.done_event_ipc_handle = std::string(64, '\x03');
  capnp::MallocMessageBuilder msg2;
  auto pb = msg2.initRoot<wire::PoolInfo>();
  wc::put_pool_info(pb, p);
  EXPECT_EQ(wc::get_pool_info(pb.asReader()), p);
}

TEST(Convert, SpecSizesTheWireCannotCarryAreRefusedNotTruncated) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::InstanceSpec>();
  instance_spec s;
  s.ssm_slots = 0xffffffffu;  // the largest the UInt32 field holds
  ASSERT_TRUE(wc::put_spec(b, s).ok());
  EXPECT_EQ(b.getSsmSlots(), 0xffffffffu);
  s.ssm_slots = std::size_t{1} << 32;  // truncated, this was 0 ("must be > 0")
  const status st = wc::put_spec(b, s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.err().code, errc::invalid_config);
  EXPECT_NE(st.err().message.find("ssmSlots"), std::string::npos) << st.err().message;
  s = instance_spec{};
  s.request_rows = std::size_t{1} << 40;
  EXPECT_NE(wc::put_spec(b, s).err().message.find("requestRows"), std::string::npos);
  s = instance_spec{};
  s.kv_tokens = std::size_t{1} << 40;  // a UInt64 field: carried as it is, judged by the node
  EXPECT_TRUE(wc::put_spec(b, s).ok());
  EXPECT_EQ(b.getKvTokens(), std::uint64_t{1} << 40);
}

TEST(WireConvert, UnknownEnumValuesInASpecAreRefusedByName) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::InstanceSpec>();
  EXPECT_TRUE(wc::put_spec(b, instance_spec{}).ok());
  b.setStrategy(static_cast<wire::Strategy>(99));
  auto r = wc::get_spec(b.asReader());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_config);
  EXPECT_NE(r.err().message.find("strategy"), std::string::npos) << r.err().message;
  EXPECT_TRUE(wc::put_spec(b, instance_spec{}).ok());
  b.setPrefetchPolicy(static_cast<wire::PrefetchPolicy>(42));
  r = wc::get_spec(b.asReader());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("prefetchPolicy"), std::string::npos) << r.err().message;
}

TEST(WireConvert, ErrorsKeepTheirCodeAndMessage) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::Error>();
  for (errc c : {errc::ok, errc::invalid_argument, errc::invalid_config, errc::out_of_memory,
                 errc::not_found, errc::double_free, errc::invariant_violated, errc::parse_error,
                 errc::io_error, errc::timeout, errc::interrupted}) {
    const error e{c, c == errc::ok ? "" : "what went wrong"};
    wc::put_error(b, e);
    const error back = wc::get_error(b.asReader());
    EXPECT_EQ(back.code, c);
    EXPECT_EQ(back.message, e.message);
    EXPECT_EQ(wc::code_from_wire(wc::code_to_wire(c)), c);
  }
}

}  // namespace
}  // namespace hc::test
